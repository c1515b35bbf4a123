"""The catalog against the seeds' worked examples (expected values quoted from the papers)."""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.catalog import all_models, get_model
from smtmodel.formats import bits_to_numpy, get_format, numpy_to_bits
from smtmodel.model import ModelError
from smtmodel.sampling import round_to


def run(model_id, a, b, c, k=None):
    """Evaluate one case given as float values; pads a/b with zeros to k entries."""
    m = get_model(model_id)
    k = k or len(a)
    av = np.zeros((1, k)); bv = np.zeros((1, k))
    av[0, :len(a)] = a; bv[0, :len(b)] = b
    A = _bits(av, m.in_fmt); B = _bits(bv, m.in_fmt); C = _bits(np.array([c]), m.c_fmt)
    d = m.evaluate(A, B, C)
    return float(bits_to_numpy(d, m.out_fmt).astype(np.float64)[0])


def _bits(x, fmt):
    f = get_format(fmt)
    if f.name == "tf32":
        return numpy_to_bits(np.asarray(x, dtype=np.float32), "fp32")
    out = numpy_to_bits(np.asarray(x, dtype=np.float64), f)
    back = bits_to_numpy(out, f).astype(np.float64)
    assert np.array_equal(back, np.asarray(x, dtype=np.float64)), f"inputs not exact in {fmt}"
    return out


# ---- seed 000 Table 8: one input, six answers --------------------------------------------
EQ10_A = [-2.0 ** 13, -0.5, -0.25, -0.125]
EQ10_B = [2.0 ** 10, 1.0, 1.0, 1.0]
EQ10_C = 2.0 ** 23
TABLE8 = [  # (model, K, expected d from seed 000 Table 8)
    ("volta-fp16-fp32", 4, 0.0), ("turing-fp16-fp32", 8, -0.5),
    ("ampere-tf32-fp32", 4, -0.5), ("ampere-bf16-fp32", 8, -0.5), ("ampere-fp16-fp32", 8, -0.5),
    ("ada-tf32-fp32", 4, -0.5), ("ada-bf16-fp32", 8, -0.5), ("ada-fp16-fp32", 8, -0.5),
    ("ada-fp8e5m2-fp32", 16, 0.0),
    ("hopper-tf32-fp32", 8, -0.75), ("hopper-bf16-fp32", 16, -0.75), ("hopper-fp16-fp32", 16, -0.75),
    ("hopper-fp8e5m2-fp32", 32, 0.0),
    ("blackwell-tf32-fp32", 8, -0.75), ("blackwell-bf16-fp32", 16, -0.75),
    ("blackwell-fp16-fp32", 16, -0.75), ("blackwell-fp8e5m2-fp32", 32, -0.75),
    ("rtx-blackwell-tf32-fp32", 8, -0.75), ("rtx-blackwell-bf16-fp32", 16, -0.75),
    ("rtx-blackwell-fp16-fp32", 16, -0.75), ("rtx-blackwell-fp8e5m2-fp32", 32, -0.75),
    ("cdna1-bf16-fp32", 4, -0.875), ("cdna1-fp16-fp32", 4, -0.875),
    ("cdna2-bf16-fp32-legacy", 4, -0.375), ("cdna2-bf16-fp32", 4, 0.0), ("cdna2-fp16-fp32", 4, 0.0),
    ("cdna3-tf32-fp32", 4, -0.5), ("cdna3-bf16-fp32", 8, -0.5), ("cdna3-fp16-fp32", 8, -0.5),
    ("cdna3-fp8e5m2fnuz-fp32", 16, -1.0),
    ("cdna1-fp32-fp32", 4, -0.875), ("cdna2-fp32-fp32", 4, -0.875), ("cdna3-fp32-fp32", 4, -0.875),
    ("hopper-fp64-fp64", 4, -0.875), ("cdna3-fp64-fp64", 4, -0.875),
]


@pytest.mark.parametrize("model,k,expected", TABLE8, ids=[t[0] for t in TABLE8])
def test_seed000_table8(model, k, expected):
    # FP8 rows use E5M2: 2^13 does not fit E4M3 (max 448); seed 000 does not say which FP8 format.
    # CDNA1 bf16 (L=2) chains two blocks over K=4; the exact -0.875 survives the chaining.
    assert run(model, EQ10_A, EQ10_B, EQ10_C, k) == expected


