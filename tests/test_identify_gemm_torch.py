"""identify --gemm through torch (hw_runner.gemm_device.TorchGemmDevice) and the split-K per GEMM
shape (queries.gemm.identify.split_search).

The torch device is run against a stand-in torch module that records its calls and computes with
NumPy on small integers (exact in fp32), so the expected D is an independent computation. The
split test replays the committed H100 capture of cuBLAS gemmEx bf16
(hwdata/survey/h100-sxm/gemm-identify/cublas_gemmex_bf16.capture.npz, from ``identify --gemm
--device cuda-gemm --in bf16 --out fp32 --capture``): its probes (50x6x128) fit
``hopper-bf16-fp32`` with the named epilogue profiles unsplit, its verification GEMM (12x6x256)
only with S = 4 slices (found by hand with gemm_bits before this search existed: 72 of 72 with
``cutlass3-sm90:tile=64,S=4``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hw_runner.errors import HarnessError

ROOT = Path(__file__).resolve().parents[1]
BF16_CAPTURE = ROOT / "hwdata/survey/h100-sxm/gemm-identify/cublas_gemmex_bf16.capture.npz"

_NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "int16": np.int16,
       "int32": np.int32}


def _fake_torch(calls: list, has_out_dtype: bool = True):
    """A stand-in torch: tensors are NumPy arrays with a dtype name; addmm/matmul record their
    arguments and compute in float64 (exact for the small integers used), rounded to the result's
    dtype."""

    class T:
        def __init__(self, x):
            self.x = x

        @property
        def dtype(self):
            return {v: k for k, v in _NP.items()}[self.x.dtype.type]

        def to(self, dev):
            return self

        def view(self, dtype):
            return T(self.x.view(_NP[dtype]))

        def contiguous(self):
            return self

        def element_size(self):
            return self.x.itemsize

        def cpu(self):
            return self

        def numpy(self):
            return self.x

    def addmm(c, a, b, *, beta=1, alpha=1, out_dtype=None):
        if not has_out_dtype and out_dtype is not None:
            raise TypeError("addmm() got an unexpected keyword argument 'out_dtype'")
        calls.append(("addmm", c.dtype, a.dtype, b.dtype, a.x.shape, b.x.shape, alpha, beta, out_dtype))
        d = alpha * (a.x.astype(np.float64) @ b.x.astype(np.float64)) + beta * c.x.astype(np.float64)
        return T(d.astype(np.float32))

    def matmul(a, b):
        calls.append(("matmul", a.dtype, b.dtype, a.x.shape, b.x.shape))
        return T((a.x.astype(np.float64) @ b.x.astype(np.float64)).astype(a.x.dtype))

    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                 get_device_capability=lambda i=0: (9, 0), synchronize=lambda: None)
    torch = types.ModuleType("torch")
    torch.__version__ = "stand-in"
    torch.cuda, torch.device, torch.from_numpy = cuda, (lambda s: s), T
    torch.addmm, torch.matmul = addmm, matmul
    for name in _NP:
        setattr(torch, name, name)
    return torch


def _probe(rng, M, N, K, alpha, beta, fmt="bf16"):
    from queries.gemm.probes import Probe
    dt = np.float16 if fmt == "fp16" else ml_dtypes.bfloat16
    a = rng.integers(-4, 5, (M, K)).astype(dt)
    b = rng.integers(-4, 5, (K, N)).astype(dt)
    c = rng.integers(-8, 9, (M, N)).astype(np.float32)
    return Probe("p", a.view(np.uint16).astype(np.uint64), b.view(np.uint16).astype(np.uint64),
                 c.view(np.uint32).astype(np.uint64), alpha, beta), a, b, c


@pytest.mark.parametrize("fmt", ["bf16", "fp16"])
def test_torch_gemm_device_runs_addmm_with_fp32_c_and_the_probes_scalars(monkeypatch, fmt):
    """Each probe is torch.addmm(C fp32, A, B, beta=, alpha=, out_dtype=float32): the call's
    dtypes, shapes and scalars as recorded, and D equal to alpha A B + beta C computed by NumPy."""
    from hw_runner.gemm_device import TorchGemmDevice
    calls = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(calls))
    dev = TorchGemmDevice("torch-gemm:0", in_fmt=fmt, out_fmt="fp32")
    assert (dev.in_fmt, dev.c_fmt, dev.out_fmt) == (fmt, "fp32", "fp32") and "sm_90" in dev.name
    p, a, b, c = _probe(np.random.default_rng(5), 5, 3, 16, -1.5, 0.5, fmt)
    d = dev.launch(p)
    tname = "float16" if fmt == "fp16" else "bfloat16"
    assert calls == [("addmm", "float32", tname, tname, (5, 16), (16, 3), -1.5, 0.5, "float32")]
    want = (-1.5 * (a.astype(np.float64) @ b.astype(np.float64)) + 0.5 * c).astype(np.float32)
    assert d.dtype == np.uint64 and np.array_equal(d.astype(np.uint32).view(np.float32), want)


def test_torch_gemm_device_plain_matmul_and_its_limits(monkeypatch):
    """matmul(p): plain torch.matmul(A, B), D in the input format; a probe with alpha != 1 or
    beta != 0 is refused in one line; a torch without addmm's out_dtype is named."""
    from hw_runner.gemm_device import TorchGemmDevice
    calls = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(calls))
    dev = TorchGemmDevice("torch-gemm", in_fmt="bf16")
    p, a, b, _ = _probe(np.random.default_rng(6), 4, 2, 8, 1.0, 0.0)
    d = dev.matmul(p)
    assert calls == [("matmul", "bfloat16", "bfloat16", (4, 8), (8, 2))]
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(d, want.astype(np.uint64))
    p.alpha = 2.0
    with pytest.raises(HarnessError, match="alpha = 1, beta = 0 only"):
        dev.matmul(p)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(calls, has_out_dtype=False))
    with pytest.raises(HarnessError, match="no addmm.*out_dtype"):
        TorchGemmDevice("torch-gemm:0", in_fmt="bf16").launch(p)
    with pytest.raises(HarnessError, match="fp16/bf16 -> fp32"):
        TorchGemmDevice("torch-gemm:0", in_fmt="fp8e4m3")


