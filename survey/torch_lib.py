"""torch on the GPU, as the library part reads it: the environment a call ran in, the kernels it
launched, and the variants that say why its bits are what they are.

- :func:`environment`: torch, CUDA and cuBLAS versions, ``CUBLAS_WORKSPACE_CONFIG``, torch's
  reduced-precision reduction flags and its TF32 settings (recorded once per survey);
- :func:`profiled`: a call run under ``torch.profiler`` (CUDA activity only); the CUDA kernel
  events' names are the kernels it launched. A profiler that records no kernel, or none at all,
  is recorded as such (the names are then ``[]`` with a note) and the survey goes on;
- :func:`variant`: the call run again with a smaller cuBLAS workspace
  (``CUBLAS_WORKSPACE_CONFIG=:16:8``: eight 16 KiB buffers, too small for split-K partials) or
  with ``allow_fp16/bf16_reduced_precision_reduction`` off; a bit that changes under the first
  points at split-K, under the second at partials kept in the output type. Everything is
  restored afterwards.

torch is passed in, never imported here: this module is imported where torch is absent.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

WORKSPACE_SMALL = ":16:8"
VARIANTS = ("workspace-16x8", "reduced-off")
"""The variants every library call runs (:func:`variant`); ``reduced-off`` only for fp16/bf16."""


def workspace_bytes(config: str | None) -> int | None:
    """Bytes of a ``CUBLAS_WORKSPACE_CONFIG`` value (``:SIZE_KiB:COUNT`` terms); None: unset/unparsed."""
    if not config:
        return None
    try:
        parts = [p for p in config.split(":") if p]
        return sum(int(parts[i]) * 1024 * int(parts[i + 1]) for i in range(0, len(parts) - 1, 2)) or None
    except (ValueError, IndexError):
        return None


def _get(fn, default=None):
    try:
        return fn()
    except Exception:                 # noqa: BLE001 - a setting this torch does not have
        return default


def environment(torch) -> dict:
    """What the library calls ran under (module docstring)."""
    m = torch.backends.cuda.matmul
    ws = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    cublas = _get(lambda: torch._C._cuda_getCompiledVersion())
    lt = _get(lambda: torch.backends.cuda.preferred_blas_library().name)
    cupy_cublas = None
    try:
        import cupy
        cupy_cublas = int(cupy.cuda.cublas.getVersion(cupy.cuda.device.get_cublas_handle()))
    except Exception:                 # noqa: BLE001 - CuPy absent or too old: named as None
        pass
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cuda_compiled": cublas, "cudnn": _get(lambda: torch.backends.cudnn.version()),
            "cublas": cupy_cublas, "cublas_source": "cupy.cuda.cublas.getVersion" if cupy_cublas else None,
            "blas_library": lt,
            "gpu": _get(lambda: torch.cuda.get_device_name(0)),
            "CUBLAS_WORKSPACE_CONFIG": ws, "workspace_bytes": workspace_bytes(ws),
            "CUBLASLT_WORKSPACE_SIZE": os.environ.get("CUBLASLT_WORKSPACE_SIZE"),
            "allow_fp16_reduced_precision_reduction": _get(lambda: bool(m.allow_fp16_reduced_precision_reduction)),
            "allow_bf16_reduced_precision_reduction": _get(lambda: bool(m.allow_bf16_reduced_precision_reduction)),
            "allow_tf32": _get(lambda: bool(m.allow_tf32)),
            "fp32_precision": _get(lambda: str(m.fp32_precision)),
            "float32_matmul_precision": _get(lambda: torch.get_float32_matmul_precision())}


def profiled(torch, fn):
    """(fn's result, kernel names, note): the names of the CUDA kernels ``fn`` launched, in order;
    note is None, or why there are no names (the call itself always runs)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
    except Exception as exc:          # noqa: BLE001 - no CUDA profiler (CUPTI) here
        out = fn()
        return out, [], f"profiler unavailable: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    try:
        out = fn()
        torch.cuda.synchronize()
    finally:
        try:
            prof.__exit__(None, None, None)
        except Exception:             # noqa: BLE001
            pass
    try:
        names = [e.name for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")
                 and not e.name.lower().startswith(("memcpy", "memset"))]
    except Exception as exc:          # noqa: BLE001 - a profiler that kept nothing
        return out, [], f"profiler recorded nothing: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return out, list(dict.fromkeys(names)), None if names else "the profiler recorded no kernel"


def variants_for(in_fmt: str) -> tuple:
    """The variants a call of these inputs runs (reduced precision applies to fp16/bf16 only)."""
    return VARIANTS if in_fmt in ("fp16", "bf16") else VARIANTS[:1]


@contextmanager
def variant(torch, name: str | None):
    """Run the body under variant ``name`` (None: as configured), restoring everything after."""
    if name is None:
        yield
        return
    m = torch.backends.cuda.matmul
    if name == "workspace-16x8":
        old = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = WORKSPACE_SMALL
        _clear(torch)
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
            else:
                os.environ["CUBLAS_WORKSPACE_CONFIG"] = old
            _clear(torch)
    elif name == "reduced-off":
        old = (m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction)
        m.allow_fp16_reduced_precision_reduction = False
        m.allow_bf16_reduced_precision_reduction = False
        try:
            yield
        finally:
            m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction = old
    else:
        raise ValueError(f"unknown variant {name!r}; variants: {', '.join(VARIANTS)}")


def _clear(torch) -> None:
    """torch keeps a cuBLAS workspace per handle and stream; clearing makes it read the setting again."""
    fn = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if fn is not None:
        fn()
