"""A NumPy stand-in for a GPU (used by the other hw tests) and the runner's pipeline through it.

``EmuLauncher`` unpacks the kernel buffers with the kernels' own layouts, computes each chunk
as C + (A * scale_A) @ (B * scale_B) in float64 (each operand read in its own format; integers
exactly) rounded once to the accumulator format, and packs D. With small integer inputs (and
power-of-two block scales) every real MMA gives the same exact answer, so the pipeline
(placement, chunking with +0 padding, scale placement, D[0][0] extraction, replicate mode) is
checked end to end without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner.kernels import KERNELS
from smtmodel.sampling import round_to
from hw_runner.runner import run_on_device
from smtmodel.formats import bits_to_numpy, get_format, is_int_format


def _vals(bits, fmt):
    f = get_format(fmt)
    if is_int_format(f.name):
        v = np.asarray(bits, dtype=np.int64) & ((1 << f.width) - 1)
        return np.where(f.signed & (v >= 1 << (f.width - 1)), v - (1 << f.width), v).astype(np.float64)
    if f.name == "e8m0":                                   # 2^(e - 127) (0xFF: NaN, not drawn here)
        return np.ldexp(1.0, np.asarray(bits, dtype=np.int64) - 127)
    if f.name == "ue4m3":                                  # an E4M3 byte with sign bit 0
        return _vals(bits, "fp8e4m3")
    with np.errstate(invalid="ignore"):
        return bits_to_numpy(bits, fmt).astype(np.float64)


class EmuLauncher:
    """Answers like an ideal MMA unit; ``corrupt(D)`` may damage the D matrices in place."""

    def __init__(self, arch="sm_90", name="Emulated GPU", corrupt=None):
        self.arch, self.name, self.corrupt = arch, name, corrupt
        self.launches = 0

    def launch(self, spec, a, b, c, sa=None, sb=None):
        self.launches += 1
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        if spec.family in ("wgmma", "tcgen05"):
            A = fa.unpack(a.reshape(n * ch, -1)).reshape(n, ch, 1, m, k)
            B = np.swapaxes(fb.unpack(b.reshape(n * ch, -1)).reshape(n, ch, 1, nn, k), -1, -2)
        else:
            A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, fa.n_mats, m, k)
            B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, fb.n_mats, k, nn)
        D = fd.unpack(c)
        fin_a, fin_b = spec.operand_fmts
        for j in range(ch):
            av, bv = _vals(A[:, j], fin_a), _vals(B[:, j], fin_b)
            if sa is not None:                   # scale_A (M x S) over A's K blocks, scale_B (S x N) over B's
                sfa, sfb = spec.scale_fragments
                blk = spec.scale_block
                SA = _vals(sfa.unpack(sa[:, j]), spec.scale_fmt)
                SB = _vals(sfb.unpack(sb[:, j]), spec.scale_fmt)
                av = av * np.repeat(SA, blk, axis=2)[:, None]
                bv = bv * np.repeat(SB, blk, axis=1)[:, None]
            with np.errstate(all="ignore"):
                acc = _vals(D, spec.out_fmt) + av @ bv
                D = round_to(acc, spec.out_fmt).reshape(D.shape)
        if self.corrupt:
            self.corrupt(D)
        return fd.pack(D)


def _bits(v, fmt):
    """Small integers as raw bits of ``fmt`` (two's complement for the integer formats)."""
    if is_int_format(fmt):
        return (v.astype(np.int64) & ((1 << get_format(fmt).width) - 1)).astype(np.uint64)
    return round_to(v.astype(float), fmt)


SCALE_BITS = {"e8m0": {0.5: 0x7E, 1.0: 0x7F, 2.0: 0x80}, "ue4m3": {0.5: 0x30, 1.0: 0x38, 2.0: 0x40}}


def small_int_cases(spec, n, k, seed=0):
    """Cases whose exact result every tensor core reproduces: integers in [-3, 3] ([0, 3] for
    unsigned inputs such as u8), each operand in its own format; block-scaled kernels: scales
    0.5, 1 or 2 per block (returned as ``(a, b, c, want, scales)``; ``scales`` is None without)."""
    rng = np.random.default_rng(seed)
    fa, fb = getattr(spec, "operand_fmts", (spec.in_fmt, spec.in_fmt))
    lo = -3 if get_format(fa).signed else 0
    av, bv, cv = rng.integers(lo, 4, (n, k)), rng.integers(lo, 4, (n, k)), rng.integers(-3, 4, n)
    a, b = (_bits(v, f) for v, f in ((av, fa), (bv, fb)))
    c = round_to(cv.astype(float), spec.c_fmt)
    scales, fac = None, np.ones((n, k))
    if getattr(spec, "block_scaled", False):
        blk = spec.scale_block
        ka, kb = rng.choice([0.5, 1.0, 2.0], (2, n, -(-k // blk)))
        enc = np.vectorize(SCALE_BITS[spec.scale_fmt].get)
        scales = {"a_scale": enc(ka).astype(np.uint64), "b_scale": enc(kb).astype(np.uint64)}
        fac = (np.repeat(ka, blk, axis=1) * np.repeat(kb, blk, axis=1))[:, :k]
    want = round_to((cv + (av * bv * fac).sum(axis=1)).astype(float), spec.out_fmt)
    return a, b, c, want, scales


@pytest.mark.parametrize("kid", sorted(KERNELS))
def test_pipeline_single_and_chained(kid):
    spec = KERNELS[kid]
    blk = spec.scale_block or 1
    k = 2 * spec.k + 3 * blk                 # three or more chunks, the last one padded with +0
    a, b, c, want, scales = small_int_cases(spec, 5, k)
    res = run_on_device(EmuLauncher(), spec, a, b, c, batch=2, **(scales or {}))
    assert np.array_equal(res.d, want)
    assert res.uniform is None


@pytest.mark.parametrize("kid", ["mma_m8n8k4_f16_f32", "mma_m16n8k32_e4m3_f16", "wgmma_m64n8k8_tf32_f32",
                                 "mma_m16n8k32_e3m2e2m1_f32", "mma_m16n8k32_mxf8f6f4_e2m1e4m3_f32",
                                 "mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32", "mma_m16n8k64_s4_s32"])
def test_replicate_mode_all_outputs_equal(kid):
    spec = KERNELS[kid]
    a, b, c, want, scales = small_int_cases(spec, 4, spec.k)
    res = run_on_device(EmuLauncher(), spec, a, b, c, replicate=True, **(scales or {}))
    assert np.array_equal(res.d, want) and res.uniform.all() and not res.distinct


def test_replicate_mode_reports_a_differing_output():
    spec = KERNELS["mma_m16n8k16_f16_f32"]
    a, b, c, want, _ = small_int_cases(spec, 3, spec.k)

    def corrupt(D):
        D[1:, 0, 5, 7] ^= np.uint64(1)       # one entry of D off by an ulp, cases 1 and 2

    res = run_on_device(EmuLauncher(corrupt=corrupt), spec, a, b, c, replicate=True)
    assert res.uniform.tolist() == [True, False, False]
    assert sorted(res.distinct) == [1, 2]
    assert res.distinct[1] == sorted({int(want[1]), int(want[1]) ^ 1})
