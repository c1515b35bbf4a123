"""``run``, ``verdict``, ``verify`` and ``identify`` with ``--device rocm`` through the command line,
the AMD GPU replaced by the twin MFMA stand-in of test_hw_amd_fakes (a CDNA unit computing as a
catalog model), and the ready-to-run seed 003 files of generated_tests/amd-seed003."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hw_runner import runner
from mmaprobe.cli import main
from smtmodel.catalog import get_model
from smtmodel.vectors import read_vectors
from test_hw_amd_fakes import TwinLauncher

SEED003 = Path(__file__).resolve().parents[1] / "generated_tests" / "amd-seed003"


@pytest.fixture
def rocm(monkeypatch):
    """``--device rocm`` answers as the model and gfx given to ``use``."""
    made = []

    def use(model_id, gfx, name="AMD Instinct (twin)"):
        gpu = TwinLauncher(get_model(model_id), gfx)
        gpu.name = name
        monkeypatch.setattr(runner, "make_launcher", lambda device, check_sass=True: made.append(device) or gpu)
        return gpu
    use.devices = made
    return use


@pytest.mark.parametrize("name, gpu_model, gfx, kernel, survivor", [
    ("cdna1-fp16-fp32__vs__cdna1-fp16-fp32-pairwise", "cdna1-fp16-fp32", "gfx908",
     "v_mfma_f32_32x32x8f16", "cdna1-fp16-fp32"),
    ("cdna1-bf16-fp32__vs__cdna1-bf16-fp32-pairwise", "cdna1-bf16-fp32-pairwise", "gfx908",
     "v_mfma_f32_32x32x4bf16", "cdna1-bf16-fp32-pairwise"),
    ("cdna2-fp16-fp32__vs__cdna1-fp16-fp32", "cdna2-fp16-fp32", "gfx90a", "v_mfma_f32_32x32x8f16", "cdna2-fp16-fp32"),
    ("cdna2-bf16-fp32__vs__cdna1-bf16-fp32", "cdna2-bf16-fp32", "gfx90a", "v_mfma_f32_32x32x8bf16_1k",
     "cdna2-bf16-fp32"),
])
def test_seed003_files_run_and_judge(tmp_path, rocm, capsys, name, gpu_model, gfx, kernel, survivor):
    """The documented command on a stand-in MI100/MI250X that computes as ``gpu_model``: the
    verdict keeps exactly that reading (the files split the two on every case)."""
    rocm(gpu_model, gfx, name="AMD Instinct MI250X" if gfx == "gfx90a" else "AMD Instinct MI100")
    out = tmp_path / "observed.jsonl"
    assert main(["run", str(SEED003 / f"{name}.jsonl"), "--device", "rocm", "-o", str(out)]) == 0
    vf = read_vectors(out)
    key = next(iter(vf.cases[0]["observed"]))
    assert key.endswith(f" / {gfx} / {kernel}"), key
    assert main(["verdict", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"surviving hypotheses: {survivor}\n" in text
    assert "refuted" in text


def test_verify_on_rocm_passes_the_layout_probe_and_finds_no_mismatch(tmp_path, rocm, capsys):
    rocm("cdna3-bf16-fp32", "gfx942", name="AMD Instinct MI300X")
    out = tmp_path / "v.jsonl"
    assert main(["verify", "cdna3-bf16-fp32", "--device", "rocm:0", "--cases", "200", "-o", str(out),
                 "--workers", "0"]) == 0
    text = capsys.readouterr().out
    assert "layout self-test: 64/64 exact probes correct" in text
    assert "cdna3-bf16-fp32 vs AMD Instinct MI300X / gfx942 / v_mfma_f32_32x32x8_bf16: 0 mismatches" in text
    assert read_vectors(out).header["source"]["kernel"] == "mfma_f32_32x32x8_bf16_1k"


def test_verify_finds_a_rival_on_rocm(tmp_path, rocm, capsys):
    """MI100 computing pairwise fp32 (the rival) against seed 000's E-FDPA: mismatches, exit 1."""
    rocm("cdna1-fp16-fp32-pairwise", "gfx908")
    out = tmp_path / "v.jsonl"
    assert main(["verify", "cdna1-fp16-fp32", "--device", "rocm", "--cases", "200", "-o", str(out),
                 "--workers", "0"]) == 1
    assert read_vectors(out).cases


