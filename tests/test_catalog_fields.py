"""The catalog's data fields: kind / rival_of, sm / gfx, the harness kernels, the model variants
read by the one ``build`` (as overrides), the op table, and the seed citations."""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner.kernels import KERNELS, get_kernel
from smtmodel.catalog import all_models, get_model, integer_models, model_for_kernel, rivals_of
from smtmodel.model import OPS, OVERRIDES, ModelError
from smtmodel.papers import SEEDS, cite, citations

MODELS = all_models()
BY_ID = {m.id: m for m in MODELS}


def test_rivals_point_at_their_catalog_model():
    rivals = [m for m in MODELS if m.kind == "rival"]
    assert len(rivals) == 49       # 32 from the seeds, 5 in dispute (disputes.md), 12 CDNA4 NVIDIA-like readings
    for m in rivals:
        base = BY_ID[m.rival_of]
        assert base.kind == "catalog" and base.rival_of is None
        assert (m.in_fmt, m.c_fmt, m.out_fmt, m.arch, m.sm, m.kernels) == \
               (base.in_fmt, base.c_fmt, base.out_fmt, base.arch, base.sm, base.kernels)
        assert m != base
    assert all(m.rival_of is None for m in MODELS if m.kind == "catalog")
    assert sorted(r.id for r in rivals_of("volta-fp16-fp32")) == [
        "volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3", "volta-fp16-fp32-carry4", "volta-fp16-fp32-normalized"]
    assert rivals_of("cdna3-fp16-fp32") == []


def test_every_model_names_its_target():
    for m in MODELS:
        if m.arch.startswith("cdna"):
            assert m.sm is None and m.gfx in ("gfx908", "gfx90a", "gfx942", "gfx950"), m.id
        else:
            assert m.gfx is None and m.sm in (70, 75, 80, 89, 90, 100, 120), m.id


def test_kernels_exist_fit_and_run_on_the_models_sm():
    named = 0
    for m in MODELS:
        for kid in m.kernels:
            spec = get_kernel(kid)
            assert (getattr(spec, "in_key", spec.in_fmt), spec.c_fmt, spec.out_fmt) == (m.in_key, m.c_fmt, m.out_fmt), \
                (m.id, kid)
            assert spec.supports(m.gfx or f"sm_{m.sm}"), (m.id, kid)
            named += 1
    assert named > 80


def test_fp8_kernels_pick_the_path_their_sass_shows():
    """m16n8k32 FP8 lowers to HMMA (fp16 work) on sm_90/sm_100 -- the -mmasync models -- and to
    QMMA on sm_89/sm_120 -- Table 4's T-FDPA (seed 001 §IV-A5/A6; hw_runner.kernels' SASS table)."""
    for m in MODELS:
        for kid in (m.kernels if m.sm else ()):
            sass = KERNELS[kid].expected_sass(f"sm_{m.sm}")
            if m.in_fmt.startswith("fp8"):
                assert (m.op == "fp8_via_fp16") == sass.startswith("HMMA"), (m.id, kid, sass)


def test_each_kernel_and_sm_has_one_catalog_model():
    owner = {}
    for m in MODELS:
        if m.kind != "catalog" or not m.sm:
            continue
        for kid in m.kernels:
            assert (kid, m.sm) not in owner, (kid, m.sm, owner.get((kid, m.sm)), m.id)
            owner[(kid, m.sm)] = m.id
    assert owner[("mma_m16n8k32_e4m3_f16", 90)] == "hopper-fp8e4m3-fp16-mmasync"
    assert owner[("wgmma_m64n8k32_e4m3_f32", 90)] == "hopper-fp8e4m3-fp32"
    for (kid, sm), mid in owner.items():
        assert model_for_kernel(kid, sm).id == mid
    assert model_for_kernel("mma_m16n8k32_e4m3_f32", 80) is None


@pytest.mark.parametrize("text", ["round_products=RNE", "flush_outputs=positive", "c_entry=end,c_rm=RZ",
                                  "op=fma,L=1", "flush_outputs=signed,round_products=RZ"])
def test_variants_are_overrides_that_rebuild_from_their_id(text):
    m = get_model(f"volta-fp16-fp16:{text}")
    assert get_model(m.id) == m and m.kind == "catalog"
    for key in [kv.split("=")[0] for kv in text.split(",")]:
        assert key in OVERRIDES


@pytest.mark.parametrize("text", ["c_entry=late", "c_rm=up", "round_products=RQ", "flush_outputs=yes", "op=mac"])
def test_bad_variant_values_are_refused(text):
    with pytest.raises(ModelError):
        get_model(f"volta-fp16-fp16:{text}")


def test_variants_by_hand():
    """Expected values by hand (fp16 bits): products rounded first, c added last with RZ,
    outputs flushed."""
    base = get_model("volta-fp16-fp32")
    # c = 1, one product 2^-24 * (1 + 2^-10) (exact, below c's ulp): aligned with c and truncated
    # it is lost either way; added last with RZ too. a = 2^-14 (0x0400), b = 2^-10 + 2^-20 (0x1401).
    a = np.array([[0x0400, 0, 0, 0]], dtype=np.uint64)
    b = np.array([[0x1401, 0, 0, 0]], dtype=np.uint64)
    c = np.array([0x3F800000], dtype=np.uint64)
    assert int(base.evaluate(a, b, c)[0]) == 0x3F800000
    assert int(get_model("volta-fp16-fp32:c_entry=end,c_rm=RZ").evaluate(a, b, c)[0]) == 0x3F800000
    # ... but with RU the late addition rounds 1 + tiny up to 1 + 2^-23
    assert int(get_model("volta-fp16-fp32:c_entry=end,c_rm=RU").evaluate(a, b, c)[0]) == 0x3F800001
    # products rounded to fp16 first: 2^-24 (1 + 2^-10) -> 2^-24 (the smallest subnormal), c = 0
    c0 = np.array([0], dtype=np.uint64)
    assert int(base.evaluate(a, b, c0)[0]) == 0x33802000                      # 2^-24 (1 + 2^-10) exact
    assert int(get_model("volta-fp16-fp32:round_products=RNE").evaluate(a, b, c0)[0]) == 0x33800000
    # fp16 output: 2^-14 * 2^-1 = 2^-15 is subnormal in fp16: kept, or flushed to +0
    h = get_model("volta-fp16-fp16")
    a, b = np.array([[0x0400, 0, 0, 0]], dtype=np.uint64), np.array([[0xB800, 0, 0, 0]], dtype=np.uint64)
    assert int(h.evaluate(a, b, c0)[0]) == 0x8200
    assert int(get_model("volta-fp16-fp16:flush_outputs=signed").evaluate(a, b, c0)[0]) == 0x8000
    assert int(get_model("volta-fp16-fp16:flush_outputs=positive").evaluate(a, b, c0)[0]) == 0x0000


def test_op_table_covers_every_catalog_op():
    assert {m.op for m in MODELS + integer_models()} == set(OPS)


def test_citations_of_every_source():
    assert sorted(SEEDS) == ["000", "001", "002", "003", "004"]
    for m in MODELS:
        assert citations(m.source), m.id
    assert [p.seed for p in citations("seed 002 Algorithm 1 step 1 (vs unnormalised products, seeds 000/001)")] \
        == ["002", "000", "001"]
    text = cite("seed 000 Table 4")
    assert text.startswith("seed 000: Peichen Xie, Shuotao Xu") and "arXiv:2511.10909" in text
    assert "FTTN" in cite("seed 003 §III") and "CCGrid59990.2024.00014" in cite("seed 003 §III")
    assert cite("no seed named here") == ""
