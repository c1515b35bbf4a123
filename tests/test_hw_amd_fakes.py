"""The AMD pipeline end to end without a GPU: cases -> MFMA operands -> 64-lane registers ->
a stand-in launcher that computes every entry of D through the catalog model's twin -> unpacked
D. Bit-exact for every MFMA kernel in both modes (single case, replicate) and over chained
chunks of K.

The expected outputs are an independent computation: the model's twin run directly on each
case's vectors, chunk by chunk (d = c; d = model(a_j, b_j, d) for each K-long chunk j, the last
padded with +0), with no layout involved."""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner.amd.kernels import MFMA_KERNELS
from hw_runner.runner import run_on_device
from smtmodel.catalog import get_model, model_for_kernel
from smtmodel.formats import get_format
from smtmodel.sampling import validation_mix

# every MFMA kernel with the catalog model that owns it on its newest target
OWNER = {kid: next(model_for_kernel(kid, g) for g in reversed(s.gfx) if model_for_kernel(kid, g))
         for kid, s in MFMA_KERNELS.items()}


def _eval(model, a, b, c):
    return np.asarray(model.evaluate(a, b, c, backend="numpy"), dtype=np.uint64)


class TwinLauncher:
    """Answers like an MFMA unit that computes as ``model`` does: every D[i][j] of every chunk is
    ``model(A[i, :], B[:, j], D[i][j])``, A, B and C read back from the packed registers with the
    kernel's own fragments."""

    def __init__(self, model, arch):
        self.model, self.arch, self.name = model, arch, f"twin MFMA ({model.id})"
        self.launches = 0

    def launch(self, spec, a, b, c):
        self.launches += 1
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, m, k)
        B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, k, nn)
        D = fd.unpack(c)[:, 0]                                          # (n, m, nn)
        for j in range(ch):
            rows = np.repeat(A[:, j], nn, axis=1).reshape(-1, k)        # case, i, j -> A[i, :]
            cols = np.swapaxes(B[:, j], 1, 2)[:, None].repeat(m, axis=1).reshape(-1, k)
            # each distinct (row, column, c) once: the same function of the same bits
            uniq, back = np.unique(np.hstack([rows, cols, D.reshape(-1, 1)]), axis=0, return_inverse=True)
            d = _eval(self.model, uniq[:, :k], uniq[:, k:2 * k], uniq[:, 2 * k])
            D = d[back.reshape(-1)].reshape(n, m, nn)
        return fd.pack(D[:, None])


def _chained(model, spec, a, b, c):
    d = c.copy()
    k = a.shape[1]
    for lo in range(0, k, spec.k):
        aj = np.zeros((a.shape[0], spec.k), dtype=np.uint64)
        bj = np.zeros_like(aj)
        aj[:, :min(spec.k, k - lo)] = a[:, lo:lo + spec.k]
        bj[:, :min(spec.k, k - lo)] = b[:, lo:lo + spec.k]
        d = _eval(model, aj, bj, d)
    return d


def test_every_mfma_kernel_has_an_owner():
    assert set(OWNER) == set(MFMA_KERNELS) and all(OWNER.values())


def _round_trips():
    """Every unscaled kernel (scaled: test_cdna4) one case per lane layout; replicate mode (every
    lane given the same dot product) for the first kernel of each tile and operand width in the
    default run, the others -m slow (their layouts are read by the single mode already); of the
    f8f6f4 kernels (one layout per tile and operand width, the format only decoded by the model)
    the default run takes the first of each tile and width."""
    seen, params = set(), []
    for kid in sorted(k for k, s in MFMA_KERNELS.items() if not s.scaled):
        spec = MFMA_KERNELS[kid]
        key = (kid.split("_")[2].rsplit("x", 1)[0], get_format(spec.in_fmt).width)
        f8f6f4 = ("single",) + key if "f8f6f4" in kid else None      # one per tile and width by default
        params.append(pytest.param(kid, False, id=f"single-{kid}", marks=pytest.mark.slow if f8f6f4 and f8f6f4 in seen else ()))
        seen.add(f8f6f4)
        params.append(pytest.param(kid, True, id=f"replicate-{kid}", marks=pytest.mark.slow if key in seen else ()))
        seen.add(key)
    return params


@pytest.mark.parametrize("kid, replicate", _round_trips())
def test_round_trip_through_the_twin_is_bit_exact(kid, replicate):
    spec, model = MFMA_KERNELS[kid], OWNER[kid]
    k = 2 * spec.k + 3 if not replicate else spec.k        # chained: three chunks, the last padded
    a, b, c, _ = validation_mix(spec.in_fmt, spec.c_fmt, k, 3, seed=7)
    launcher = TwinLauncher(model, spec.gfx[-1])
    res = run_on_device(launcher, spec, a, b, c, replicate=replicate, batch=2)
    want = _chained(model, spec, a, b, c)
    assert np.array_equal(res.d, want), (kid, res.d, want)
    assert launcher.launches == 2                           # 3 cases in batches of 2
    if replicate:
        # every entry of D computes the same dot product: identical bits everywhere (CLFP step 1)
        assert res.uniform.all() and not res.distinct


def test_a_wrong_register_is_seen_by_replicate_mode():
    spec = MFMA_KERNELS["mfma_f32_16x16x16_f16"]
    model = get_model("cdna3-fp16-fp32")

    class Corrupting(TwinLauncher):
        def launch(self, spec, a, b, c):
            d = super().launch(spec, a, b, c)
            d[:, 37, 2] ^= np.uint64(1)          # lane 37, register 2: D[4*2+2][5] one ulp off
            return d

    a, b, c, _ = validation_mix("fp16", "fp32", spec.k, 2, seed=3)
    res = run_on_device(Corrupting(model, "gfx942"), spec, a, b, c, replicate=True)
    assert not res.uniform.any() and sorted(res.distinct) == [0, 1]