def test_table8_fp8_via_mma_sync_differs_from_native_blackwell():
    """Seed 000's Blackwell FP8 row (-0.75) is the native path. Through mma.sync (seed 001
    §IV-A6) the products split into interleaved halves rounded RZ to fp32: -2^23 - 0.5 loses the
    0.5, -0.25 and -0.125 are then cut against -2^23, and c cancels everything: 0.0."""
    assert run("blackwell-fp8e5m2-fp32-mmasync", EQ10_A, EQ10_B, EQ10_C, 32) == 0.0


# ---- seed 001 §IV-A: unnormalised products ------------------------------------------------
def test_seed001_v100_unnormalised_products():
    p23 = (2.0 ** -12, 2.0 ** -11)       # a product of exactly 2^-23
    a = [1.5, p23[0], p23[0]]; b = [1.5, p23[1], p23[1]]
    assert run("volta-fp16-fp32", a, b, 0.0, 4) == 2.25 + 2.0 ** -22
    assert run("volta-fp16-fp32", [1.0, p23[0], p23[0]], [2.25, p23[1], p23[1]], 0.0, 4) == 2.25
    assert run("volta-fp16-fp32", [0.0, p23[0], p23[0]], [0.0, p23[1], p23[1]], 2.25, 4) == 2.25
    # seed 002's normalised reading gets the first case wrong: it is a rival, refuted here
    assert run("volta-fp16-fp32-normalized", a, b, 0.0, 4) == 2.25


def test_seed001_a100_unnormalised_products():
    a = [1.5, 2.0 ** -12, 2.0 ** -12, 2.0 ** -12]; b = [1.5, 2.0 ** -11, 2.0 ** -12, 2.0 ** -12]
    assert run("ampere-fp16-fp32", a, b, 0.0, 8) == 2.25 + 2.0 ** -22


def test_seed001_h100_unnormalised_products():
    a = [1.5, 1.75 * 2.0 ** -12, 2.0 ** -12]; b = [1.5, 2.0 ** -11, 2.0 ** -13]
    assert run("hopper-fp16-fp32", a, b, 0.0, 16) == 2.25 + 2.0 ** -22


# ---- the model API -------------------------------------------------------------------------
def test_overrides_and_errors():
    m = get_model("hopper-fp16-fp32:F=24,carry=3")
    assert (m.F, m.carry, m.L) == (24, 3, 16)
    assert get_model("volta-fp16-fp32:normalize=true").normalize
    for bad in ("hopper-fp16-fp32:X=1", "hopper-fp16-fp32:F=abc", "hopper-fp16-fp32:F", "nope-fp16-fp32",
                "hopper-fp16-fp32:rho=RZ-FP8"):
        with pytest.raises(ModelError):
            get_model(bad)
    with pytest.raises(ModelError):      # any K is zero-padded; a and b of unequal K are not
        get_model("volta-fp16-fp32").evaluate(np.zeros((2, 6), np.uint64), np.zeros((2, 5), np.uint64), np.zeros(2, np.uint64))


def test_catalog_ids_and_metadata():
    ids = [m.id for m in all_models()]
    assert len(ids) == len(set(ids))
    for need in ("volta-fp16-fp32", "hopper-fp8e4m3-fp16", "rtx-blackwell-fp16-fp32", "cdna3-fp8e4m3fnuz-fp32",
                 "hopper-fp8e4m3-fp32-mmasync", "blackwell-fp8e4m3-fp32-mmasync", "blackwell-fp8e5m2-fp16-mmasync",
                 "cdna2-bf16-fp32-legacy", "volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3"):
        assert need in ids
    for m in all_models():
        assert m.description and m.source, m.id


def test_chaining_over_k_longer_than_block():
    """Algorithm 5: K = 2L is two chained blocks; computed independently here from one block."""
    m = get_model("volta-fp16-fp32")
    rng = np.random.default_rng(3)
    a = round_to(rng.standard_normal((50, 8)), "fp16")
    b = round_to(rng.standard_normal((50, 8)), "fp16")
    c = round_to(rng.standard_normal(50), "fp32")
    first = m.evaluate(a[:, :4], b[:, :4], c)
    assert np.array_equal(m.evaluate(a, b, c), m.evaluate(a[:, 4:], b[:, 4:], first))
