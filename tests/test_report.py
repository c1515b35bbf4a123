"""The results page on a small subset: every model with its parameters, citation, kernels,
hardware sets matched (the GPUs' own outputs, ../shared/hwdata), rivals with the suite's vectors,
Table 9 bounds and scheme results, the figures it links all present."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mmaprobe import cli
from smtmodel.papers import citations

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
HW = ROOT.parent / "shared" / "hwdata"
MODELS = ["volta-fp16-fp32", "volta-fp16-fp32-carry3", "turing-fp16-fp32"]


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.src, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.src.append(a["src"])
        if tag == "a" and a.get("href", "").startswith("figures/"):
            self.src.append(a["href"])
        if "id" in a:
            self.ids.add(a["id"])


@pytest.mark.skipif(not HW.is_dir(), reason="needs ../shared/hwdata")
def test_report_on_a_small_subset(tmp_path, capsys):
    b = tmp_path / "b.json"
    assert cli.main(["bound", "volta-fp16-fp32", "--timeout", "60", "--quiet", "-o", str(b)]) == 0
    s = tmp_path / "s"
    assert cli.main(["plot", "schemes", "--schemes", "fp16", "oy-fp16", "--ks", "8", "--cases", "8",
                     "--workers", "0", "--quiet", "-o", str(s)]) == 0
    site = tmp_path / "site"
    assert cli.main(["report", "-o", str(site), "--models", *MODELS, "--hwdata", str(HW),
                     "--suite", str(ROOT / "generated_tests" / "index.json"), "--bounds", str(b),
                     "--schemes", str(s) + ".json", "--cases", "100", "--workers", "0", "--quiet"]) == 0
    html = (site / "index.html").read_text()
    p = Links()
    p.feed(html)
    assert set(MODELS) <= p.ids
    assert p.src and all((site / x).stat().st_size > (100 if x.endswith(".json") else 2000) for x in p.src)
    # hardware: the V100 set is Volta's own output, matched in full; Turing's model does not match it
    assert re.search(r"v100_fp16_fp32: 5000/5000", html)
    turing = html[html.index('id="turing-fp16-fp32"'):]
    assert "v100_fp16_fp32: 5000/5000" not in turing[:turing.index("</div>")]
    # citation of seed 000 (the source of the Volta model), kernels, parameters
    (seed000,) = [c for c in citations("seed 000") if c.seed == "000"]
    assert seed000.title in html
    assert "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32" in html and "L=4" in html and "F=23" in html
    # rivals with the suite's deciding vector (k of the committed suite entry)
    suite = json.loads((ROOT / "generated_tests" / "index.json").read_text())["results"]
    k = suite["volta-fp16-fp32__vs__volta-fp16-fp32-carry3"]["k"]
    volta = html[html.index('id="volta-fp16-fp32"'):]
    assert f"k={k}; a=[" in volta[:volta.index("</div>")]
    # Table 9 row from the bound run, scheme points from the scan
    bound = json.loads(b.read_text())[0]
    assert bound["bound"].replace("<", "&lt;") in html and "oy-fp16@K=8" in html
    assert not list(site.glob(".*.tmp"))


def test_report_lists_every_model_that_mmaprobe_models_prints(tmp_path, capsys):
    """Every id `mmaprobe models` prints (floating-point, rivals and integer MMA models) is on the
    page; the integer models sit in their own table. Expected ids: the `models` command's own output."""
    assert cli.main(["models"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line and not line[0].isspace()]
    from smtmodel.catalog import integer_models
    ints = {m.id for m in integer_models()}
    assert ints and ints < set(listed)
    site = tmp_path / "site"
    empty = tmp_path / "no-hwdata"
    empty.mkdir()
    assert cli.main(["report", "-o", str(site), "--hwdata", str(empty), "--suite",
                     str(ROOT / "generated_tests" / "index.json"), "--no-figures", "--workers", "0", "--quiet"]) == 0
    html = (site / "index.html").read_text()
    p = Links()
    p.feed(html)
    assert set(listed) <= p.ids
    table = html[html.index('<h2 id="integer">'):html.index('<h2 id="bounds">')]
    rows = set(re.findall(r'<tr id="([^"]+)">', table))
    assert rows == ints
    assert "turing-s8-s32-satfinite" in table and "clamped (.satfinite)" in table and "wrapped mod 2^32" in table
    assert f"{len(listed)} models" in html


def test_report_with_an_integer_model_selected(tmp_path):
    """--models mixes floating-point and integer ids; the integer one lands in the integer table with
    its instruction's K (16 for Turing's m8n8k16, PTX ISA) and its harness kernel."""
    site = tmp_path / "site"
    empty = tmp_path / "no-hwdata"
    empty.mkdir()
    assert cli.main(["report", "-o", str(site), "--models", "volta-fp16-fp32", "turing-s8-s32", "--hwdata", str(empty),
                     "--suite", str(ROOT / "generated_tests" / "index.json"), "--no-figures", "--workers", "0",
                     "--quiet"]) == 0
    html = (site / "index.html").read_text()
    table = html[html.index('<h2 id="integer">'):html.index('<h2 id="bounds">')]
    row = table[table.index('<tr id="turing-s8-s32">'):]
    row = row[:row.index("</tr>")]
    assert "<td>16</td>" in row and "mma_m8n8k16_s8_s32" in row and "wrapped mod 2^32" in row
    assert 'id="volta-fp16-fp32"' in html[:html.index('<h2 id="integer">')]


def test_report_shows_each_models_properties_from_a_journal(tmp_path, capsys):
    """Each model's properties come from a journal of bench/properties.py: the checked model's
    answer, and for a model with the same parameters (B200 fp16 = Hopper fp16) that answer named
    as borrowed; a journal that does not exist is one line, exit 2."""
    journal = tmp_path / "p.jsonl"
    journal.write_text(json.dumps({"model": "hopper-fp16-fp32", "property": "monotonicity-normal", "timeout": 6.0,
                                   "status": "refuted", "solver": "twin", "seconds": 0.7}) + "\n")
    site = tmp_path / "site"
    empty = tmp_path / "no-hwdata"
    empty.mkdir()
    args = ["report", "-o", str(site), "--models", "hopper-fp16-fp32", "blackwell-fp16-fp32", "--hwdata", str(empty),
            "--suite", str(ROOT / "generated_tests" / "index.json"), "--no-figures", "--workers", "0", "--quiet"]
    assert cli.main(args + ["--properties", str(journal)]) == 0
    html = (site / "index.html").read_text()
    assert "monotonicity-normal</span>: refuted (twin, 0.7 s)<br>" in html
    assert "refuted (twin, 0.7 s) (as hopper-fp16-fp32)" in html
    capsys.readouterr()
    assert cli.main(args + ["-o", str(tmp_path / "s2"), "--properties", str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
