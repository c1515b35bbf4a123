"""Worst-case error bounds of GEMM schemes proved by composition (queries/schemes/bound.py).

Expected values: (1) soundness is checked against the twin: the exact error of every random
input (the error formula's exact integer arithmetic) must stay within the bound; (2) the plain
fp32 FMA chain must land between the first-order term K*u and Higham's gamma_K = K u / (1 - K u)
(Higham, Accuracy and Stability, 2nd ed., §3.1, dot products with FMA).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from queries.schemes import InputRange
from queries.schemes.bound import compose
from queries.schemes.witness import twin_worst_comp
from smtmodel.schemes.core import SchemeError


FP8_PLAIN = '{"base": "fp16", "name": "fp8-plain", "split": {"fmt": "fp8e4m3fnuz", "pieces": 1}}'


def observed_comp(scheme, model, k, rng, n=3000, seeds=(0, 1)):
    """Largest |err| / (|c| + sum |a_k b_k|) over random inputs (half of them near fp16's
    subnormal range with all-ones significands), exact integers from the error formula."""
    return twin_worst_comp(scheme, model, k, rng, n, seeds)


# Each pair proves its own lemmas (5-20 s of solver time): the default run composes one of each
# kind (the IEEE chain, Markidis, O-Y on T-FDPA, the seed's own O-Y, an AMD TR-FDPA split); the
# rest -m slow.
SLOW = pytest.mark.slow


@pytest.mark.parametrize("scheme,model", [
    ("fp32", None), pytest.param("fp16", "ampere-fp16-fp32", marks=SLOW), ("markidis", "volta-fp16-fp32"),
    pytest.param("oy-fp16", "ampere-fp16-fp32", marks=SLOW), ("oy-fp16", "hopper-fp16-fp32"),
    pytest.param("oy-tf32", "ampere-tf32-fp32", marks=SLOW), ("oy-seed002", None),
    pytest.param("3xtf32", "ampere-tf32-fp32", marks=SLOW), pytest.param("xf32-cdna3", "cdna3-tf32-fp32", marks=SLOW),
    pytest.param("tf32-gfx950", None, marks=SLOW), (FP8_PLAIN, "cdna3-fp8e4m3fnuz-fp32")])
def test_composed_bound_holds_on_random_inputs(scheme, model):
    """T-FDPA models by Table 9's alpha, the AMD TR-/GTR-FDPA models by the proved tr_alpha (units
    2^(E - F), E = max(e_max, Exp(c)))."""
    rng = InputRange(exp_range=(-6, 6), c_exp_range=(-6, 6)) if scheme == FP8_PLAIN else InputRange()
    b = compose(scheme, 4, model, rng)
    seen = observed_comp(scheme, model, 4, rng)
    assert seen > 0
    assert seen <= Fraction(b.comp), (float(seen), b.comp)


def test_fp32_chain_between_first_order_and_gamma():
    u = Fraction(1, 1 << 24)
    for k in (1, 4, 16):
        b = compose("fp32", k, None, InputRange())
        assert k * u <= Fraction(b.comp) <= k * u / (1 - k * u) + Fraction(1, 1 << 60), (k, b.comp)


def test_oy_beats_plain_fp16_by_orders_of_magnitude():
    """The proved bounds order the schemes as the seeds describe: O-Y's split recovers roughly
    fp32 accuracy, the plain fp16 pass is limited by fp16 rounding of the inputs."""
    o = compose("oy-fp16", 16, "ampere-fp16-fp32").comp
    p = compose("fp16", 16, "ampere-fp16-fp32").comp
    assert o * 100 < p


def test_refuses_what_it_cannot_bound():
    with pytest.raises(SchemeError, match="exponent ranges"):
        compose("oy-fp16", 4, "ampere-fp16-fp32", InputRange(exp_range=None))
    with pytest.raises(SchemeError, match="overflow fp16"):
        compose("fp16", 4, "ampere-fp16-fp32", InputRange(exp_range=(-15, 15)))
    # below 2^-126 the range admits subnormal inputs (a review found c = 2^-149 truncated away
    # entirely next to a zero product aligned at -125: |err| = 1.0 x (|c| + sum |a_k b_k|))
    with pytest.raises(SchemeError, match=">= -126"):
        compose("fp16", 4, "volta-fp16-fp32", InputRange(exp_range=(-10, 1), c_exp_range=(-127, 1)))
    # near fp32's top a directed combination saturates instead of overflowing (review: d = 3.4e38
    # for an exact 6.7e38 with combine_rm = RZ)
    with pytest.raises(SchemeError, match="overflow fp32"):
        compose('{"base": "oy-tf32", "name": "oy-tf32-rz", "combine_rm": "RZ"}', 16, None, InputRange(exp_range=(62, 62)))
