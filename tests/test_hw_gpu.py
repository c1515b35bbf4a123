"""On a real GPU (marker ``gpu``; needs CuPy and a CUDA device, run with ``pytest -m gpu``):
exact layout probes through every kernel the device runs, CLFP step 1 (replicate mode), and
the ../shared/hwdata captures of the same GPU model reproduced bit for bit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hw_runner.kernels import KERNELS, get_kernel
from hw_runner.mix import layout_probe
from smtmodel.sampling import validation_mix
from hw_runner.runner import run_on_device

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed")]

HWDATA = Path(__file__).resolve().parents[1].parent / "shared" / "hwdata"
# hwdata set (by GPU-name fragment and file prefix) -> the kernel running the captured instruction
# (../shared/hwdata/INDEX.txt; wmma m16n16k8 tf32 is HMMA m16n8k4 on Hopper, seed 001 §IV-A5)
CAPTURES = {
    "H100": ("h100", {"fp16_fp32": "mma_m16n8k16_f16_f32", "fp16_fp16": "mma_m16n8k16_f16_f16",
                      "bf16_fp32": "mma_m16n8k16_bf16_f32", "tf32_fp32": "mma_m16n8k4_tf32_f32",
                      "fp8e4m3_fp32": "wgmma_m64n8k32_e4m3_f32", "fp8e5m2_fp16": "wgmma_m64n8k32_e5m2_f16"}),
    "H200": ("h200", {"fp16_fp32": "mma_m16n8k16_f16_f32", "fp8e4m3_fp32": "wgmma_m64n8k32_e4m3_f32"}),
    "A100": ("a100", {"fp16_fp32": "mma_m16n8k16_f16_f32", "bf16_fp32": "mma_m16n8k16_bf16_f32",
                      "tf32_fp32": "mma_m16n8k4_tf32_f32"}),
    "B200": ("b200", {"fp16_fp32": "mma_m16n8k16_f16_f32", "fp8e4m3_fp32": "mma_m16n8k32_e4m3_f32"}),
    "L40S": ("l40s", {"fp16_fp32": "mma_m16n8k16_f16_f32", "fp8e4m3_fp32": "mma_m16n8k32_e4m3_f32"}),
}


@pytest.fixture(scope="module")
def gpu():
    from hw_runner.launch import CupyLauncher
    return CupyLauncher(0)


def _supported(gpu):
    return [s for s in KERNELS.values() if s.supports(gpu.arch)]


def test_layout_probes_exact_on_every_kernel(gpu):
    assert _supported(gpu), f"no kernel runs on {gpu.arch}"
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


def test_reproduces_hwdata_captures(gpu):
    from smtmodel.vectors import read_vectors
    hit = next((v for k, v in CAPTURES.items() if k in gpu.name), None)
    if hit is None or not HWDATA.is_dir():
        pytest.skip(f"no hwdata capture for {gpu.name}")
    prefix, sets = hit
    for name, kid in sets.items():
        vf = read_vectors(HWDATA / f"{prefix}_{name}.jsonl.gz")
        (want_key,) = vf.cases[0]["observed"]
        a, b, c = vf.arrays()
        res = run_on_device(gpu, get_kernel(kid), a, b, c)
        want = np.array([int(x["observed"][want_key], 16) for x in vf.cases], dtype=np.uint64)
        assert np.array_equal(res.d, want), f"{name} via {kid}: {int((res.d != want).sum())} of {len(want)} differ"
