"""Blackwell kernels -- RTX Blackwell (sm_120a) block-scaled and FP6/FP4 ``mma.sync``, sm_100a
``tcgen05.mma`` of every kind, the FP8 and fp64 ``mma.sync`` kernels on B300 (sm_103) -- and the
4-bit IMMA kernels: each through the twin launcher (the kernel's own buffers, answered by its catalog model)
in single and replicate mode, and block-scaled vector files through ``run`` (scales passed,
missing or mismatched scales refused with one line). Expected outputs come from the catalog
model evaluated directly on the padded case (an independent path: no packing involved)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner import runner
from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS, default_kernel, get_kernel, kernels_for
from hw_runner.runner import run_on_device
from hw_runner.twin_launcher import TwinLauncher, catalog_answer
from mmaprobe.cli import main
from smtmodel.catalog import get_model, model_for_kernel
from smtmodel.formats import get_format
from smtmodel.sampling import validation_mix
from smtmodel.vectors import VectorFile, make_header, write_vectors


NEW = sorted(k for k, s in KERNELS.items() if s.kind or s.in_fmt in ("int4", "uint4"))
MODELLED = [k for k in NEW if model_for_kernel(k, int(KERNELS[k].arch[3:])) is not None]
ARCH_NAME = {"sm_100": "blackwell", "sm_120": "rtx-blackwell"}


def _scales(spec, n, k, rng):
    """Random raw scale patterns (every pattern of the format, NaN encodings included)."""
    if not spec.block_scaled:
        return {}
    w = get_format(spec.scale_fmt).width
    s = -(-k // spec.scale_block)
    return {"a_scale": rng.integers(0, 1 << w, (n, s)).astype(np.uint64),
            "b_scale": rng.integers(0, 1 << w, (n, s)).astype(np.uint64)}


def _padded(x, width):
    return np.hstack([x, np.zeros((x.shape[0], width - x.shape[1]), np.uint64)])


def test_every_new_kernel_has_a_model_where_the_catalog_describes_one():
    """The sm_120 and tcgen05 kernels all map to (RTX) Blackwell models, apart from the FP6/FP4
    mixes of the unscaled kind::f8f6f4 (overrides, not catalog models)."""
    unmodelled = set(NEW) - set(MODELLED)
    assert all(KERNELS[k].kind == "f8f6f4" and KERNELS[k].b_fmt for k in unmodelled), unmodelled
    assert model_for_kernel("mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32", 120).id == "rtx-blackwell-fp4e2m1-fp32-nvfp4"
    assert model_for_kernel("mma_m16n8k64_mxf4_e2m1_f32", 120).id == "rtx-blackwell-fp4e2m1-fp32-mxgst"
    assert model_for_kernel("mma_m16n8k32_mxf8f6f4_e2m1e4m3_f32", 120).id == \
        "rtx-blackwell-fp4e2m1xfp8e4m3-fp32-mx"
    assert model_for_kernel("mma_m16n8k32_e3m2_f16", 120).id == "rtx-blackwell-fp6e3m2-fp16"
    assert model_for_kernel("mma_m16n8k64_s4_s32_sat", 89).id == "ada-s4-s32-satfinite"
    assert model_for_kernel("mma_m8n8k32_u4_s32", 75).id == "turing-u4-s32"
    assert model_for_kernel("mma_m16n8k64_s4_s32_sat", 90).id == "hopper-s4-s32-satfinite"
    assert model_for_kernel("mma_m8n8k32_u4_s32", 90).id == "hopper-u4-s32"
    assert model_for_kernel("mma_m16n8k32_mxf8f6f4_e4m3_f32", 100) is None     # sm_120a only
    assert model_for_kernel("tcgen05_m128n8k32_mxf8f6f4_e4m3_f32", 100).id == "blackwell-fp8e4m3-fp32-mx"
    assert model_for_kernel("tcgen05_m128n8k16_bf16_f32", 100).id == "blackwell-bf16-fp32"
    assert model_for_kernel("tcgen05_m128n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32", 100).id == \
        "blackwell-fp4e2m1-fp32-nvfp4"


@pytest.mark.parametrize("kid", MODELLED)
def test_twin_launcher_round_trip_single_and_replicate(kid):
    """The case through the kernel's buffers and back (two chunks, the last one padded) gives the
    model's own answer on the padded case, in single mode and (all of D) in replicate mode."""
    spec = KERNELS[kid]
    arch = spec.arch
    model = model_for_kernel(kid, int(arch[3:]))
    rng = np.random.default_rng(3)
    blk = spec.scale_block or 1
    k = spec.k + blk                                     # one full chunk and a padded one
    fa, fb = spec.operand_fmts
    a, b, c, _ = validation_mix(fa, spec.c_fmt, k, 12, 5, b_fmt=fb)
    sc = _scales(spec, 12, k, rng)
    launcher = TwinLauncher(arch, catalog_answer(arch), jobs=1)
    want_sc = {key: _padded(v, 2 * spec.scale_vec) for key, v in sc.items()}
    want = model.evaluate(_padded(a, 2 * spec.k), _padded(b, 2 * spec.k), c, **want_sc, jobs=1)
    single = run_on_device(launcher, spec, a, b, c, **sc)
    assert np.array_equal(single.d, want)
    rep = run_on_device(launcher, spec, a, b, c, replicate=True, **sc)
    assert np.array_equal(rep.d, want) and rep.uniform.all() and not rep.distinct


