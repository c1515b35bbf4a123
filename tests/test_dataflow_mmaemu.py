"""The cuBLASLt FP8 profiles against mmaemu (the ``bench`` extra): for mmaemu's ``ada`` and
``hopper`` profiles, fast and slow accumulation and split-K S = 2..6, random FP8 GEMMs of a few
shapes give identical bits (mmaemu's accumulator, before alpha; and whole ``scaled_mm`` calls).
Expected values come from mmaemu, an independent implementation. Skips cleanly without it."""

from __future__ import annotations

import numpy as np
import pytest

mmaemu = pytest.importorskip("mmaemu")
torch = pytest.importorskip("torch")

from smtmodel.catalog import get_model  # noqa: E402
from smtmodel.gemm import gemm_bits  # noqa: E402
from smtmodel.sampling import round_to  # noqa: E402

SHAPES = [(5, 7, 200), (3, 9, 333), (4, 4, 1000)]
ARCH = {"ada": ("ada-fp8e4m3-fp32:zero_align=ignore", "cublaslt-ada-fp8-{}", ("serial", "pairwise")),
        "hopper": ("hopper-fp8e4m3-fp32:zero_align=ignore", "cublaslt-hopper-fp8-{}", ("contiguous",))}


def _t(bits, dtype):
    return torch.from_numpy(np.ascontiguousarray(bits.astype(np.uint8))).view(dtype)


def _cases():
    for prof, (_, _, schemes) in ARCH.items():
        for fast in (True, False):
            for S in range(1, 7):
                for scheme in (schemes if S > 1 else ("none",)):
                    yield prof, fast, S, scheme


@pytest.mark.parametrize("prof,fast,S,scheme", list(_cases()))
def test_accumulator_equals_mmaemu(prof, fast, S, scheme):
    mid, df_name, _ = ARCH[prof]
    m = get_model(mid)
    for i, (M, N, K) in enumerate(SHAPES):
        if scheme == "contiguous" and (S - 1) * -(-(-(-K // 128)) // S) >= -(-K // 128):
            continue                    # an empty contiguous split: refused by the dataflow (bad input)
        rng = np.random.default_rng(100 * S + i)
        a = round_to(rng.standard_normal((M, K)), "fp8e4m3")
        b = round_to(rng.standard_normal((K, N)), "fp8e4m3")
        want = mmaemu.accumulate(_t(a, torch.float8_e4m3fn), _t(np.ascontiguousarray(b.T), torch.float8_e4m3fn),
                                 use_fast_accum=fast, profile=prof, splitk=(S, scheme) if S > 1 else 1)
        want = want.contiguous().view(torch.int32).numpy().view(np.uint32).astype(np.uint64)
        comb = "serial" if scheme in ("contiguous", "none") else scheme
        df = df_name.format("fast" if fast else "slow") + f":S={S},combine={comb},beta0=skip,k_multiple=0"
        got = gemm_bits(m, a, b, None, beta_bits=0, dataflow=df)          # RN(1*acc) = acc
        assert np.array_equal(got, want), (M, N, K, df)


@pytest.mark.parametrize("out", ["float32", "bfloat16", "float16", "float8_e4m3fn"])
@pytest.mark.parametrize("fast", [True, False])
def test_scaled_mm_equals_mmaemu(out, fast):
    from mmaprobe.torch import scaled_mm, to_bits_tensor
    rng = np.random.default_rng(7)
    a = round_to(rng.standard_normal((6, 336)), "fp8e4m3")          # torch wants K % 16 == 0
    b = round_to(rng.standard_normal((336, 16)), "fp8e4m3")
    A = _t(a, torch.float8_e4m3fn)
    B = _t(np.ascontiguousarray(b.T), torch.float8_e4m3fn).t()
    sa, sb = torch.tensor(0.3, dtype=torch.float32), torch.tensor(-1.7, dtype=torch.float32)
    sr = torch.tensor(0.25, dtype=torch.float32) if out.startswith("float8") else None
    od = getattr(torch, out)
    want = mmaemu.scaled_mm(A, B, sa, sb, scale_result=sr, out_dtype=od, use_fast_accum=fast, profile="ada",
                            splitk=(3, "pairwise"))
    got = scaled_mm(A.contiguous(), B.contiguous(), sa, sb, scale_result=sr, out_dtype=od, use_fast_accum=fast,
                    splitk=(3, "pairwise"))
    assert np.array_equal(to_bits_tensor(got), to_bits_tensor(want))
