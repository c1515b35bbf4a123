"""mmaprobe.torch (optional extra ``torch``): the adapter's bits equal smtmodel.gemm's on the same
inputs, ``scaled_mm`` reproduces recorded RTX 4060 ``torch._scaled_mm`` outputs, and bad tensors
are one-line errors. Skips cleanly without torch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mmaprobe.torch import from_bits, matmul, scaled_mm, to_bits_tensor  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402
from smtmodel.gemm import gemm_bits  # noqa: E402
from smtmodel.model import ModelError  # noqa: E402
from smtmodel.sampling import round_to  # noqa: E402


def test_matmul_equals_gemm_bits():
    m = get_model("hopper-fp16-fp32")
    rng = np.random.default_rng(0)
    a = round_to(rng.standard_normal((4, 40)), "fp16")
    b = round_to(rng.standard_normal((40, 3)), "fp16")
    c = round_to(rng.standard_normal((4, 3)), "fp32")
    ta, tb, tc = from_bits(a, "fp16"), from_bits(b, "fp16"), from_bits(c, "fp32")
    assert ta.dtype == torch.float16 and tc.dtype == torch.float32
    d = matmul(ta, tb, c=tc, model=m, dataflow="cutlass3-sm90", alpha=2.0, beta=-1.0)
    want = gemm_bits(m, a, b, c, alpha_bits=0x40000000, beta_bits=0xBF800000, dataflow="cutlass3-sm90")
    assert np.array_equal(to_bits_tensor(d), want)


def test_scaled_mm_reproduces_recorded_cublaslt_outputs():
    """Expected: real RTX 4060 torch._scaled_mm outputs (../shared/hwdata/rtx4060_mmaemu)."""
    from pathlib import Path
    from smtmodel.mmaemu import open_hwmini
    root = Path(__file__).resolve().parents[1] / ".." / "shared" / "hwdata" / "rtx4060_mmaemu"
    if not root.is_dir():
        pytest.skip("no ../shared/hwdata/rtx4060_mmaemu")
    outs = [o for o in open_hwmini(root, verify=False).gemm_outputs()
            if o.select == "grid" and o.a is not None and 0 < o.a.shape[1] <= 512 and o.expect.size <= 256][:12]
    assert outs
    for o in outs:
        dt = {"fp8e4m3": torch.float8_e4m3fn, "fp8e5m2": torch.float8_e5m2}
        A = from_bits(np.asarray(o.a, np.uint64), o.fmt_a)
        B = from_bits(np.ascontiguousarray(np.asarray(o.b, np.uint64).T), o.fmt_b)
        assert A.dtype == dt[o.fmt_a]
        sa = from_bits(np.array([o.scale_a_bits], np.uint64), "fp32")
        sb = from_bits(np.array([o.scale_b_bits], np.uint64), "fp32")
        sr = None if o.scale_result_bits is None else from_bits(np.array([o.scale_result_bits], np.uint64), "fp32")
        D = scaled_mm(A, B, sa, sb, scale_result=sr, out_dtype=from_bits(np.zeros(1, np.uint64), o.out_fmt).dtype,
                      use_fast_accum=bool(o.fast), splitk=o.splitk)
        assert np.array_equal(to_bits_tensor(D).reshape(o.expect.shape), o.expect.astype(np.uint64)), o.id


def test_bad_tensors_are_model_errors():
    a = torch.zeros((2, 3), dtype=torch.float16)
    with pytest.raises(ModelError, match="takes"):
        matmul(a, torch.zeros((3, 2), dtype=torch.float32), model="hopper-fp16-fp32")
    with pytest.raises(ModelError, match="bias"):
        scaled_mm(a, a.T, 1.0, 1.0, bias=torch.zeros(2))