@pytest.mark.parametrize("kid", sorted(k for k, s in KERNELS.items() if s.emulated_from == "sm_90"))
def test_hopper_4bit_round_trip_through_its_emulation(kid):
    """The 4-bit kernels on sm_90 (nvcc's 8-bit emulation) answered by the Hopper models: a full
    chunk and a padded one, single and replicate mode, against the model on the padded case."""
    spec = KERNELS[kid]
    model = model_for_kernel(kid, 90)
    assert model.arch == "hopper" and model.saturate == spec.satfinite
    a, b, c, _ = validation_mix(spec.in_fmt, spec.c_fmt, spec.k + 5, 10, 4)
    want = model.evaluate(_padded(a, 2 * spec.k), _padded(b, 2 * spec.k), c, jobs=1)
    launcher = TwinLauncher("sm_90", catalog_answer("sm_90"), jobs=1)
    assert np.array_equal(run_on_device(launcher, spec, a, b, c).d, want)
    rep = run_on_device(launcher, spec, a, b, c, replicate=True)
    assert np.array_equal(rep.d, want) and rep.uniform.all()


B300_MMA_SYNC = sorted(k for k, s in KERNELS.items() if s.family == "mma" and s.in_fmt in ("fp8e4m3", "fp8e5m2", "fp64")
                       and not s.kind)


@pytest.mark.parametrize("kid", B300_MMA_SYNC)
def test_b300_mma_sync_round_trip_answered_by_its_alias(kid):
    """The FP8 and fp64 mma.sync kernels on sm_103 (B300): the catalog answers with the
    blackwell-ultra alias, whose bits are its B200 model's (smtmodel.catalog.aliases); a full chunk
    and a padded one, single and replicate mode, against the B200 model on the padded case."""
    spec = KERNELS[kid]
    alias, b200 = model_for_kernel(kid, 103), model_for_kernel(kid, 100)
    assert alias.arch == "blackwell-ultra" and alias.id == b200.id.replace("blackwell-", "blackwell-ultra-", 1)
    fa, fb = spec.operand_fmts
    a, b, c, _ = validation_mix(fa, spec.c_fmt, spec.k + 3, 10, 7, b_fmt=fb)
    want = b200.evaluate(_padded(a, 2 * spec.k), _padded(b, 2 * spec.k), c, jobs=1)
    launcher = TwinLauncher("sm_103", catalog_answer("sm_103"), jobs=1)
    assert np.array_equal(run_on_device(launcher, spec, a, b, c).d, want)
    rep = run_on_device(launcher, spec, a, b, c, replicate=True)
    assert np.array_equal(rep.d, want) and rep.uniform.all() and not rep.distinct


@pytest.mark.parametrize("kid", [k for k in NEW if k not in MODELLED][::5])
def test_twin_launcher_round_trip_of_override_mixes(kid):
    """The kind::f8f6f4 FP6/FP4 mixes have no catalog model but an override of A's model
    (``rtx-blackwell-fp6e3m2-fp32:b_fmt=fp4e2m1``): the same round trip, answered by it."""
    spec = KERNELS[kid]
    fa, fb = spec.operand_fmts
    model = get_model(f"{ARCH_NAME[spec.arch]}-{fa}-{spec.out_fmt}:b_fmt={fb}")
    a, b, c, _ = validation_mix(fa, spec.c_fmt, spec.k + 5, 10, 6, b_fmt=fb)
    d = run_on_device(TwinLauncher(spec.arch, lambda s: model, jobs=1), spec, a, b, c, replicate=True)
    want = model.evaluate(_padded(a, 2 * spec.k), _padded(b, 2 * spec.k), c, jobs=1)
    assert np.array_equal(d.d, want) and d.uniform.all()


