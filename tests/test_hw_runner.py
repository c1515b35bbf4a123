"""run_vectors (twin and an emulated GPU) and verdict."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hw_runner import build, runner
from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS
from hw_runner.launch import CupyLauncher, parse_cuda_device
from smtmodel.vectors import VectorFile, make_header
from test_hw_fakes import EmuLauncher

ONE, TWO, THREE = "0x3c00", "0x4000", "0x4200"       # fp16


def fp16_file(cases, k=2, out="fp32", **extra):
    return VectorFile(make_header("fp16", out, out, k, **extra), cases)


def dot_cases():
    # d = c + a.b: (1*2 + 0) + 1 = 3 ; (2*2 + 0) + 0 = 4
    return [{"id": "x", "a": [ONE, "0x0000"], "b": [TWO, "0x0000"], "c": "0x3f800000"},
            {"id": "y", "a": [TWO, "0x0000"], "b": [TWO, THREE], "c": "0x00000000"}]


class FakeModel:
    """Stands in for a catalog model: exact dot product in float64, rounded to fp32."""

    id, in_fmt, c_fmt, out_fmt = "fake-exact", "fp16", "fp32", "fp32"

    def __init__(self):
        self.calls = []

    def evaluate(self, a, b, c):
        self.calls.append((a.shape, b.shape, c.shape, a.dtype))
        av = a.astype(np.uint16).view(np.float16).astype(np.float64)
        bv = b.astype(np.uint16).view(np.float16).astype(np.float64)
        cv = c.astype(np.uint32).view(np.float32).astype(np.float64)
        return (cv + (av * bv).sum(axis=1)).astype(np.float32).view(np.uint32).astype(np.uint64)


def test_twin_run_records_observed():
    vf, model = fp16_file(dot_cases()), FakeModel()
    rep = runner.run_vectors(vf, "twin:fake-exact", model_lookup=lambda mid: model)
    assert rep.key == "twin:fake-exact" and rep.kernel is None and rep.cases == 2
    assert [c["observed"]["twin:fake-exact"] for c in vf.cases] == ["0x40400000", "0x40800000"]
    assert model.calls == [((2, 2), (2, 2), (2,), np.uint64)]


def test_twin_format_mismatch_is_an_error():
    vf = fp16_file([], out="fp16")
    with pytest.raises(HarnessError, match="computes fp16 x fp16 \\+ fp32 -> fp32"):
        runner.run_vectors(vf, "twin:fake-exact", model_lookup=lambda mid: FakeModel())


def test_gpu_run_through_emulated_launcher():
    vf = fp16_file(dot_cases())
    emu = EmuLauncher(arch="sm_80", name="Emulated A100")
    rep = runner.run_vectors(vf, "cuda", launcher=emu, replicate=True)
    key = "Emulated A100 / sm_80 / mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert rep.key == key and rep.kernel == "mma_m16n8k16_f16_f32" and not rep.replicate_failures
    assert [c["observed"][key] for c in vf.cases] == ["0x40400000", "0x40800000"]
    assert vf.header["devices"][key] == {"kernel": "mma_m16n8k16_f16_f32", "replicate": True}


def test_gpu_run_chosen_kernel_and_batches():
    cases = dot_cases() * 5
    vf = fp16_file([dict(c, id=f"{c['id']}{i}") for i, c in enumerate(cases)])
    emu = EmuLauncher(arch="sm_90")
    rep = runner.run_vectors(vf, "cuda:0", launcher=emu, kernel="wgmma_m64n8k16_f16_f32", batch=3)
    assert emu.launches == 4 and rep.kernel == "wgmma_m64n8k16_f16_f32"
    assert [c["observed"][rep.key] for c in vf.cases] == ["0x40400000", "0x40800000"] * 5


def test_gpu_run_rejects_wrong_kernel_or_arch():
    vf = fp16_file(dot_cases())
    with pytest.raises(HarnessError, match="kernel mma_m16n8k8_tf32_f32 computes tf32"):
        runner.run_vectors(vf, "cuda", launcher=EmuLauncher(), kernel="mma_m16n8k8_tf32_f32")
    with pytest.raises(HarnessError, match="does not run on"):
        runner.run_vectors(vf, "cuda", launcher=EmuLauncher(arch="sm_80"), kernel="wgmma_m64n8k16_f16_f32")


def test_integer_tcgen05_is_refused_on_sm103_with_the_reason():
    """B300 (sm_103) has no .kind::i8: asking for it there is one error that says so."""
    vf = VectorFile(make_header("int8", "int32", "int32", 2),
                    [{"id": "c0", "a": ["0x01", "0x02"], "b": ["0x03", "0x04"], "c": "0x00000000"}])
    with pytest.raises(HarnessError, match=r"does not run on Emulated GPU \(sm_103\): no integer tcgen05 on sm_103"):
        runner.run_vectors(vf, "cuda", launcher=EmuLauncher(arch="sm_103"), kernel="tcgen05_m128n8k32_s8_s32")
    rep = runner.run_vectors(vf, "cuda", launcher=EmuLauncher(arch="sm_100"), kernel="tcgen05_m128n8k32_s8_s32")
    assert vf.cases[0]["observed"][rep.key] == "0x0000000b"          # 1*3 + 2*4, exact


def test_replicate_failure_is_recorded():
    vf = fp16_file(dot_cases())

    def corrupt(D):
        D[0, 0, 3, 3] = np.uint64(0x7FC00000)

    rep = runner.run_vectors(vf, "cuda", launcher=EmuLauncher(corrupt=corrupt), replicate=True)
    assert rep.replicate_failures == {"x": ["0x40400000", "0x7fc00000"]}
    assert vf.cases[0]["replicate_mismatch"][rep.key] == ["0x40400000", "0x7fc00000"]
    assert "replicate_mismatch" not in vf.cases[1]


def test_device_strings():
    assert parse_cuda_device("cuda") == 0 and parse_cuda_device("cuda:3") == 3
    with pytest.raises(HarnessError, match="bad device"):
        parse_cuda_device("gpu0")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_missing_cupy_is_a_clear_error():
    with pytest.raises(HarnessError, match="CuPy is not installed"):
        CupyLauncher(0)
    with pytest.raises(HarnessError, match="CuPy is not installed"):
        runner.run_vectors(fp16_file(dot_cases()), "cuda")


def test_missing_catalog_is_a_clear_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "smtmodel.catalog", None)        # import fails
    with pytest.raises(HarnessError, match="smtmodel.catalog is not available"):
        runner.default_model_lookup("x")


def test_verdict_counts_and_first_contradiction():
    cases = [
        {"id": "p", "a": [ONE], "b": [ONE], "c": "0x00000000",
         "expect": {"m1": "0x3f800000", "m2": "0x3f800000"},
         "observed": {"GPU A": "0x3f800000", "GPU B": "0x3f800000"}},
        {"id": "q", "a": [ONE], "b": [ONE], "c": "0x00000000",
         "expect": {"m1": "0x3f800000", "m2": "0x3f800001", "m3": "0x7fc00000"},
         "observed": {"GPU A": "0x3f800000", "GPU B": "0x7fffffff"}},
    ]
    vf = fp16_file(cases, k=1, models=["m1", "m2", "m4"])
    v = runner.verdict(vf)
    assert (v["m1"].matches, v["m1"].total) == (3, 4) and v["m1"].first_contradiction == "q"
    assert "on GPU B: expected 0x3f800000, observed 0x7fffffff" == v["m1"].detail
    assert (v["m2"].matches, v["m2"].total, v["m2"].status) == (2, 4, "refuted")
    assert (v["m3"].total, v["m3"].matches) == (2, 0)
    assert v["m4"].status == "untested"
    only_a = runner.verdict(vf, device="GPU A")
    assert only_a["m1"].status == "survives" and only_a["m1"].total == 2
    relaxed = runner.verdict(vf, device="GPU B", nan_equal=True)
    assert (relaxed["m3"].matches, relaxed["m3"].total) == (1, 1)        # 0x7fc00000 ~ 0x7fffffff
    vf.cases[0]["observed"]["twin:m2"] = "0x3f800000"
    assert runner.verdict(vf)["m1"].total == 4                           # twins are not evidence ...
    assert runner.verdict(vf, include_twins=True)["m1"].total == 5       # ... unless asked


def test_agree_nan_equal():
    assert runner.agree([0x7E00, 0x3C00], [0x7C01, 0x3C00], "fp16").tolist() == [False, True]
    assert runner.agree([0x7E00, 0x7C00], [0x7C01, 0xFC00], "fp16", nan_equal=True).tolist() == [True, False]


class _FakeCupy:
    """Just enough of CuPy's API for CupyLauncher, backed by NumPy and EmuLauncher."""

    def __init__(self, name=b"Fake H100", major=9, minor=0):
        from types import SimpleNamespace
        emu, self.launches = EmuLauncher(), []

        class Kernel:
            def __init__(k, name):
                k.name = name

            def __call__(k, grid, block, args):
                ga, gb, gc, gd, *scales, n, ch = args
                spec = next(s for s in KERNELS.values() if s.function == k.name)
                self.launches.append((k.name, grid, block, int(n), int(ch), len(scales)))
                gd[...] = emu.launch(spec, ga, gb, gc, *scales)

        class RawModule:
            def __init__(m, path):
                assert path.endswith(".cubin")

            def get_function(m, name):
                return Kernel(name)

        class Device:
            def __init__(d, i):
                pass

            def __enter__(d):
                return d

            def __exit__(d, *exc):
                return False

        err = type("CudaError", (Exception,), {})
        runtime = SimpleNamespace(getDeviceCount=lambda: 1, deviceSynchronize=lambda: None, CUDARuntimeError=err,
                                  getDeviceProperties=lambda i: {"name": name, "major": major, "minor": minor})
        self.cuda = SimpleNamespace(runtime=runtime, Device=Device, driver=SimpleNamespace(CUDADriverError=err))
        self.RawModule, self.asarray, self.asnumpy, self.empty_like = RawModule, np.asarray, np.asarray, np.empty_like


