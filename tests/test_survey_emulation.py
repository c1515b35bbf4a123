"""The survey's emulation steps (survey.emulation): JAX dot algorithms and Triton input_precision
captured and judged against their schemes. Without a GPU the stand-in answers with the step's
first scheme, so a judged step must name that scheme; a stand-in answering with another scheme
must be reported as reproduced by none; a machine without JAX or Triton skips the steps and names
them in the card."""

from __future__ import annotations

import ast
import importlib.util

import numpy as np
import pytest

from survey import emulation as em
from survey.card import build, to_markdown
from survey.device import Target, open_target
from survey.run import Settings, open_survey


def _survey(tmp_path, target=None):
    return open_survey(target or open_target("dry:sm_90"), tmp_path / "s", Settings(quick=True, parts=("library",)))


def test_dry_run_steps_are_captured_and_judged(tmp_path):
    s = _survey(tmp_path)
    drawn = em.capture_all(s)
    em.analyse_all(s, drawn)
    got = {g.name: s.store.done(f"analyse/emulation/{g.name}") for g in em.plan(quick=True)}
    assert set(got) == {"jax-bf16x3", "triton-tf32x3"}
    assert got["jax-bf16x3"]["reproduced_by"] == ["bf16x3-xla:BLOCK_K=32"]       # the stand-in's scheme and tile
    assert got["triton-tf32x3"]["reproduced_by"] == ["tf32x3-triton:BLOCK_K=32"]
    assert "emu-jax-bf16x3" in s.store.arrays["library"]
    part = em.card_part(s)
    md = em.markdown(part, {})
    assert "reproduced by bf16x3-xla:BLOCK_K=32" in md and "## Emulation modes" in md
    assert len(list((tmp_path / "s").iterdir())) <= 8


def test_a_stand_in_answering_another_scheme_is_reproduced_by_none(tmp_path, monkeypatch):
    """The stand-in answers the Triton bf16x3 step with XLA's cuBLAS-path bf16x3 (RZ splits, three
    full-K GEMMs): tf32x3-triton must not reproduce it."""
    from smtmodel.schemes import get_scheme

    def other(self, g, a, b):
        return {"d": em.scheme_gemm(get_scheme("bf16x3-xla-hlo"), a, b, g.rows, g.cols, "sm_90"),
                "library": "twin (other)", "path": "twin", "block_k": 32, "block_only": True}
    monkeypatch.setattr(em.TwinEmulation, "run", other)
    s = _survey(tmp_path)
    step = [g for g in em.plan(quick=True) if g.lib == "triton"]
    em.analyse_all(s, em.capture_all(s, step), step)
    rec = s.store.done("analyse/emulation/triton-tf32x3")
    assert rec["reproduced_by"] == [] and not rec["verdicts"]["tf32x3-triton:BLOCK_K=32"]["reproduced"]
    assert em.line(s.store.done("capture/emulation/triton-tf32x3"), rec).startswith("no scheme reproduces it")


def test_scheme_gemm_lanes_are_row_of_a_times_column_of_b():
    """Element (i, j) of scheme_gemm is the scheme's dot product of row i of A and column j of B
    (Scheme.evaluate on that one pair, c = +0)."""
    from smtmodel.schemes import get_scheme
    g = em.plan(quick=True)[0]
    a, b = em.inputs(g)
    s = get_scheme("bf16x3-xla")
    d = em.scheme_gemm(s, a, b, 2, 3, "sm_90")
    one = s.evaluate(np.asarray(a[1:2], np.uint64), np.asarray(b[:, 2:3].T, np.uint64), np.zeros(1, np.uint64),
                     "hopper-bf16-fp32")
    assert d.shape == (2, 3) and int(d[1, 2]) == int(one[0])


def test_x9_on_the_cublas_path_is_not_judged_and_says_why():
    g = next(x for x in em.plan() if x.name == "jax-bf16x9")
    cands, not_judged = em.candidates(g)
    assert [x["scheme"] for x in not_judged] == ["bf16x9-xla-hlo"] and "no X9 rewrite" in not_judged[0]["why"]
    assert [lab for lab, _ in cands] == [f"bf16x9-xla:BLOCK_K={16 * n}" for n in em.GROUPS]   # BLOCK_K unknown
    assert [lab for lab, _ in em.candidates(g, block_k=64)[0]] == ["bf16x9-xla:BLOCK_K=64"]


