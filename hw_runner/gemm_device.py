"""GEMM devices for ``mmaprobe identify --gemm`` on an NVIDIA GPU; each runs a probe GEMM and
returns D's raw bits.

* ``cuda-gemm[:N]`` (:class:`CudaGemmDevice`): cuBLAS ``cublasGemmEx`` (fp16/bf16 A and B, fp32 C
  and D, fp32 compute, the default algorithm) through CuPy, written against CuPy's documented
  ``cupy.cuda.cublas.gemmEx``.
* ``torch-gemm[:N]`` (:class:`TorchGemmDevice`): torch's own GEMM, the aten path ``torch.matmul``
  takes on CUDA (``mm``/``addmm`` -> ``at::cuda::blas::gemm`` -> cuBLAS): each probe runs as
  ``torch.addmm(C, A, B, beta=beta, alpha=alpha, out_dtype=torch.float32)`` with fp32 C (aten's
  ``addmm.dtype`` overload: fp16/bf16 inputs, fp32 C and D, the probe's alpha and beta), and
  :meth:`TorchGemmDevice.matmul` runs a probe with alpha = 1 and beta = 0 as plain
  ``torch.matmul(A, B)``, D in the input format (the call users make).

Neither CuPy nor torch is a dependency of mmaprobe; both are imported when a device is opened."""

from __future__ import annotations

import numpy as np

from smtmodel.formats import bits_to_torch, torch_to_bits

from .errors import HarnessError

_DT = ("fp16", "bf16")

CUDA_ENUMS = {"CUDA_R_32F": 0, "CUDA_R_16F": 2, "CUDA_R_16BF": 14, "CUBLAS_OP_N": 0, "CUBLAS_COMPUTE_32F": 68,
              "CUBLAS_GEMM_DEFAULT": -1}
"""cudaDataType_t (library_types.h), cublasOperation_t, cublasComputeType_t and cublasGemmAlgo_t
(cublas_api.h) values, for a CuPy that names them nowhere."""

class CudaGemmDevice:
    """``cuda-gemm[:N]`` (N: the GPU index)."""

    def __init__(self, text: str, in_fmt: str | None = None, out_fmt: str | None = None, **_):
        try:
            import cupy
            from cupy.cuda import cublas
        except ImportError:
            raise HarnessError("device cuda-gemm needs CuPy and an NVIDIA GPU (pip install cupy-cuda12x); "
                               "CuPy is not installed here") from None
        if (in_fmt or "fp16") not in _DT or (out_fmt or "fp32") != "fp32":
            raise HarnessError(f"device cuda-gemm runs fp16/bf16 -> fp32 GEMMs, not {in_fmt} -> {out_fmt}")
        _, _, idx = text.partition(":")
        try:
            self.dev = cupy.cuda.Device(int(idx or 0))
            self.dev.use()
            cc = self.dev.compute_capability
        except Exception as exc:                     # noqa: BLE001 - no GPU, bad index, driver
            raise HarnessError(f"device {text}: {type(exc).__name__}: {exc}") from None
        self.cupy, self.cublas = cupy, cublas
        self.in_fmt, self.c_fmt, self.out_fmt = in_fmt or "fp16", "fp32", "fp32"
        self.name = f"{text} (sm_{cc}, cuBLAS gemmEx)"

    def const(self, name: str) -> int:
        """A cuBLAS / CUDA enum value by name: CuPy's cublas module, else its runtime module (CuPy 14
        keeps the ``CUDA_R_*`` data types there only), else the value ``library_types.h`` and
        ``cublas_api.h`` give it."""
        for mod in (self.cublas, self.cupy.cuda.runtime):
            if hasattr(mod, name):
                return int(getattr(mod, name))
        return CUDA_ENUMS[name]

    def launch(self, p) -> np.ndarray:
        cp, cb = self.cupy, self.cublas
        M, N, K = p.shape
        # row-major (C-contiguous) buffers: cuBLAS reads raw memory, and a column of B gathered by
        # fancy indexing is Fortran-ordered (a transposed B gave the H100 survey's first seed-003 D)
        host = [np.ascontiguousarray(x, dtype=dt) for x, dt in ((p.a, np.uint16), (p.b, np.uint16), (p.c, np.uint32))]
        a, b = (cp.asarray(x if self.in_fmt == "bf16" else x.view(np.float16)) for x in host[:2])
        c = cp.asarray(host[2].view(np.float32)).copy()
        # row-major D = alpha A B + beta C is column-major D^T = alpha B^T A^T + beta C^T
        cuda_t = self.const("CUDA_R_16F" if self.in_fmt == "fp16" else "CUDA_R_16BF")
        alpha = np.array(p.alpha, np.float32)
        beta = np.array(p.beta, np.float32)
        handle = cp.cuda.device.get_cublas_handle()
        op_n = self.const("CUBLAS_OP_N")
        cb.gemmEx(handle, op_n, op_n, N, M, K, alpha.ctypes.data,
                  b.data.ptr, cuda_t, N, a.data.ptr, cuda_t, K, beta.ctypes.data,
                  c.data.ptr, self.const("CUDA_R_32F"), N, self.const("CUBLAS_COMPUTE_32F"),
                  self.const("CUBLAS_GEMM_DEFAULT"))
        cp.cuda.Device().synchronize()
        return cp.asnumpy(c).view(np.uint32).astype(np.uint64)


