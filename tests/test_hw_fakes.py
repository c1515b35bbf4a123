"""A NumPy stand-in for a GPU (used by the other hw tests) and the runner's pipeline through it.

``EmuLauncher`` unpacks the kernel buffers with the kernels' own layouts, computes each chunk
as C + A @ B in float64 rounded once to the accumulator format, and packs D. With small integer
inputs every real MMA gives the same exact answer, so the pipeline (placement, chunking with
+0 padding, D[0][0] extraction, replicate mode) is checked end to end without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner.kernels import KERNELS
from smtmodel.sampling import round_to
from hw_runner.runner import run_on_device
from smtmodel.formats import bits_to_numpy, get_format


def _vals(bits, fmt):
    with np.errstate(invalid="ignore"):
        return bits_to_numpy(bits, fmt).astype(np.float64)


class EmuLauncher:
    """Answers like an ideal MMA unit; ``corrupt(D)`` may damage the D matrices in place."""

    def __init__(self, arch="sm_90", name="Emulated GPU", corrupt=None):
        self.arch, self.name, self.corrupt = arch, name, corrupt
        self.launches = 0

    def launch(self, spec, a, b, c):
        self.launches += 1
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        if spec.family == "wgmma":
            A = fa.unpack(a.reshape(n * ch, -1)).reshape(n, ch, 1, m, k)
            B = np.swapaxes(fb.unpack(b.reshape(n * ch, -1)).reshape(n, ch, 1, nn, k), -1, -2)
        else:
            A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, fa.n_mats, m, k)
            B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, fb.n_mats, k, nn)
        D = fd.unpack(c)
        for j in range(ch):
            with np.errstate(all="ignore"):
                acc = _vals(D, spec.out_fmt) + _vals(A[:, j], spec.in_fmt) @ _vals(B[:, j], spec.in_fmt)
                D = round_to(acc, spec.out_fmt).reshape(D.shape)
        if self.corrupt:
            self.corrupt(D)
        return fd.pack(D)


def small_int_cases(spec, n, k, seed=0):
    """Cases whose exact result every tensor core reproduces: integers in [-3, 3] ([0, 3] for
    unsigned inputs such as u8)."""
    rng = np.random.default_rng(seed)
    lo = -3 if get_format(spec.in_fmt).signed else 0
    av, bv, cv = rng.integers(lo, 4, (n, k)), rng.integers(lo, 4, (n, k)), rng.integers(-3, 4, n)
    a, b = round_to(av.astype(float), spec.in_fmt), round_to(bv.astype(float), spec.in_fmt)
    c = round_to(cv.astype(float), spec.c_fmt)
    want = round_to((cv + (av * bv).sum(axis=1)).astype(float), spec.out_fmt)
    return a, b, c, want


@pytest.mark.parametrize("kid", sorted(KERNELS))
def test_pipeline_single_and_chained(kid):
    spec = KERNELS[kid]
    k = 2 * spec.k + 3                       # three chunks, the last padded with +0
    a, b, c, want = small_int_cases(spec, 5, k)
    res = run_on_device(EmuLauncher(), spec, a, b, c, batch=2)
    assert np.array_equal(res.d, want)
    assert res.uniform is None


@pytest.mark.parametrize("kid", ["mma_m8n8k4_f16_f32", "mma_m16n8k32_e4m3_f16", "wgmma_m64n8k8_tf32_f32"])
def test_replicate_mode_all_outputs_equal(kid):
    spec = KERNELS[kid]
    a, b, c, want = small_int_cases(spec, 4, spec.k)
    res = run_on_device(EmuLauncher(), spec, a, b, c, replicate=True)
    assert np.array_equal(res.d, want) and res.uniform.all() and not res.distinct


def test_replicate_mode_reports_a_differing_output():
    spec = KERNELS["mma_m16n8k16_f16_f32"]
    a, b, c, want = small_int_cases(spec, 3, spec.k)

    def corrupt(D):
        D[1:, 0, 5, 7] ^= np.uint64(1)       # one entry of D off by an ulp, cases 1 and 2

    res = run_on_device(EmuLauncher(corrupt=corrupt), spec, a, b, c, replicate=True)
    assert res.uniform.tolist() == [True, False, False]
    assert sorted(res.distinct) == [1, 2]
    assert res.distinct[1] == sorted({int(want[1]), int(want[1]) ^ 1})