def test_missing_jax_and_triton_are_skipped_and_named_in_the_card(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",     # torch present, as on the GPU machine, wherever this runs
                        lambda name, *a, **k: None if name in ("jax", "triton") else
                        (real("numpy") if name == "torch" else real(name, *a, **k)))
    s = _survey(tmp_path, Target("cuda", None, "sm_90", "a GPU machine without JAX or Triton", False))
    assert em.capture_all(s) == {}
    named = {x["step"]: x["why"] for x in s.skipped}
    assert named == {"capture/emulation/jax-bf16x3": "jax not installed on the GPU machine (pip install jax)",
                     "capture/emulation/triton-tf32x3": "triton not installed on the GPU machine (pip install triton)"}
    md = to_markdown(build(s))
    assert "- capture/emulation/jax-bf16x3: jax not installed" in md


def test_triton_source_and_hlo_reading():
    tree = ast.parse(em.TRITON_SRC)
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef)] == ["gemm_kernel"]
    assert "input_precision=PRECISION" in em.TRITON_SRC
    hlo = ('fusion = f32[64,64] fusion(p0, p1), kind=kCustom, backend_config={"fusion_backend_config":'
           '{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"32","block_n":"64","block_k":"64",'
           '"split_k":"1","num_stages":"4"}}}')
    assert em.hlo_info(hlo) == {"path": "triton", "block_m": 32, "block_n": 64, "block_k": 64, "split_k": 1}
    assert em.hlo_info('custom-call(a, b), custom_call_target="__cublas$gemm"')["path"] == "cublas"


def test_plan_names_the_steps(capsys):
    from mmaprobe.cli import main
    assert main(["survey", "--device", "dry:sm_90", "--plan", "--parts", "library,identify"]) == 0
    out = capsys.readouterr().out
    assert "emulation modes (jax-bf16x3, jax-bf16x6, jax-bf16x9, triton-tf32x3, triton-bf16x3" in out
    assert "identify --gemm through torch" in out


@pytest.mark.parametrize("name", ["jax-bf16x3", "triton-bf16x3"])
def test_full_steps_fit_the_triton_kernel(name):
    g = next(x for x in em.plan() if x.name == name)
    bm, bn, bk = em.TRITON_BLOCK
    assert g.M % bm == 0 and g.N % bn == 0 and g.K % bk == 0 and g.cols <= g.N


def test_jax_step_through_a_stand_in_jax_records_the_call(monkeypatch):
    """The GPU backend's JAX call against a stand-in jax module: dot_general contracts A's
    columns with B's rows, with the step's DotAlgorithmPreset and an fp32 result, jitted; the
    compiled HLO's Triton tile is recorded; D comes back as raw fp32 bits of A B (NumPy)."""
    import sys
    import types
    calls = []
    hlo = '"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64","block_n":"64","block_k":"64","split_k":"1"}'

    def jit(f):                           # jax.jit(f).lower(A, B).compile(): callable, with its HLO text
        class Compiled:
            def __call__(self, x, y):
                return f(x, y)

            def as_text(self):
                return hlo
        return types.SimpleNamespace(lower=lambda *a: types.SimpleNamespace(compile=Compiled))

    def dot_general(x, y, dims, precision=None, preferred_element_type=None):
        calls.append((x.shape, y.shape, dims, precision, preferred_element_type))
        return (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32)

    jax = types.ModuleType("jax")
    jnp = types.ModuleType("jax.numpy")
    jnp.float32 = "f32"
    jax.__version__, jax.numpy, jax.jit = "stand-in", jnp, jit
    jax.devices = lambda kind: [f"{kind}0"]
    jax.device_put = lambda x, d: x
    jax.lax = types.SimpleNamespace(dot_general=dot_general, DotAlgorithmPreset=types.SimpleNamespace(
        **{v: f"preset:{v}" for v in em.JAX_PRESETS.values()}))
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setitem(sys.modules, "jax.numpy", jnp)
    g = next(x for x in em.plan(quick=True) if x.lib == "jax")
    a, b = em.inputs(g)
    cap, arrays = em.capture(em.GpuEmulation(0), g, a, b)
    assert cap["status"] == "captured", cap.get("reason")
    assert calls == [((g.M, g.K), (g.K, g.N), (((1,), (0,)), ((), ())), "preset:BF16_BF16_F32_X3", "f32")]
    assert (cap["path"], cap["block_k"], cap["split_k"], cap["library"]) == ("triton", 64, 1, "jax stand-in")
    want = (np.asarray(a, np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
            @ np.asarray(b, np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)).astype(np.float32)
    assert np.array_equal(arrays[f"emu-{g.name}"].view(np.float32), want[: g.rows, : g.cols])
    from survey.library import digest
    assert cap["digest"] == digest(want.view(np.uint32).astype(np.uint64))