class TorchGemmDevice:
    """``torch-gemm[:N]`` (N: the GPU index; module docstring). ``torch`` is imported on opening
    (a test passes a stand-in module through ``sys.modules``)."""

    def __init__(self, text: str, in_fmt: str | None = None, out_fmt: str | None = None, **_):
        try:
            import torch
        except ImportError:
            raise HarnessError("device torch-gemm needs torch with CUDA (pip install torch); torch is not "
                               "installed here") from None
        if (in_fmt or "bf16") not in _DT or (out_fmt or "fp32") != "fp32":
            raise HarnessError(f"device torch-gemm runs fp16/bf16 -> fp32 GEMMs, not {in_fmt} -> {out_fmt}")
        _, _, idx = text.partition(":")
        try:
            index = int(idx or 0)
            if not torch.cuda.is_available() or index >= torch.cuda.device_count():
                raise HarnessError(f"device {text}: torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 0} "
                                   "CUDA GPU(s)")
            cc = "".join(map(str, torch.cuda.get_device_capability(index)))
        except HarnessError:
            raise
        except Exception as exc:                     # noqa: BLE001 - bad index, driver
            raise HarnessError(f"device {text}: {type(exc).__name__}: {exc}") from None
        self.torch, self.dev = torch, torch.device(f"cuda:{index}")
        self.in_fmt, self.c_fmt, self.out_fmt = in_fmt or "bf16", "fp32", "fp32"
        self.name = f"{text} (sm_{cc}, torch {torch.__version__} addmm out_dtype=float32)"

    def launch(self, p) -> np.ndarray:
        """D = alpha A B + beta C through ``torch.addmm(..., out_dtype=torch.float32)``."""
        torch = self.torch
        A, B = (bits_to_torch(x, self.in_fmt, self.dev) for x in (p.a, p.b))
        C = bits_to_torch(p.c, "fp32", self.dev)
        try:
            D = torch.addmm(C, A, B, beta=float(p.beta), alpha=float(p.alpha), out_dtype=torch.float32)
        except TypeError as exc:
            raise HarnessError(f"{self.name}: this torch has no addmm(..., out_dtype=) (torch 2.8 or later): "
                               f"{' '.join(str(exc).split())[:200]}") from None
        torch.cuda.synchronize()
        return torch_to_bits(D).astype(np.uint64)

    def matmul(self, p) -> np.ndarray:
        """D = A B through plain ``torch.matmul``, D in the input format (a probe with alpha = 1 and
        beta = 0 only: the call computes no other)."""
        if (float(p.alpha), float(p.beta)) != (1.0, 0.0):
            raise HarnessError(f"torch.matmul computes alpha = 1, beta = 0 only; probe {getattr(p, 'name', '')} "
                               f"has alpha = {p.alpha}, beta = {p.beta}")
        D = self.torch.matmul(*(bits_to_torch(x, self.in_fmt, self.dev) for x in (p.a, p.b)))
        self.torch.cuda.synchronize()
        return torch_to_bits(D).astype(np.uint64)
