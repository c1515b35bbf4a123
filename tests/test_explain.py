"""mmaprobe explain (queries.explain): one input giving each model its observed output, or a proof
that none exists."""

from __future__ import annotations

import numpy as np
import pytest

from mmaprobe.cli import main
from queries.distinguish import QueryError
from queries.explain import explain, parse_observation
from smtmodel.catalog import get_model


def _value(bits, fmt="fp32"):
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def test_finds_an_input_with_different_answers_per_model():
    # Volta truncates to F=23 bits below the largest exponent, Ampere keeps 24 (seed 000 Table 4): with
    # 1 + 2^-24 the two differ. Ask for Volta = 1.0 and Ampere = 1 + 2^-23 at once.
    obs = [("volta-fp16-fp32", 1.0), ("ampere-fp16-fp32", 1.0 + 2.0 ** -23)]
    ex = explain(obs, 4, solver="bitwuzla", timeout=120)
    assert ex.status == "sat"
    a, b, c = np.array([ex.a], np.uint64), np.array([ex.b], np.uint64), np.array([ex.c], np.uint64)
    for spec, want in obs:            # re-evaluated here, independently of explain's own check
        assert _value(int(get_model(spec).evaluate(a, b, c)[0])) == want


def test_proves_that_no_input_exists():
    # Ampere and Turing fp16 -> fp32 are the same T-FDPA (L=8, F=24, RZ): no input gives 1 and 2.
    ex = explain([("ampere-fp16-fp32", 1.0), ("turing-fp16-fp32", 2.0)], 8, solver="bitwuzla", timeout=120)
    assert ex.status == "unsat"


@pytest.mark.parametrize("obs", [[("hopper-fp16-fp32", 0.1)], [("hopper-fp16-fp32", 1.0), ("hopper-bf16-fp32", 1.0)], []])
def test_bad_observations(obs):
    with pytest.raises(QueryError):
        explain(obs, 16, timeout=5)


def test_parse_and_cli(capsys):
    assert parse_observation("cdna1-fp16-fp32=255.875") == ("cdna1-fp16-fp32", 255.875)
    with pytest.raises(QueryError):
        parse_observation("nothing")
    assert main(["explain", "--observe", "hopper-fp16-fp32=abc", "--k", "16"]) == 2
    rc = main(["explain", "--observe", "ampere-fp16-fp32=1", "--observe", "turing-fp16-fp32=2", "--k", "8",
               "--solver", "bitwuzla", "--timeout", "60"])
    assert rc == 1 and "no input of 8 products" in capsys.readouterr().out


@pytest.mark.slow
def test_seed003_five_gpus():
    """Seed 003 §I: D = C - A·B gave 0 on V100, A100 and MI250X, 255.875 on MI100, 191.875 on H100."""
    obs = [("volta-fp16-fp32", 0.0), ("ampere-fp16-fp32", 0.0), ("cdna2-fp16-fp32", 0.0),
           ("cdna1-fp16-fp32", 255.875), ("hopper-fp16-fp32", 191.875)]
    ex = explain(obs, 16, solver="portfolio", timeout=600, negate_products=True)
    assert ex.status in ("sat", "unsat")
