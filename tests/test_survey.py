"""The GPU survey without a GPU: the dry run in a lean environment (numpy, ml_dtypes, llvmlite
only, as on the GPU machine), the wrong twin's mismatches reported, resume, recheck, refusals.

Expected values: a dry run's kernels are answered by the catalog model of each kernel through
the kernels' own packing (hw_runner.twin_launcher), so each own model must reproduce every
output (an independent path: the model evaluated directly, not through the buffers); the wrong
twin answers with another architecture's model, which the suite's deciding vectors separate
from the right one, so the own model must be refuted there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hw_runner.kernels import KERNELS
from hw_runner.runner import run_on_device
from hw_runner.twin_launcher import TwinLauncher, catalog_answer
from mmaprobe.cli import main
from smtmodel.catalog import model_for_kernel
from smtmodel.sampling import validation_mix
from survey.store import MAX_BYTES, MAX_FILES

ROOT = Path(__file__).resolve().parents[1]
LEAN = [sys.executable, str(ROOT / "tests" / "lean_env.py")]
SOLVERS = ("z3", "cvc5", "bitwuzla", "dask", "distributed")


def test_survey_path_imports_no_solver_and_no_dask():
    """What runs on the GPU machine (survey, run, verdict, verify, identify's device path) imports
    no SMT solver and no Dask."""
    code = ("import sys, survey, survey.run, survey.kernels, survey.library, survey.identify, survey.card, "
            "hw_runner.runner, hw_runner.identify_device, hw_runner.verify, queries.identify, "
            "mmaprobe.cli, mmaprobe.commands.harness, mmaprobe.commands.survey, mmaprobe.commands.identify; "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({SOLVERS!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("kid", sorted(k for k, s in KERNELS.items() if s.supports("sm_90")))
def test_twin_launcher_round_trip(kid):
    """Cases through the kernel's buffers and back give the model's own answer on the padded case
    (the model read at the instruction's K: a chain of m16n8k8 instructions is a chain of blocks
    of 8)."""
    spec = KERNELS[kid]
    model = model_for_kernel(kid, 90, spec.k)
    k = 2 * spec.k + 3                                   # three chunks (K >= 3), the last one padded
    a, b, c, _ = validation_mix(spec.in_fmt, spec.c_fmt, k, 40, 7)
    d = run_on_device(TwinLauncher("sm_90", catalog_answer("sm_90"), jobs=1), spec, a, b, c).d
    pad = -(-k // spec.k) * spec.k - k                   # K = 1 (the FFMA kernel): no padding
    z = np.zeros((40, pad), np.uint64)
    want = model.evaluate(np.hstack([a, z]), np.hstack([b, z]), c, jobs=1)
    assert np.array_equal(d, want)


def _files_ok(folder: Path):
    files = [p for p in folder.iterdir()]
    assert 1 <= len(files) <= MAX_FILES and all(p.is_file() and p.stat().st_size <= MAX_BYTES for p in files)
    return sorted(p.name for p in files)


LEAN_KERNELS = "mma_m16n8k16_bf16_f32,wgmma_m64n8k32_e4m3_f32,mma_m16n8k32_s8_s32_sat"
"""The default run's lean survey: three kernels (every kernel's round trip is tested above; the
whole survey -m slow)."""


@pytest.mark.parametrize("kernels,library", [(LEAN_KERNELS, False), pytest.param(LEAN_KERNELS, True, marks=pytest.mark.slow),
                                             pytest.param(None, True, marks=pytest.mark.slow)],
                         ids=["three-kernels", "three-kernels-library", "every-kernel"])
def test_dry_run_in_the_lean_environment(tmp_path, kernels, library):
    """The survey against twin GPUs, with only numpy/ml_dtypes/llvmlite importable: at most
    8 files of at most 16 MiB, the plan printed with launches and cases per part, every kernel
    reproduced by its own catalog model. The default run leaves the library part out (its
    captures and analyses: test_library_part_dry_run_records_kernels_environment_variants_held_out
    and tests/test_library_captures.py) and runs identify on the 4-point e-fdpa family, which does
    not hold the Hopper unit (no-fit: identify's device path in the lean environment; the default
    space's 9,722 points compile some 40 kernels on a machine with empty caches, a minute on 2
    cores); -m slow runs every part on the default space."""
    out = tmp_path / "survey"
    pick = ["--kernels", kernels] if kernels else []
    parts = [] if library else ["--parts", "kernels,identify", "--space", "e-fdpa"]
    r = subprocess.run(LEAN + ["-m", "mmaprobe", "survey", "--device", "dry:sm_90", "-o", str(out), "--quick",
                               "--cases", "300", "--verify", "2000", "--quiet", *pick, *parts],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "kernels: capture and judge" in r.stdout and "launches" in r.stdout
    assert _files_ok(out) == ["card.json", "card.md", "journal.jsonl", "kernels.npz"] + (["library.npz"] if library else [])
    card = json.loads((out / "card.json").read_text())
    kernels = card["kernels"]
    assert len(kernels) == (len(LEAN_KERNELS.split(",")) if pick else sum(1 for s in KERNELS.values() if s.supports("sm_90")))
    assert all(e["own_verdict"].startswith("survives") for e in kernels.values())
    assert card["dry_run"] and card["identify"]
    if not library:
        assert [e["status"] for e in card["identify"].values() if "space" in e] == ["no-fit"]
    if library:
        assert card["library"]["batch-bf16"]["analysis"]["invariant"]
        # seed 003 §V's value as the catalog's Hopper model and cutlass2 compute it (quick shape) is explained
        assert card["library"]["seed003"]["analysis"]["fit_count"] >= 1
    # the captures are ground truth for --recheck: today's catalog reproduces every one (the library
    # calls were judged by the run's own analysis steps above; tests/test_library_captures.py rechecks)
    assert main(["survey", "--recheck", str(out), "--no-library"]) == 0
    # a kernel's captures as a vector file: what verdict / check / identify --device file: read
    vec = tmp_path / "wgmma.jsonl"
    assert main(["survey", "--export", str(out), "wgmma_m64n8k32_e4m3_f32", "-o", str(vec)]) == 0
    assert main(["check", str(vec), "--model", "hopper-fp8e4m3-fp32"]) == 0
    assert main(["check", str(vec), "--model", "ada-fp8e4m3-fp32"]) == 1


def test_wrong_twin_mismatches_are_reported(tmp_path, capsys):
    out = tmp_path / "wrong"
    ks = "mma_m16n8k16_bf16_f32,mma_m16n8k32_s8_s32_sat"
    rc = main(["survey", "--device", "dry:sm_90:wrong", "-o", str(out), "--parts", "kernels", "--kernels", ks,
               "--cases", "400", "--quiet"])
    assert rc == 1
    card = json.loads((out / "card.json").read_text())
    for kid in ks.split(","):
        e = card["kernels"][kid]
        assert e["own_verdict"].startswith("refuted") and e["own_first_contradiction"]
    assert "hopper-bf16-fp32" in card["kernels"]["mma_m16n8k16_bf16_f32"]["refuted"]
    assert "REFUTED" not in capsys.readouterr().out
    assert main(["survey", "--recheck", str(out)]) == 1


def test_resume_after_a_kill_keeps_what_was_captured(tmp_path):
    out = tmp_path / "s"
    args = ["survey", "--device", "dry:sm_90", "-o", str(out), "--parts", "kernels", "--cases", "200", "--quiet",
            "--kernels", "mma_m16n8k8_f16_f16,mma_m8n8k16_u8_s32"]
    assert main(args) == 0
    card = json.loads((out / "card.json").read_text())
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines()
    assert len(lines) == 5                                # header, 2 captures, 2 judgements
    journal.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])     # killed while judging
    assert main(args) == 2                                # the folder exists: refused without --resume
    assert main(args + ["--resume"]) == 0
    again = json.loads((out / "card.json").read_text())
    assert again["kernels"] == card["kernels"]
    assert len(journal.read_text().splitlines()) == 5


@pytest.mark.parametrize("argv, text", [
    (["--device", "tpu"], "bad --device"),
    (["--device", "cuda"], "CuPy"),
    (["--device", "dry:sm_90", "--budget", "1"], "too short"),
    (["--device", "dry:sm_90", "--parts", "kernels,gpus"], "unknown part"),
    (["--device", "dry:sm_90", "--kernels", "wgmma_m64n8k16_f16_f32,nope"], "unknown kernel"),
    (["--device", "dry:sm_80", "--kernels", "wgmma_m64n8k16_f16_f32"], "does not run"),
    (["--device", "dry:sm_90", "--resume"], "nothing to resume"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, text):
    out = tmp_path / "o"
    assert main(["survey", *argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and text in err[0]
    assert not out.exists()


def test_plan_counts_launches_and_cases(capsys):
    assert main(["survey", "--device", "dry:sm_90", "--plan", "--parts", "kernels", "--kernels",
                 "wgmma_m64n8k32_e4m3_f32"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "kernels: capture" in line).split()
    # layout probes (32 x 32) + mix 10^4 + chain, zeros, c-special 2500 each + the deciding files
    assert int(row[-1].replace(",", "")) >= 32 * 32 + 17_500


def test_integer_mix_reaches_the_int32_limits():
    """Independent check with Python integers: the integer mix's 'cancel' cases leave the int32
    range, where wrap-around and .satfinite differ."""
    a, b, c, kinds = validation_mix("int8", "int32", 16, 400, 3)
    sv = lambda x, w: int(x) - (1 << w) if int(x) >> (w - 1) else int(x)
    exact = [sv(c[i], 32) + sum(sv(a[i, j], 8) * sv(b[i, j], 8) for j in range(16)) for i in range(400)]
    out = [not -2**31 <= e < 2**31 for e in exact]
    assert any(o for o, k in zip(out, kinds) if k == "cancel")
    assert not any(o for o, k in zip(out, kinds) if k == "normal")


def test_prebuilt_kernels_are_current():
    """The committed cubins (hw_runner/prebuilt) hold every kernel a Hopper GPU runs, built from
    today's source and SASS-checked; rebuild with 'mmaprobe harness prebuild --arch sm_90'."""
    from hw_runner.build import prebuilt_key
    index = json.loads((ROOT / "hw_runner" / "prebuilt" / "index.json").read_text())["kernels"]
    for spec in KERNELS.values():
        if spec.supports("sm_90"):
            e = index.get(prebuilt_key(spec, spec.compile_target("sm_90")))
            assert e and e["kernel"] == spec.id and e["sass_ok"], f"{spec.id}: prebuilt cubin missing or stale"
            assert (ROOT / "hw_runner" / "prebuilt" / e["cubin"]).is_file()