@pytest.mark.skipif(not (build.find_tool("nvcc") and (build.find_tool("cuobjdump") or build.find_tool("nvdisasm"))),
                    reason="nvcc or cuobjdump/nvdisasm not found")
def test_cupy_launcher_glue(monkeypatch, tmp_path):
    import sys
    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    vf = fp16_file(dot_cases() * 3)
    rep = runner.run_vectors(vf, "cuda:0")
    assert rep.key.startswith("Fake H100 / sm_90 / mma.sync.aligned.m16n8k16")
    assert [c["observed"][rep.key] for c in vf.cases] == ["0x40400000", "0x40800000"] * 3
    assert fake.launches == [("mmaprobe_mma_m16n8k16_f16_f32", (2,), (128,), 6, 1, 0)]
    runner.run_vectors(vf, "cuda", kernel="wgmma_m64n8k16_f16_f32")
    assert fake.launches[-1] == ("mmaprobe_wgmma_m64n8k16_f16_f32", (6,), (128,), 6, 1, 0)
    with pytest.raises(HarnessError, match="cuda:1 does not exist"):
        CupyLauncher(1)


@pytest.mark.skipif(not (build.find_tool("nvcc") and (build.find_tool("cuobjdump") or build.find_tool("nvdisasm"))),
                    reason="nvcc or cuobjdump/nvdisasm not found")
@pytest.mark.parametrize("major, minor, kernel, grid", [(12, 0, "mma_m16n8k32_mxf8f6f4_e4m3_f32", (1,)),
                                                        (10, 0, "tcgen05_m128n8k32_mxf8f6f4_e4m3_f32", (3,))])
def test_cupy_launcher_passes_block_scales(monkeypatch, tmp_path, major, minor, kernel, grid):
    """A block-scaled kernel gets its scale buffers after D (SASS-checked cubin for the sm_XXa
    target); a tcgen05 kernel runs one CTA per case. Exact small-integer cases with power-of-two
    scales (independent arithmetic in test_hw_fakes.small_int_cases)."""
    import sys
    from test_hw_fakes import small_int_cases
    fake = _FakeCupy(b"Fake Blackwell", major, minor)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    spec = KERNELS[kernel]
    a, b, c, want, scales = small_int_cases(spec, 3, 64)
    res = runner.run_on_device(CupyLauncher(0), spec, a, b, c, **scales)
    assert np.array_equal(res.d, want)
    assert fake.launches == [(spec.function, grid, (128,), 3, 2, 2)]
