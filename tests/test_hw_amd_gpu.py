"""On a real AMD CDNA GPU (marker ``gpu``; needs hip-python, ROCm and ld.lld; run with
``pytest -m gpu tests/test_hw_amd_gpu.py``): exact layout probes through every MFMA kernel the
device runs, single and chained over K, and CLFP step 1 (replicate mode). Skips cleanly where
any of them is missing."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hw_runner.amd.build import find_lld
from hw_runner.amd.kernels import MFMA_KERNELS
from hw_runner.errors import HarnessError
from hw_runner.mix import layout_probe
from hw_runner.runner import run_on_device
from smtmodel.sampling import validation_mix

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(importlib.util.find_spec("hip") is None, reason="hip-python is not installed"),
              pytest.mark.skipif(find_lld() is None, reason="no ld.lld to link the code objects")]


@pytest.fixture(scope="module")
def gpu():
    from hw_runner.amd.launch import HipLauncher
    try:
        return HipLauncher(0)
    except HarnessError as exc:
        pytest.skip(str(exc))


def _supported(gpu):
    return [s for s in MFMA_KERNELS.values() if s.supports(gpu.arch)]


def test_layout_probes_exact_on_every_kernel(gpu):
    assert _supported(gpu), f"no MFMA kernel runs on {gpu.arch}"
    for spec in _supported(gpu):
        for k in (spec.k, 2 * spec.k + 1):
            a, b, c, d = layout_probe(spec.in_fmt, spec.c_fmt, spec.out_fmt, k)
            res = run_on_device(gpu, spec, a, b, c)
            assert np.array_equal(res.d, d), f"{spec.id} k={k}: {int((res.d != d).sum())} probes wrong"


def test_clfp_step1_outputs_identical(gpu):
    for spec in _supported(gpu):
        a, b, c, _ = validation_mix(spec.in_fmt, spec.c_fmt, spec.k, 512, seed=11)
        res = run_on_device(gpu, spec, a, b, c, replicate=True)
        assert res.uniform.all(), f"{spec.id}: cases {sorted(res.distinct)[:5]} differ across D"
