"""Disputes as rivals with deciding files (smtmodel.catalog.disputes, generated_tests/disputes/),
and B300 as aliases of the B200 floating-point models (smtmodel.catalog.aliases).

Expected values: the parameters in dispute come from the sources the models cite (MMA-Sim 2.1.1
``nv_ptx/sim.py:89-104``: F = 35 for a k = 64 block-scaled MMA; huweim/emulation_sys's README: 25
bits; DeepGEMM issues/176: 34-37 bits); the deciding files' predictions are re-evaluated here with
the twin (the files are data written by ``mmaprobe distinguish``); the huweim probe's output is
fp32 arithmetic (2^24 + 1 is not an fp32 value: RZ gives 2^24)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmaprobe import cli
from smtmodel.catalog import alias_models, all_models, get_model, integer_models, model_for_kernel, rivals_of
from smtmodel.catalog.aliases import ALIASES
from smtmodel.catalog.disputes import DISPUTES
from smtmodel.catalog.products import arch_of
from smtmodel.sampling import validation_mix
from smtmodel.vectors import read_vectors

ROOT = Path(__file__).resolve().parent.parent / "generated_tests" / "disputes"
PAIRS = [(d, a, b) for d in DISPUTES for a, b in d.pairs()]


def test_the_disputed_parameters_are_the_sources_values():
    nv = get_model("rtx-blackwell-fp4e2m1-fp32-nvfp4")
    assert (nv.op, nv.L, nv.F, nv.rho) == ("gstfdpa", 64, 35, "RZ-FP32")       # MMA-Sim 2.1.1: k == 64 -> F = 35
    for base in ("rtx-blackwell-fp4e2m1-fp32-nvfp4", "rtx-blackwell-fp4e2m1-fp32-mxgst"):
        r = get_model(base + "-f25")
        assert (r.kind, r.rival_of, r.F, r.rho) == ("rival", base, 25, "RZ-FP32")
        assert "huweim/emulation_sys" in r.source and r in rivals_of(base)
    mx = get_model("blackwell-fp4e2m1-fp32-mxgst")
    assert mx.F == 35
    assert [get_model(f"blackwell-fp4e2m1-fp32-mxgst-f{f}").F for f in (34, 36, 37)] == [34, 36, 37]
    assert all("DeepGEMM" in get_model(f"blackwell-fp4e2m1-fp32-mxgst-f{f}").source for f in (34, 36, 37))


def test_every_dispute_has_a_readme_naming_sides_sources_and_the_command():
    for d in DISPUTES:
        text = (ROOT / d.name / "README.md").read_text()
        for s in d.sides:
            assert f"`{s.model}`" in text, (d.name, s.model)
            get_model(s.model)                       # every side is a model
        for word in ("huweim/emulation_sys" if d.name.startswith("rtx50") else "DeepGEMM", "MMA-Sim 2.1.1"):
            assert word in text, (d.name, word)
        assert "mmaprobe run FILE --device cuda -o obs.jsonl && mmaprobe verdict obs.jsonl" in text
        assert sorted(p.name for p in (ROOT / d.name).glob("*.jsonl")) == sorted(d.file_name(a, b) for a, b in d.pairs())


@pytest.mark.parametrize("d,a,b", PAIRS, ids=[f"{d.name}/{a.model}-{b.model}" for d, a, b in PAIRS])
def test_each_deciding_file_separates_its_two_sides_on_every_case(d, a, b):
    vf = read_vectors(ROOT / d.name / d.file_name(a, b))
    assert vf.header["models"] == [a.model, b.model]
    assert 1 <= len(vf.cases) <= 8 and vf.scales() is not None
    x, y, c = vf.arrays()
    outs = [get_model(s.model).evaluate(x, y, c, *vf.scales()) for s in (a, b)]
    for s, out in zip((a, b), outs):
        assert [vf.out_fmt.hex(int(v)) for v in out] == [case["expect"][s.model] for case in vf.cases]
    assert np.all(outs[0] != outs[1])


def test_a_twin_gpu_settles_a_dispute_with_run_and_verdict(tmp_path, capsys):
    """The README's command, with a twin standing in for the GPU: the side the twin computes
    survives, its neighbour is refuted."""
    d = next(x for x in DISPUTES if x.name == "b200-mxf4")
    a, b = d.pairs()[1]
    obs = tmp_path / "obs.jsonl"
    assert cli.main(["run", str(ROOT / d.name / d.file_name(a, b)), "--device", f"twin:{b.model}", "-o", str(obs)]) == 0
    capsys.readouterr()
    assert cli.main(["verdict", str(obs), "--include-twins"]) == 0
    out = capsys.readouterr().out
    assert f"surviving hypotheses: {b.model}" in out and "refuted" in out


def test_the_huweim_probe_does_not_decide():
    """huweim/emulation_sys's k = 64 probe: c = 2^24, 0.5 x 1.0 twice, UE8M0 scales 1.0; both
    readings give 2^24, as fp32 RZ of 2^24 + 1 does."""
    a = np.zeros((1, 64), np.uint64)
    b = np.zeros((1, 64), np.uint64)
    a[0, :2], b[0, :2] = 0x1, 0x2                                   # E2M1 0.5 and 1.0
    s = np.full((1, 2), 0x7F, np.uint64)
    c = np.array([np.float32(2 ** 24).view(np.uint32)], np.uint64)
    want = int(np.float32(2 ** 24).view(np.uint32))                 # 2^24 + 1 toward zero in fp32
    for mid in ("rtx-blackwell-fp4e2m1-fp32-mxgst", "rtx-blackwell-fp4e2m1-fp32-mxgst-f25"):
        assert int(get_model(mid).evaluate(a, b, c, s, s)[0]) == want


# ---- B300 = B200 ------------------------------------------------------------------------------

def test_b300_aliases_every_b200_floating_point_catalog_model_and_nothing_else():
    b200 = {m.id for m in all_models() if m.arch == "blackwell" and m.kind == "catalog"}
    aliases = alias_models()
    assert {ALIASES[m.id] for m in aliases} == b200 and len(aliases) == len(b200)
    assert not [m for m in integer_models() if m.arch == "blackwell-ultra"]
    assert not {m.id for m in aliases} & {m.id for m in all_models()}
    for m in aliases:
        assert m.arch == "blackwell-ultra" and m.sm == 103 and not m.validated
        assert m.source.startswith("ASSUMPTION") and "no integer tcgen05" in m.source
    assert arch_of("B300") == arch_of("GB300") == "blackwell-ultra"


def test_an_alias_computes_its_models_bits():
    """One alias per op (and the scaled ones): the same bits as its B200 model on a validation mix."""
    seen = set()
    for al in alias_models():
        m = get_model(ALIASES[al.id])
        key = (m.op, m.scale_fmt, m.mixed)
        if key in seen:
            continue
        seen.add(key)
        k = m.block(m.L or 1) if m.op != "fma" else 4
        fa, fb = m.operand_fmts
        x, y, c, _ = validation_mix(fa, m.c_fmt, k, 200, seed=5, b_fmt=fb)
        sc = (None, None)
        if m.scale_fmt:
            n = -(-k // m.scale_block)
            sc = (np.full((200, n), 0x7F, np.uint64), np.arange(200 * n, dtype=np.uint64).reshape(200, n) % 0x7F)
        assert np.array_equal(al.evaluate(x, y, c, *sc), m.evaluate(x, y, c, *sc)), al.id
    assert len(seen) >= 5


def test_a_b300_kernel_names_its_alias():
    from hw_runner.kernels import get_kernel
    al = get_model("blackwell-ultra-bf16-fp32")
    assert al.kernels and model_for_kernel(al.kernels[0], 103).id == al.id
    assert all(get_kernel(k).supports("sm_103") for m in alias_models() for k in m.kernels)


def test_models_lists_aliases_and_says_unvalidated(capsys):
    assert cli.main(["models", "--arch", "blackwell-ultra"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(alias_models())
    assert all("UNVALIDATED" in line and "ASSUMPTION" in line for line in lines)
