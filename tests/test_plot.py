"""Figures and the statistics behind them (queries.stats): errors against an exact result
computed here independently, discrepancy fractions, scheme scans as a campaign."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from mmaprobe import cli
from queries.stats import differ, discrepancy_matrix, draw, error_ulps, exact_dots, summary
from smtmodel.catalog import get_model

pytest.importorskip("matplotlib")
SUITE = Path(__file__).resolve().parent.parent / "generated_tests" / "index.json"


def test_exact_dots_and_errors_by_hand():
    # fp16 inputs 1.5 * 2 + 0.25 * 0.5, c = 1 (fp32): exact 4.125; d = 4.0 is 0.125 / 2^-21 ulps off
    h = lambda x: np.float16(x).view(np.uint16).astype(np.uint64)
    f = lambda x: np.float32(x).view(np.uint32).astype(np.uint64)
    a = np.array([[h(1.5), h(0.25)]])
    b = np.array([[h(2.0), h(0.5)]])
    c = np.array([f(1.0)])
    (ex,) = exact_dots(a, b, c, "fp16", "fp32")
    assert ex == Fraction(33, 8)
    err = error_ulps(np.array([f(4.0)]), [ex], "fp32")
    assert err[0] == -0.125 / 2.0 ** -21
    assert summary(err)["max_abs"] == 0.125 * 2 ** 21


def test_an_exact_model_has_no_error_and_rounding_models_do():
    m = get_model("hopper-fp16-fp32")
    a, b, c = draw(m.in_fmt, m.c_fmt, 16, 300, "normal", 3)
    ex = exact_dots(a, b, c, m.in_fmt, m.c_fmt)
    e = error_ulps(m.evaluate(a, b, c), ex, m.out_fmt)
    assert np.all(np.isfinite(e)) and 0 < summary(e)["exact_fraction"] < 1
    # an fp32 output with round-to-nearest of the exact sum is off by at most 1/2 ulp: check the
    # reference itself by rounding the exact values to fp32 with Python floats (RNE)
    rne = np.array([np.float32(float(x)).view(np.uint32) for x in ex], dtype=np.uint64)
    assert np.abs(error_ulps(rne, ex, "fp32")).max() <= 0.5


def test_discrepancy_matrix_counts_differences_nan_equal():
    nan1, nan2 = 0x7FC00000, 0x7FC00001
    outs = {"x": np.array([1, 2, nan1, 4]), "y": np.array([1, 3, nan2, 4]), "z": np.array([0, 2, nan1, 5])}
    ids, m = discrepancy_matrix(outs, "fp32")
    assert ids == ["x", "y", "z"] and m[0, 1] == 0.25 and m[0, 2] == 0.5 and m[1, 2] == 0.75
    assert np.allclose(m, m.T) and not m.diagonal().any()
    assert differ([nan1], [nan2], "fp32").tolist() == [False]


def test_plot_commands_write_png_svg_and_data(tmp_path, capsys):
    out = tmp_path / "err"
    assert cli.main(["plot", "errors", "--model", "volta-fp16-fp32", "--model", "hopper-fp16-fp32",
                     "--cases", "200", "-o", str(out)]) == 0
    for ext in ("png", "svg", "json"):
        assert (tmp_path / f"err.{ext}").stat().st_size > 1000
    assert (tmp_path / "err.png").read_bytes()[:4] == b"\x89PNG"
    data = json.loads((tmp_path / "err.json").read_text())
    assert set(data["models"]) == {"volta-fp16-fp32", "hopper-fp16-fp32"}
    assert cli.main(["plot", "discrepancy", "--model", "volta-fp16-fp32", "--model", "volta-fp16-fp32-carry3",
                     "--cases", "100", "--suite", str(SUITE), "-o", str(tmp_path / "d.png")]) == 0
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["fraction"][0][1] > 0 and d["suite_k"][0][1] == 4          # the committed suite's vector size
    assert cli.main(["plot", "schemes", "--schemes", "fp16", "oy-fp16", "--ks", "8", "16", "--cases", "16",
                     "--workers", "0", "--quiet", "-o", str(tmp_path / "s")]) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    pts = s["points"]
    assert set(pts) == {"fp16@K=8", "fp16@K=16", "oy-fp16@K=8", "oy-fp16@K=16"}
    assert pts["oy-fp16@K=16"]["mean_ulp"] < pts["fp16@K=16"]["mean_ulp"]   # seed 002: O-Y recovers fp32
    assert (tmp_path / "s.json.journal").exists()


def test_plot_refuses_mixed_formats(tmp_path, capsys):
    rc = cli.main(["plot", "errors", "--model", "volta-fp16-fp32", "--model", "volta-fp16-fp16",
                   "-o", str(tmp_path / "x")])
    assert rc == 2 and "different formats" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_scheme_table_figure_and_bad_table(tmp_path, capsys):
    """The scheme-table figure reads the rows `mmaprobe scheme table -o` writes (here written by
    hand: two schemes, one refused bound); a file that is not such rows is one line, exit 2."""
    rows = [{"scheme": "fp32", "tc_products": 0, "k": 32, "proved_comp": 2 ** -19, "proved_bits": 19.0,
             "found_comp": 2 ** -23, "found_bits": 23.0, "searched_comp": 2 ** -24, "searched_over_proved": 2 ** -5,
             "refused": ""},
            {"scheme": "bf16x3-triton@hopper-bf16-fp32", "tc_products": 3, "k": 32, "proved_comp": None,
             "proved_bits": None, "found_comp": 2 ** -16, "found_bits": 16.0, "searched_comp": None,
             "searched_over_proved": None, "refused": "why"}]
    t = tmp_path / "t.json"
    t.write_text(json.dumps(rows))
    assert cli.main(["plot", "scheme-table", str(t), "-o", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 1000 and json.loads((tmp_path / "fig.json").read_text())["rows"] == rows
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"vs": "K"}))
    capsys.readouterr()
    assert cli.main(["plot", "scheme-table", str(bad), "-o", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not the rows" in err[0] and not (tmp_path / "g.png").exists()