def test_cli_torch_gemm_without_a_cuda_torch_is_one_line(monkeypatch, capsys):
    from mmaprobe.cli import main
    cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
    fake = types.ModuleType("torch")
    fake.cuda = cuda
    monkeypatch.setitem(sys.modules, "torch", fake)
    rc = main(["identify", "--gemm", "--device", "torch-gemm:0", "--in", "bf16", "--out", "fp32", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "torch sees 0 CUDA GPU" in err[0]


def test_committed_bf16_gemmex_capture_takes_a_split_per_shape():
    """The committed H100 bf16 gemmEx capture ends identified: the probes fit the named profiles
    unsplit, the verification GEMM only with S = 4 contiguous slices (of 64 at K = 256), named
    for its shape. A smaller space than the default keeps this fast (every launch it makes is in
    the capture); without the split search the same run ends with every pair refuted."""
    from queries.gemm import identify as gid
    from queries.gemm.devices import FileGemmDevice
    from smtmodel.catalog import get_model
    from smtmodel.dataflow import parse_dataflow
    models = [get_model(m) for m in ("hopper-bf16-fp32", "ampere-bf16-fp32")]
    dfs = [parse_dataflow(x) for x in ("cutlass2", "cutlass3-sm90", "tensile")]
    out = gid.identify_gemm(FileGemmDevice(str(BF16_CAPTURE)), models, dfs)
    assert out.status == "identified" and out.verified
    assert out.labels() == ["hopper-bf16-fp32 | cutlass3-sm90", "hopper-bf16-fp32 | tensile"]
    assert out.named_shapes == [[50, 6, 128]]
    (sp,) = out.splits
    assert sp["shape"] == [12, 6, 256] and sp["hypotheses"] == 2
    assert "S=4 over 64-wide k-tiles, combine serial" in sp["fits"]
    assert all(f.startswith("S=4 ") for f in sp["fits"])          # no other S reproduces it
    assert "12x6x256" in out.split_lines()[1] and "50x6x128" in out.split_lines()[0]


def test_without_the_split_search_the_capture_refutes_every_pair(monkeypatch):
    from queries.gemm import identify as gid
    from queries.gemm.devices import FileGemmDevice
    from smtmodel.catalog import get_model
    from smtmodel.dataflow import parse_dataflow
    monkeypatch.setattr(gid, "SPLIT_GRID", ())
    out = gid.identify_gemm(FileGemmDevice(str(BF16_CAPTURE)), [get_model("hopper-bf16-fp32")],
                            [parse_dataflow("cutlass3-sm90")])
    assert out.status == "no-fit" and not out.live


def test_survey_torch_target_dry_run():
    """The survey's identify part, torch path, against the dry-run twin (hopper-bf16-fp32 under
    cutlass3-sm90): that pair among the survivors, and the torch.matmul probe (D rounded to bf16)
    reproduced by them; with several (model, dataflow) pairs left the record says narrowed, as
    identify does."""
    from survey.device import open_target
    from survey.identify import gemm_line, gemm_targets, run_identify_gemm
    assert gemm_targets("sm_90") == ["bf16", "fp16"] and gemm_targets("sm_90", quick=True) == ["bf16"]
    r = run_identify_gemm(open_target("dry:sm_90"), "bf16", quick=True)
    assert "hopper-bf16-fp32 | cutlass3-sm90" in r["live"]
    assert r["status"] == ("identified" if r["live_count"] == 1 else "narrowed")
    assert r["matmul"]["out"] == "bf16" and r["matmul"]["reproduced_by"] == r["matmul"]["of"] > 0
    assert gemm_line(r).startswith(r["status"])