def test_prebuilt_cubin_needs_no_nvcc(monkeypatch):
    from hw_runner import build
    monkeypatch.setenv("MMAPROBE_PREBUILT", str(ROOT / "hw_runner" / "prebuilt"))
    monkeypatch.setattr(build, "find_tool", lambda name: None)
    spec = KERNELS["wgmma_m64n8k32_e4m3_f32"]
    path = build.cubin_for(spec, "sm_90", check=True)
    assert path.parent == ROOT / "hw_runner" / "prebuilt"


def test_block_scaled_kernels_draw_scales(tmp_path, capsys):
    """Block-scaled kernels (sm_120a ``kind::mxf8f6f4`` and ``mxf4nvf4`` with UE4M3 scales) run
    random sets with scales of every kind and the disputes' deciding files: the dry run's own
    models reproduce them (expected: the catalog model evaluated directly on the cases and their
    scales, read back from the export); the wrong twin (a rival of the same scales) is refuted."""
    ks = "mma_m16n8k32_mxf8f6f4_e4m3_f32,mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32"
    out = tmp_path / "s"
    assert main(["survey", "--device", "dry:sm_120a", "-o", str(out), "--parts", "kernels", "--kernels", ks,
                 "--cases", "300", "--quiet"]) == 0
    card = json.loads((out / "card.json").read_text())
    nv = card["kernels"]["mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32"]
    assert all(e["own_verdict"].startswith("survives") for e in card["kernels"].values())
    assert "rtx-blackwell-fp4e2m1-fp32-nvfp4-f25" in nv["refuted"]       # the disputes' file decides it
    assert not any("block-scaled" in str(x) for x in card.get("not_run", []))
    vec = tmp_path / "nv.jsonl"
    assert main(["survey", "--export", str(out), "mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32", "-o", str(vec)]) == 0
    from smtmodel.catalog import get_model
    from smtmodel.vectors import read_vectors
    vf = read_vectors(vec)
    a, b, c = vf.arrays()
    sa, sb = vf.scales()
    assert len({tuple(r) for r in sa}) > 10            # scales vary from case to case
    model = get_model("rtx-blackwell-fp4e2m1-fp32-nvfp4")
    d = model.evaluate(a, b, c, a_scale=sa, b_scale=sb, backend="numpy")
    from smtmodel.formats import get_format
    fo = get_format("fp32")
    assert [fo.hex(int(x)) for x in d] == [next(iter(case["observed"].values())) for case in vf.cases]
    assert main(["survey", "--recheck", str(out)]) == 0
    wrong = tmp_path / "w"
    assert main(["survey", "--device", "dry:sm_120a:wrong", "-o", str(wrong), "--parts", "kernels", "--kernels",
                 "mma_m16n8k32_mxf8f6f4_e4m3_f32", "--cases", "300", "--quiet"]) == 1


