"""``mmaprobe scheme ozaki-*``, ``scheme list`` and ``models``/``formats`` with the integer MMA
models: output, exit codes, nothing written on bad input."""

from __future__ import annotations

import json

import numpy as np

from mmaprobe import cli
from mmaprobe.errors import EXIT_OTHER, EXIT_USAGE


def test_list_shows_ozaki_and_integer_models(capsys):
    assert cli.main(["scheme", "list"]) == 0
    out = capsys.readouterr().out
    assert "ozaki1-s8 " in out and "ozaki2-n14" in out and "min(7, (31 - ceil(log2 k)) // 2)" in out
    assert cli.main(["models", "--arch", "hopper"]) == 0
    assert "hopper-s8-s32-satfinite" in capsys.readouterr().out
    assert cli.main(["formats", "int8", "uint4"]) == 0
    assert "range [-128, 127]" in capsys.readouterr().out


def test_ozaki_gemm_runs_and_writes(tmp_path, capsys):
    out = tmp_path / "o.json"
    d = tmp_path / "d.npy"
    rc = cli.main(["scheme", "ozaki-gemm", "ozaki1-s12", "--m", "8", "--n", "8", "--k", "32", "--sample", "8",
                   "--alpha", "2", "-o", str(out), "--save", str(d)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["shape"] == [8, 32, 8] and res["max_ulp_vs_exact"] <= 8
    assert np.load(d).shape == (8, 8)


def test_ozaki_gemm_bad_inputs_exit_2_nothing_written(tmp_path, capsys):
    a = np.ones((2, 4))
    a[0, 1] = np.nan
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.ones((4, 2)))
    out = tmp_path / "o.json"
    cases = [["ozaki1-s8", "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy")],
             ["ozaki1-s8", "--beta-bits", "7", "--m", "1", "--n", "1", "--k", "140000"],
             ["ozaki1-s8-beta7", "--m", "1", "--n", "1", "--k", "133145"],
             ["ozaki2-n14", "--k", "140000", "--m", "1", "--n", "1"],
             ["no-such-scheme"]]
    for argv in cases:
        assert cli.main(["scheme", "ozaki-gemm", *argv, "-o", str(out)]) == EXIT_USAGE, argv
        err = capsys.readouterr().err
        assert err.startswith("mmaprobe: error: ") and err.count("\n") == 1, err
        assert not out.exists()
    cli.main(["scheme", "ozaki-gemm", *cases[1], "-o", str(out)])
    assert "smallest k that overflows: 133145" in capsys.readouterr().err


def test_ozaki_prove_wrong_beta_exits_with_witness(tmp_path, capsys):
    out = tmp_path / "p.json"
    rc = cli.main(["scheme", "ozaki-prove", "--rule", "7", "--k-max", "1000000", "--slices", "3", "--bound-k", "8",
                   "-o", str(out)])
    assert rc == EXIT_OTHER
    text = capsys.readouterr().out
    assert "REFUTED" in text and "smallest overflowing k = 133145" in text
    assert json.loads(out.read_text())["overflow"][0]["smallest_k"] == 133145


def test_plot_schemes_vs_ozaki_and_report(tmp_path, capsys):
    """The comparison as a campaign, its figure, and the results page's Ozaki table."""
    out = tmp_path / "oz"
    assert cli.main(["plot", "schemes", "--vs", "ozaki", "--schemes", "ozaki1-s3", "ozaki1-s8", "ozaki2-n12",
                     "fp64-fma", "--ks", "8", "16", "--spreads", "0", "8", "--cases", "3", "--workers", "0",
                     "--quiet", "-o", str(out)]) == 0
    data = json.loads((tmp_path / "oz.json").read_text())
    rows = [r for p in data["points"].values() for r in p["rows"]]
    assert {r["scheme"] for r in rows} == {"ozaki1-s3", "ozaki1-s8", "ozaki2-n12", "fp64-fma"}
    by = {(r["scheme"], r["k"], r["spread"]): r["max"] for r in rows}
    assert by[("ozaki1-s8", 16, 8)] < by[("ozaki1-s3", 16, 8)]
    assert (tmp_path / "oz.png").read_bytes()[:4] == b"\x89PNG"
    site = tmp_path / "site"
    assert cli.main(["report", "-o", str(site), "--models", "ampere-fp16-fp32", "--no-figures",
                     "--ozaki", str(tmp_path / "oz.json"), "--workers", "0", "--quiet"]) == 0
    assert "ozaki2-n12" in (site / "index.html").read_text()