def test_twin_launcher_replicate_reports_a_wrong_entry():
    """A stand-in whose D differs in one entry is caught by replicate mode, as a GPU would be."""
    spec = get_kernel("mma_m16n8k32_mxf8f6f4_e4m3_f32")

    class Broken(TwinLauncher):
        def launch(self, spec, *bufs):
            d = super().launch(spec, *bufs)
            d[:, 5, 1] ^= np.uint32(1)
            return d

    a, b, c, _ = validation_mix("fp8e4m3", "fp32", 32, 4, 1)
    sc = _scales(spec, 4, 32, np.random.default_rng(0))
    res = run_on_device(Broken("sm_120", jobs=1), spec, a, b, c, replicate=True, **sc)
    assert not res.uniform.any() and len(res.distinct) == 4


def _mx_file(n=4, k=64, scale_fmt="e8m0", block=32, fmt="fp8e4m3", with_scales=True):
    rng = np.random.default_rng(9)
    a, b, c, _ = validation_mix(fmt, "fp32", k, n, 2)
    fi, fc, fs = get_format(fmt), get_format("fp32"), get_format(scale_fmt)
    cases = []
    for i in range(n):
        case = {"id": f"s{i}", "a": [fi.hex(int(x)) for x in a[i]], "b": [fi.hex(int(x)) for x in b[i]],
                "c": fc.hex(int(c[i]))}
        if with_scales:
            case["a_scale"] = [fs.hex(int(x)) for x in rng.integers(100, 150, k // block)]
            case["b_scale"] = [fs.hex(int(x)) for x in rng.integers(100, 150, k // block)]
        cases.append(case)
    extra = {"scale_fmt": scale_fmt, "scale_block": block} if with_scales else {}
    return VectorFile(make_header(fmt, "fp32", "fp32", k, **extra), cases)


def test_block_scaled_file_through_twin_and_device_agree():
    """The twin model and the kernel (twin launcher on sm_120, default kernel chosen by the
    file's scales) record the same outputs; both take the file's scales."""
    vf = _mx_file()
    tw = runner.run_vectors(vf, "twin:rtx-blackwell-fp8e4m3-fp32-mx", twin={"jobs": 1})
    dev = runner.run_vectors(vf, "cuda", launcher=TwinLauncher("sm_120", name="Twin 5090", jobs=1))
    assert dev.kernel == "mma_m16n8k32_mxf8f6f4_e4m3_f32"
    assert dev.key == "Twin 5090 / sm_120 / " + KERNELS[dev.kernel].ptx
    outs = [(cs["observed"][tw.key], cs["observed"][dev.key]) for cs in vf.cases]
    assert all(x == y for x, y in outs)
    sa, sb = vf.scales()
    a, b, c = vf.arrays()
    want = get_model("rtx-blackwell-fp8e4m3-fp32-mx").evaluate(a, b, c, a_scale=sa, b_scale=sb, jobs=1)
    assert [o for o, _ in outs] == [get_format("fp32").hex(int(x)) for x in want]


def test_default_kernel_follows_the_scales():
    assert default_kernel("fp4e2m1", "fp32", "fp32", "sm_120", scale=("ue4m3", 16)).id == \
        "mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32"
    assert default_kernel("fp4e2m1", "fp32", "fp32", "sm_120", scale=("e8m0", 32)).id in (
        "mma_m16n8k64_mxf4_e2m1_f32", "mma_m16n8k64_mxf4nvf4_2x_ue8m0_e2m1_f32")
    assert default_kernel("fp4e2m1", "fp32", "fp32", "sm_120").id == "mma_m16n8k32_e2m1_f32"   # unscaled
    assert not kernels_for("fp8e4m3", "fp32", "fp32", "sm_89", scale=("e8m0", 32))
    assert default_kernel("fp6e2m3", "fp32", "fp32", "sm_100", scale=("e8m0", 32)).id == \
        "tcgen05_m128n8k32_mxf8f6f4_e2m3_f32"
    assert default_kernel("fp8e4m3", "fp32", "fp32", "sm_100").id == "mma_m16n8k32_e4m3_f32"     # mma.sync first
    with pytest.raises(HarnessError, match="no kernel computes fp6e2m3 inputs and e8m0 scales per 32"):
        default_kernel("fp6e2m3", "fp32", "fp32", "sm_90", scale=("e8m0", 32))


@pytest.mark.parametrize("how, match", [
    ("no-scales-twin", "block-scaled .*the cases need a_scale and b_scale"),
    ("no-scales-kernel", "block-scaled .*the cases need a_scale and b_scale"),
    ("scales-unscaled-kernel", "takes no block scales"),
    ("scales-unscaled-model", "takes no block scales"),
    ("wrong-scale-format", "takes ue4m3 scales, one per 16 products, but the file has e8m0 scales per 32"),
])
def test_scale_mismatches_are_one_clear_error(how, match):
    tl = TwinLauncher("sm_120", jobs=1)
    with pytest.raises(HarnessError, match=match):
        if how == "no-scales-twin":
            runner.run_vectors(_mx_file(with_scales=False), "twin:rtx-blackwell-fp8e4m3-fp32-mx")
        elif how == "no-scales-kernel":
            runner.run_vectors(_mx_file(with_scales=False), "cuda", launcher=tl,
                               kernel="mma_m16n8k32_mxf8f6f4_e4m3_f32")
        elif how == "scales-unscaled-kernel":
            runner.run_vectors(_mx_file(), "cuda", launcher=tl, kernel="mma_m16n8k32_e4m3_f32")
        elif how == "scales-unscaled-model":
            runner.run_vectors(_mx_file(), "twin:rtx-blackwell-fp8e4m3-fp32")
        else:
            runner.run_vectors(_mx_file(fmt="fp4e2m1"), "cuda", launcher=tl,
                               kernel="mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32")


def test_cli_run_without_scales_is_one_line(tmp_path, capsys):
    f = tmp_path / "noscale.jsonl"
    write_vectors(f, _mx_file(with_scales=False))
    out = tmp_path / "out.jsonl"
    assert main(["run", str(f), "--device", "twin:rtx-blackwell-fp8e4m3-fp32-mx", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error:") and "a_scale and b_scale" in err[0]
    assert not out.exists()


def test_verify_block_scaled_model_draws_scales(tmp_path, capsys, monkeypatch):
    """``verify`` of a block-scaled model draws scales of every kind beside the validation mix:
    its own twin agrees on every case; through the sm_120a kernel (the twin launcher, answered by
    a model with F = 24 instead of the catalog's 25) the mismatches are written with their scales
    and re-evaluate to the rival's bits (expected: the rival model evaluated directly)."""
    out = tmp_path / "self.jsonl"
    assert main(["verify", "rtx-blackwell-fp8e4m3-fp32-mx", "--device", "twin:rtx-blackwell-fp8e4m3-fp32-mx",
                 "--cases", "700", "-o", str(out)]) == 0
    assert "0 mismatches in 700 cases" in capsys.readouterr().out
    rival = get_model("rtx-blackwell-fp8e4m3-fp32-mx:F=24")
    monkeypatch.setattr(runner, "make_launcher", lambda device, check_sass=True:
                        TwinLauncher("sm_120", lambda spec: rival, jobs=1))
    out = tmp_path / "rival.jsonl"
    assert main(["verify", "rtx-blackwell-fp8e4m3-fp32-mx", "--device", "cuda", "--cases", "700",
                 "-o", str(out)]) == 1
    text = capsys.readouterr().out
    assert "layout self-test" in text and "mismatches in 700 cases" in text
    from smtmodel.vectors import read_vectors
    vf = read_vectors(out)
    assert vf.header["source"]["kernel"].startswith("mma_m16n8k32_mxf8f6f4")
    assert vf.header["scale_fmt"] == "e8m0" and vf.header["scale_block"] == 32 and vf.cases
    fi, fs = get_format("fp8e4m3"), get_format("e8m0")
    for case in vf.cases[:20]:
        a = np.array([[fi.parse_hex(x) for x in case["a"]]], np.uint64)
        b = np.array([[fi.parse_hex(x) for x in case["b"]]], np.uint64)
        c = np.array([get_format("fp32").parse_hex(case["c"])], np.uint64)
        sc = {k: np.array([[fs.parse_hex(x) for x in case[k]]], np.uint64) for k in ("a_scale", "b_scale")}
        got = rival.evaluate(a, b, c, **sc)[0]
        assert int(got) == get_format("fp32").parse_hex(next(iter(case["observed"].values())))