def test_cublas_enums_found_where_cupy_keeps_them():
    """The H100 survey's seed-003 GEMM failed on CuPy 14 (``cupy_backends.cuda.libs.cublas`` has no
    ``CUDA_R_16F``): the enum is looked up in cublas, then CuPy's runtime, then the header value
    (library_types.h: CUDA_R_16F = 2, CUDA_R_16BF = 14)."""
    from types import SimpleNamespace
    from hw_runner.gemm_device import CudaGemmDevice
    dev = object.__new__(CudaGemmDevice)
    dev.cublas = SimpleNamespace(CUBLAS_OP_N=0)
    dev.cupy = SimpleNamespace(cuda=SimpleNamespace(runtime=SimpleNamespace(CUDA_R_16F=2)))
    assert (dev.const("CUBLAS_OP_N"), dev.const("CUDA_R_16F"), dev.const("CUDA_R_16BF")) == (0, 2, 14)


def test_cuda_gemm_device_hands_cublas_row_major_buffers():
    """cuBLAS reads raw memory: a B gathered by fancy indexing (Fortran-ordered, as seed 003's
    repeated column is) must reach gemmEx row-major. A stand-in gemmEx reads the pointers as
    cuBLAS does (column-major, leading dimensions as given) and the result must be
    alpha A B + beta C computed by NumPy (an independent computation)."""
    import ctypes
    from types import SimpleNamespace
    from hw_runner.gemm_device import CudaGemmDevice

    class Dev:
        def __init__(self, x):
            self.x = x
            self.data = SimpleNamespace(ptr=x.ctypes.data)

        def copy(self):
            return Dev(self.x.copy())

    def read(ptr, n, dtype):
        return np.frombuffer((ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(ptr), dtype).copy()

    def gemm_ex(handle, opa, opb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo):
        a = read(A, lda * k, np.float16).astype(np.float64).reshape(k, lda).T[:m]        # m x k
        b = read(B, ldb * n, np.float16).astype(np.float64).reshape(n, ldb).T[:k]        # k x n
        c = read(C, ldc * n, np.float32).astype(np.float64).reshape(n, ldc).T[:m]
        al, be = (float(read(x, 1, np.float32)[0]) for x in (alpha, beta))
        out = (al * (a @ b) + be * c).T.astype(np.float32).ravel()
        ctypes.memmove(C, out.ctypes.data, out.nbytes)

    cp = SimpleNamespace(asarray=Dev, asnumpy=lambda d: d.x,
                         cuda=SimpleNamespace(runtime=SimpleNamespace(), device=SimpleNamespace(get_cublas_handle=lambda: 0),
                                              Device=lambda: SimpleNamespace(synchronize=lambda: None)))
    dev = object.__new__(CudaGemmDevice)
    dev.cupy, dev.cublas, dev.in_fmt = cp, SimpleNamespace(gemmEx=gemm_ex), "fp16"
    rng = np.random.default_rng(3)
    M, N, K = 3, 5, 4
    A = rng.integers(-4, 5, (M, K)).astype(np.float16)
    col = rng.integers(-4, 5, (K, 1)).astype(np.float16)
    B = np.hstack([col * (j + 1) for j in range(N)])
    Bf = np.asfortranarray(B)
    C = rng.integers(-4, 5, (M, N)).astype(np.float32)
    p = SimpleNamespace(shape=(M, N, K), a=A.view(np.uint16).astype(np.uint64),
                        b=np.asfortranarray(Bf.view(np.uint16).astype(np.uint64)),
                        c=C.view(np.uint32).astype(np.uint64), alpha=-1.0, beta=1.0)
    assert not p.b.flags["C_CONTIGUOUS"]
    d = dev.launch(p).astype(np.uint32).view(np.float32).reshape(M, N)
    assert np.array_equal(d, (-(A.astype(np.float64) @ B.astype(np.float64)) + C).astype(np.float32))


def test_library_part_dry_run_records_kernels_environment_variants_held_out(tmp_path):
    """The library part's captures (no analysis) against the twin: per call the stand-in kernel
    names (the dispatch rule's kernel class for fp16/bf16 torch calls, a named profile else), the
    environment once, both variants at the variant M, every held-out grid point flagged as the
    grid's hash split says, and the folder within the GPU machine's limits."""
    from survey import card as card_mod
    from survey.device import open_target
    from survey.grid import held_out
    from survey.run import Settings, open_survey
    out = tmp_path / "lib"
    s = open_survey(open_target("dry:sm_90"), out, Settings(quick=True, parts=("library",)))
    gemms = s.library_plan()
    s.capture_library(gemms)
    env = s.store.done("capture/library/environment")
    assert env and "workspace_bytes" in env and env["allow_bf16_reduced_precision_reduction"] is True
    recs = {g.name: s.store.done(f"capture/library/{g.name}") for g in gemms}
    grid = [g for g in gemms if g.draw == "grid"]
    assert grid and any(g.held_out for g in grid)
    for g in grid:
        r = recs[g.name]
        assert r["status"] == "captured", (g.name, r.get("reason"))
        for M in g.ms or (g.M,):
            pt = r["points"][str(M)]
            assert pt["held_out"] == held_out("tf32" if g.tf32 else g.in_fmt, M, g.N, g.K)
            assert pt["kernels"] and all(k.startswith("twin:") for k in pt["kernels"])
    bf = recs["grid-bf16-attn-qo"]["points"]
    assert bf["1"]["kernels"][0].startswith("twin:nvjet")             # the rule's kernel class
    assert set(bf["1"]["variants"]) == {"workspace-16x8", "reduced-off"} and "variants" not in bf["2"]
    assert recs["grid-tf32-attn-qo"]["points"]["1"]["kernels"] == ["twin:cutlass3-sm90"]   # outside the rule
    assert set(recs["grid-tf32-attn-qo"]["points"]["1"]["variants"]) == {"workspace-16x8"}
    ad = recs["addmm-bf16-inexact-bf16"]
    assert ad["gemm"]["alpha"] == 0.30078125 and ad["points"]["32"]["variants"]
    c = card_mod.build(s)
    s.store.write_text("card.json", card_mod.to_json(c))
    s.store.write_text("card.md", card_mod.to_markdown(c))
    assert c["library_environment"]["backend"].startswith("twin library")
    assert c["library"]["grid-bf16-attn-qo"]["kernels"]
    assert "Environment:" in (out / "card.md").read_text()
    _files_ok(out)
    assert sum(p.stat().st_size for p in out.iterdir()) <= MAX_BYTES


def test_seed003_gemmex_through_a_fake_cupy_records_the_call(monkeypatch):
    """The survey's seed-003 call (survey.library.gemmex, the path that failed on the H100 with
    CuPy 14's cublas module lacking CUDA_R_16F) run against a stand-in CuPy whose cublas module
    names no data type: gemmEx must get the library_types.h values (A, B: CUDA_R_16F = 2; C:
    CUDA_R_32F = 0; compute CUBLAS_COMPUTE_32F = 68), cuBLAS's column-major shape (n = M), and
    the result must come back as the recorded block."""
    import sys
    import types
    from survey import library as lib
    calls = []

    class Arr:
        def __init__(self, x):
            self.x = np.array(x)
            self.data = types.SimpleNamespace(ptr=0)

        def copy(self):
            return Arr(self.x)

    def gemm_ex(*args):
        calls.append(args)

    cublas = types.SimpleNamespace(gemmEx=gemm_ex)                       # no enums at all
    cuda = types.SimpleNamespace(cublas=cublas, runtime=types.SimpleNamespace(),
                                 Device=lambda i=0: types.SimpleNamespace(use=lambda: None, compute_capability="90",
                                                                         synchronize=lambda: None),
                                 device=types.SimpleNamespace(get_cublas_handle=lambda: 7))
    cupy = types.ModuleType("cupy")
    cupy.cuda, cupy.asarray, cupy.asnumpy = cuda, Arr, lambda a: a.x
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", types.ModuleType("cupy.cuda"))
    sys.modules["cupy.cuda"].cublas = cublas
    g = next(x for x in lib.plan(quick=True) if x.op == "seed003")
    a, b, c = lib.inputs(g)
    block, dg = lib.gemmex(g, a, b, c)
    (handle, opa, opb, m, n, k, _, _, ta, lda, _, tb, ldb, _, _, tc, ldc, comp, algo), = calls
    assert (handle, opa, opb, m, n, k) == (7, 0, 0, g.N, g.M, g.K)
    assert (ta, tb, tc, comp, algo) == (2, 2, 0, 68, -1) and (lda, ldb, ldc) == (g.N, g.K, g.N)
    assert block.shape == (1, 1) and "distinct value" in dg


@pytest.mark.parametrize("argv, what", [
    (["survey", "--device", "dry:sm_999", "--plan"], "no catalog model is of sm_999"),
    (["survey", "--device", "dry:sm_1", "--plan"], "no catalog model is of sm_1"),
    (["survey", "--device", "dry:sm_90", "--budget", "nan", "--plan"], "finite"),
    (["invariance", "batch", "--profile", "torch-h100-gemmex", "--a", "bf16", "--b", "bf16", "--n", "1024",
      "--k", "4096", "--limit", "-3"], "at least 1"),
])
def test_out_of_range_options_refused(argv, what, capsys):
    """An architecture no catalog model has, a NaN budget, a negative witness limit: one line, exit 2."""
    from mmaprobe.cli import main
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0]
