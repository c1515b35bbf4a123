"""The harness subcommands, driven through ``mmaprobe``'s command line with an emulated GPU and a
fake model."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hw_runner import build, runner
from hw_runner.kernels import KERNELS, get_kernel
from mmaprobe.cli import main
from smtmodel.vectors import VectorFile, make_header, read_vectors, write_vectors
from test_hw_fakes import EmuLauncher


class ExactModel:
    """fp16 x fp16 + fp32 -> fp32, exact sum rounded once; ``flip_odd_c`` perturbs the answer of
    every case whose c has its lowest bit set (a deliberately wrong hypothesis)."""

    in_fmt, c_fmt, out_fmt = "fp16", "fp32", "fp32"

    def __init__(self, flip_odd_c=False):
        self.id = "exact-flip" if flip_odd_c else "exact"
        self.flip = flip_odd_c

    def evaluate(self, a, b, c):
        av = a.astype(np.uint16).view(np.float16).astype(np.float64)
        bv = b.astype(np.uint16).view(np.float16).astype(np.float64)
        with np.errstate(all="ignore"):
            cv = c.astype(np.uint32).view(np.float32).astype(np.float64)
            d = (cv + np.sum(av * bv, axis=1)).astype(np.float32).view(np.uint32).astype(np.uint64)
        if self.flip:
            d ^= (c & np.uint64(1))
        return d


@pytest.fixture
def env(monkeypatch):
    emu = EmuLauncher(arch="sm_80", name="Emulated A100")
    monkeypatch.setattr(runner, "make_launcher", lambda device, check_sass=True: emu)
    models = {m.id: m for m in (ExactModel(), ExactModel(flip_odd_c=True))}
    monkeypatch.setattr(runner, "default_model_lookup", lambda mid: models[mid])
    return emu


def small_file(path, n=6):
    rng = np.random.default_rng(0)
    cases = []
    for i in range(n):
        a = rng.integers(-3, 4, 4).astype(np.float16).view(np.uint16)
        b = rng.integers(-3, 4, 4).astype(np.float16).view(np.uint16)
        c = np.float32(rng.integers(-3, 4)).view(np.uint32)
        cases.append({"id": f"c{i}", "a": [f"0x{x:04x}" for x in a], "b": [f"0x{x:04x}" for x in b],
                      "c": f"0x{int(c):08x}"})
    write_vectors(path, VectorFile(make_header("fp16", "fp32", "fp32", 4), cases))
    return path


def test_harness_list_without_build(capsys):
    assert main(["harness", "list", "--no-build"]) == 0
    out = capsys.readouterr().out
    for kid in KERNELS:
        assert kid in out
    assert "QGMMA.64x8x32.F32.E4M3.E4M3" in out and "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64" in out


def test_harness_list_ends_with_the_catalog_coverage(capsys, monkeypatch):
    """The counts come from the catalog and the build rows: with every (kernel, arch) row "ok"
    but volta's skipped and one Hopper fp16 kernel failed, volta and the Hopper models whose
    only checked kernel failed are named with the row's status; --no-build counts the mapping."""
    from hw_runner.coverage import catalog_models
    models = catalog_models(("nvidia",))
    rows = []
    for spec in KERNELS.values():
        for arch in build.check_archs(spec):
            st = ("skipped: toolchain lacks sm_70" if arch == "sm_70" else
                  "failed: no instruction matches X" if spec.id == "mma_m16n8k16_f16_f32" else "ok")
            rows.append(build.BuildRow(spec, arch, arch, st))
    monkeypatch.setattr(build, "build", lambda check=True: rows)
    assert main(["harness", "list", "--vendor", "nvidia"]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("catalog models with a kernel whose SASS/ISA check passed here:"):].splitlines()
    counts = dict(re.findall(r"^  (\S+)\s+(?:sm_\d+|gfx\w+)\s+(\d+/\d+)", "\n".join(tail), re.M))
    n_volta = sum(m.arch == "volta" for m in models)
    assert counts["volta"] == f"0/{n_volta}" and "gfx" not in out.split("catalog models")[-1]
    assert "volta-fp16-fp32: mma_m8n8k4_f16_f32 on sm_70: skipped: toolchain lacks sm_70" in out
    # named: exactly the models all of whose kernels on their target are skipped or failed
    want = {m.id for m in models
            if all(k == "mma_m16n8k16_f16_f32" or m.sm == 70 for k in m.kernels
                   if get_kernel(k).supports(f"sm_{m.sm}"))}
    named = set(re.findall(r"^  (\S+): ", out[out.index("without one:"):], re.M))
    assert named == want and any(m.startswith("volta") for m in want)
    hopper = [m for m in models if m.arch == "hopper"]
    emulated = sum(1 for m in hopper if m.in_fmt in ("int4", "uint4"))
    assert counts["hopper"] == f"{len(hopper)}/{len(hopper)}" and f"({emulated} through an emulating lowering)" in out
    assert main(["harness", "list", "--vendor", "nvidia", "--no-build"]) == 0
    out = capsys.readouterr().out
    assert "(not built: --no-build)" in out and "without one:" not in out
    assert re.search(rf"^  all\s+{len(models)}/{len(models)}$", out, re.M)       # every model names a runnable kernel