def test_rocm_errors_are_one_line_exit_2(tmp_path, capsys):
    """No hip-python here: one line naming what is missing, exit 2, no output file."""
    out = tmp_path / "o.jsonl"
    f = SEED003 / "cdna1-fp16-fp32__vs__cdna1-fp16-fp32-pairwise.jsonl"
    pytest.importorskip("numpy")
    try:
        import hip  # noqa: F401
        pytest.skip("hip-python is installed")
    except ImportError:
        pass
    assert main(["run", str(f), "--device", "rocm", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error: hip-python is not installed")
    assert not out.exists()
    assert main(["run", str(f), "--device", "rocm:x", "-o", str(out)]) == 2
    assert "bad device 'rocm:x'" in capsys.readouterr().err and not out.exists()
    assert main(["harness", "build", "--gfx", "gfx1100"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "unknown gfx target 'gfx1100'" in cap.err


def test_model_without_an_amd_kernel_is_one_line(tmp_path, rocm, capsys):
    rocm("cdna3-fp16-fp32", "gfx942")
    out = tmp_path / "v.jsonl"
    assert main(["verify", "hopper-fp8e4m3-fp32", "--device", "rocm", "--cases", "10", "-o", str(out)]) == 2
    assert "no kernel computes fp8e4m3 inputs with fp32 c -> fp32 on gfx942" in capsys.readouterr().err
    assert not out.exists()


def test_identify_device_on_rocm(rocm):
    """``identify --device rocm``: the harness's device adapter runs D[0][0] of each case through
    the format's MFMA kernel on the GPU's target (the same adapter class as cuda)."""
    import numpy as np
    from mmaprobe.commands.identify import ADAPTERS
    from smtmodel.sampling import validation_mix
    gpu = rocm("cdna2-fp16-fp32", "gfx90a", name="AMD Instinct MI250X")
    dev = ADAPTERS["rocm"]("rocm", in_fmt="fp16", out_fmt="fp32", c_fmt="fp32")
    assert dev.name == "AMD Instinct MI250X / gfx90a / v_mfma_f32_32x32x8f16" and dev.k == 8
    a, b, c, _ = validation_mix("fp16", "fp32", 8, 40, seed=5)

    class Cases:
        pass
    cases = Cases()
    cases.a, cases.b, cases.c = a, b, c
    want = np.asarray(get_model("cdna2-fp16-fp32").evaluate(a, b, c, backend="numpy"), dtype=np.uint64)
    assert np.array_equal(dev.launch(cases), want) and gpu.launches == 1


def test_identify_rocm_needs_formats(capsys):
    assert main(["identify", "--device", "rocm"]) == 2
    assert "--device rocm needs --in and --out" in capsys.readouterr().err


def test_harness_build_and_list_show_the_mfma_of_every_kernel(tmp_path, monkeypatch, capsys):
    from hw_runner.amd.kernels import MFMA_KERNELS
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    assert main(["harness", "build", "--vendor", "amd"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in out if ln.startswith("mfma_")]
    assert len(rows) == sum(len(s.gfx) for s in MFMA_KERNELS.values()) == 62      # 34 gfx908-gfx942, 28 gfx950
    for r in rows:
        spec = MFMA_KERNELS[r[0]]
        assert r[2] in ("ok", "checked:") and f"[{spec.mnemonic(r[1])}]" == r[-1], r
    assert main(["harness", "list", "--vendor", "amd"]) == 0
    text = capsys.readouterr().out
    from hw_runner.coverage import catalog_models
    n = len(catalog_models(("amd",)))
    assert re.search(rf"^  all\s+{n}/{n}$", text, re.M) and "without one:" not in text   # every CDNA model
    assert main(["harness", "list", "--vendor", "amd", "--gfx", "gfx908"]) == 0
    text = capsys.readouterr().out
    assert "mfma_f32_32x32x4_bf16      gfx908  llvm.amdgcn.mfma.f32.32x32x4bf16" in text and "gfx942" not in text