def test_coverage_reasons():
    """Each reason a model lacks a checked kernel, on synthetic build rows."""
    from dataclasses import replace

    from hw_runner.coverage import coverage
    from smtmodel.catalog import get_model
    m = get_model("ampere-fp16-fp32")
    spec = get_kernel(m.kernels[0])
    ok = build.BuildRow(spec, "sm_80", "sm_80", "ok")
    bad = build.BuildRow(spec, "sm_80", "sm_80", "failed: no instruction matches HMMA")
    one = replace(m, kernels=m.kernels[:1])

    def why(model, rows):
        (c,) = coverage([model], rows)
        return c.missing.get(model.id)
    assert why(one, [ok]) is None
    assert why(one, [bad]) == f"{spec.id} on sm_80: failed: no instruction matches HMMA"
    assert why(one, []) == f"{spec.id} on sm_80: not built"
    assert why(one, None) is None                                   # nothing built: the mapping is what counts
    assert why(replace(m, sm=70, kernels=m.kernels[:1]), None) == f"its kernels ({spec.id}) do not run on sm_70"
    assert why(replace(m, kernels=()), [ok]) == "names no harness kernel"
    assert why(replace(m, kernels=("nope",)), [ok]) == "names kernels the registry lacks: nope"
    assert why(replace(m, sm=70, kernels=m.kernels[:1]), [ok]) == f"its kernels ({spec.id}) do not run on sm_70"
    wg = build.BuildRow(get_kernel("wgmma_m64n8k16_f16_f32"), "sm_90a", "sm_90a", "ok")
    assert why(get_model("hopper-fp16-fp32"), [wg]) is None          # sm_90a rows count for sm 90


def test_harness_build_reports_and_fails_on_failure(capsys, monkeypatch):
    spec = get_kernel("mma_m16n8k16_f16_f32")
    rows = [build.BuildRow(spec, "sm_80", "sm_80", "ok", ["HMMA.16816.F32"]),
            build.BuildRow(spec, "sm_70", "sm_70", "skipped: toolchain lacks sm_70")]
    monkeypatch.setattr(build, "build", lambda check=True: rows)
    assert main(["harness", "build", "--check-sass", "--vendor", "nvidia"]) == 0
    out = capsys.readouterr().out
    assert "[HMMA.16816.F32]" in out and "1 ok, 1 skipped" in out
    rows.append(build.BuildRow(spec, "sm_90", "sm_90", "failed: no instruction matches X"))
    assert main(["harness", "build", "--vendor", "nvidia"]) == 1


def test_run_twin_then_gpu_then_verdict(tmp_path, env, capsys):
    f = small_file(tmp_path / "v.jsonl")
    out = tmp_path / "o.jsonl.gz"
    assert main(["run", str(f), "--device", "twin:exact", "-o", str(out)]) == 0
    assert main(["run", str(out), "--device", "cuda", "-o", str(out), "--replicate"]) == 0
    vf = read_vectors(out)
    key = "Emulated A100 / sm_80 / mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert all(c["observed"]["twin:exact"] == c["observed"][key] for c in vf.cases)
    for case in vf.cases:
        case["expect"] = {"right": case["observed"]["twin:exact"], "wrong": "0x7f800000"}
    write_vectors(out, vf)
    capsys.readouterr()
    assert main(["verdict", str(out)]) == 0
    text = capsys.readouterr().out
    assert "6/6" in text and "survives" in text and "refuted" in text      # twin outputs left out
    assert "surviving hypotheses: right" in text
    assert main(["verdict", str(out), "--include-twins"]) == 0
    assert "12/12" in capsys.readouterr().out


def test_verify_writes_mismatches(tmp_path, env, capsys):
    out = tmp_path / "mism.jsonl"
    # --nan-equal: the emulator and the model disagree on NaN payloads, as real GPUs do
    rc = main(["verify", "exact-flip", "--device", "cuda", "--cases", "200", "--seed", "1", "--nan-equal",
               "-o", str(out)])
    text = capsys.readouterr().out
    vf = read_vectors(out)
    assert rc == 1 and "layout self-test: 256/256" in text and len(vf.cases) > 0
    assert vf.header["models"] == ["exact-flip"] and vf.header["source"]["kernel"] == "mma_m16n8k16_f16_f32"
    for case in vf.cases:
        (obs,) = case["observed"].values()
        assert case["expect"]["exact-flip"] != obs and case["kind"] in ("normal", "wide", "cancel", "raw")
        assert int(case["c"], 16) & 1                       # only the deliberately wrong answers


def test_verify_stops_on_failed_layout_probe(tmp_path, env, capsys):
    def corrupt(D):
        D[:, 0, 0, 0] ^= np.uint64(1)

    env.corrupt = corrupt
    rc = main(["verify", "exact", "--device", "cuda", "--cases", "10", "-o", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("mmaprobe: error: layout self-test failed") and err.count("\n") == 1


def test_matlab_export_import_cli(tmp_path, env, capsys):
    f = small_file(tmp_path / "v.jsonl")
    assert main(["run", str(f), "--device", "twin:exact", "-o", str(f)]) == 0
    assert main(["export-matlab", str(f), "--gpu", "T4", "-o", str(tmp_path / "m")]) == 0
    assert (tmp_path / "m" / "d_T4_fp32.txt").exists()
    back = tmp_path / "back.jsonl"
    assert main(["import-matlab", str(tmp_path / "m"), "--gpu", "T4", "--in", "fp16", "--out", "fp32",
                 "-o", str(back)]) == 0
    x, y = read_vectors(f), read_vectors(back)
    assert [(c["a"], c["b"], c["c"], c["observed"]["twin:exact"]) for c in x.cases] == \
           [(c["a"], c["b"], c["c"], c["observed"]["T4"]) for c in y.cases]


def test_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.jsonl"), "--device", "cuda", "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mmaprobe: error: ") and err.count("\n") == 1 and "Traceback" not in err
    (tmp_path / "bad.jsonl").write_text('{"kind": "other"}\n')
    assert main(["verdict", str(tmp_path / "bad.jsonl")]) == 2
    f = small_file(tmp_path / "v.jsonl")
    assert main(["run", str(f), "--device", "tpu", "-o", str(tmp_path / "o")]) == 2
    assert "bad device 'tpu'" in capsys.readouterr().err
