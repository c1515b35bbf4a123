"""``mmaprobe torch diff|capture|replay`` and the capture/replay step (mmaprobe.torch.capture):
the CLI's report equals the ``diff`` API's (itself checked against gemm_bits in
test_torch_emulate.py); a dry-run capture (CPU tensors, emulated as H100) replays at 100 %, and a
flipped recorded bit or another GPU is caught; bad input is one line, exit 2. Skips without torch."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mmaprobe import cli  # noqa: E402
from mmaprobe.torch import diff  # noqa: E402
from mmaprobe.torch.capture import capture, gpu_of, replay  # noqa: E402
from mmaprobe.torch.diff import load_build, parse_choice  # noqa: E402
from mmaprobe.torch.example import build  # noqa: E402
from smtmodel.model import ModelError  # noqa: E402

BUILD = '''
import torch
import torch.nn.functional as F

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(64, 192), torch.nn.Linear(64, 8)

    def forward(self, x):
        q, k, v = self.qkv(x).view(-1, 3, 4, 16).permute(1, 2, 0, 3)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(a.transpose(0, 1).reshape(-1, 64))

def build(dtype=torch.bfloat16):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    return Net().to(dtype), torch.randn(16, 64, generator=g).to(dtype)

def build_fp32():
    return build(torch.float32)

def broken():
    raise RuntimeError("no weights")
'''


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def netfile(tmp_path):
    p = tmp_path / "net.py"
    p.write_text(BUILD)
    return p


def test_cli_diff_equals_the_api_and_writes_json_and_plot(netfile, tmp_path, capsys):
    out, png = tmp_path / "d.json", tmp_path / "d.png"
    rc = cli.main(["torch", "diff", str(netfile), "--gpu-a", "h100", "--gpu-b", "mi300x", "-o", str(out),
                   "--plot", str(png), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    net, x = load_build(netfile)
    r = diff(net, x, "h100", "mi300x")
    assert r.text() in text and "emulated forwards:" in text
    got = json.loads(out.read_text())
    assert [(c["scope"], c["differ"], c["max_ulp"]) for c in got["calls"]] == \
        [(c.scope, c.differ, c.max_ulp) for c in r.calls]
    assert got["a"] == "h100" and got["b"] == "mi300x" and got["output"]["n"] == 128
    assert sum(c.differ for c in r.calls) > 0           # the two GPUs do differ here: the check can fail
    pytest.importorskip("matplotlib")
    assert png.stat().st_size > 1000


def test_choices_with_flags(netfile, capsys):
    assert parse_choice("h100") == "h100"
    assert parse_choice("h100[tf32=off, reduced=on,workspace=1024]") == \
        {"gpu": "h100", "tf32": False, "reduced": True, "workspace": 1024}
    rc = cli.main(["torch", "diff", str(netfile), "--build", "build_fp32", "--gpu-a", "h100[tf32=off]",
                   "--gpu-b", "h100[tf32=on]", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "h100[tf32=off] vs h100[tf32=on]" in out
    net, x = load_build(netfile, "build_fp32")
    r = diff(net, x, {"gpu": "h100", "tf32": False}, {"gpu": "h100", "tf32": True})
    assert r.text() in out and r.calls[0].differ > 0      # TF32's rounded operands change the first call
    for bad in ("h100[tf32=maybe]", "h100[speed=1]", "h100[", "nogpu"):
        with pytest.raises(ModelError):
            parse_choice(bad)


@pytest.mark.parametrize("argv, msg", [
    (["torch", "diff", "{missing}", "--gpu-a", "h100", "--gpu-b", "b200"], "no such file"),
    (["torch", "diff", "{net}", "--gpu-a", "h100", "--gpu-b", "b200", "--build", "broken"],
     "broken() raised RuntimeError: no weights"),
    (["torch", "diff", "{net}", "--gpu-a", "h100", "--gpu-b", "b200", "--build", "nothing"], "defines no function"),
    (["torch", "diff", "{net}", "--gpu-a", "h100", "--gpu-b", "h100[tf32=maybe]"], "tf32 is on or off"),
    (["torch", "diff", "{net}", "--gpu-a", "h100", "--gpu-b", "rtx9999"], "unknown gpu"),
    (["torch", "replay", "{tmp}"], "not a capture folder"),
])
def test_bad_input_is_one_line_exit_2(argv, msg, netfile, tmp_path, capsys):
    argv = [a.format(missing=tmp_path / "none.py", net=netfile, tmp=tmp_path) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1 and err.startswith("mmaprobe: error:")


def test_torch_missing_is_one_line(netfile, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)           # import torch raises ImportError
    assert cli.main(["torch", "diff", str(netfile), "--gpu-a", "h100", "--gpu-b", "b200"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs PyTorch" in err


def test_dry_run_capture_replays_at_100_percent_and_a_flipped_bit_is_caught(tmp_path, capsys):
    d = tmp_path / "cap"
    model, ids = build(impl="torch", width=32, layers=1, tokens=8)
    man = capture(model, ids, d, emulate_as="h100")
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    assert [c["layer"] for c in man["calls"]] == names and man["left_out"] == 0
    assert sorted(p.name for p in d.iterdir()) == ["capture.json", "capture.npz"]
    assert sum(p.stat().st_size for p in d.iterdir()) < 16 * 2 ** 20
    r = replay(d)
    assert r.gpu == "h100" and r.share == 1.0 and r.all_equal and len(r.layers) == len(names)
    assert cli.main(["torch", "replay", str(d), "-o", str(tmp_path / "r.json"), "--quiet"]) == 0
    assert "100.00% of outputs equal" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["share"] == 1.0
    # one bit of one recorded output flipped: that layer's share drops, exit 1
    z = dict(np.load(d / "capture.npz"))
    z["y:2"] = z["y:2"].copy()
    z["y:2"].reshape(-1)[0] ^= 1
    np.savez(d / "capture.npz", **z)
    r = replay(d)
    bad = [x for x in r.layers if x.calls_equal < x.calls]
    assert [x.layer for x in bad] == [names[2]] and bad[0].outputs - bad[0].outputs_equal == 1
    assert bad[0].max_ulp == 1 and cli.main(["torch", "replay", str(d), "--quiet"]) == 1


def test_capture_budget_cli_and_device_names(tmp_path, netfile, capsys):
    d = tmp_path / "c"
    assert cli.main(["torch", "capture", str(netfile), "--out", str(d), "--emulate", "h100", "--max-mib", "0.005"]) == 0
    man = json.loads((d / "capture.json").read_text())
    assert len(man["calls"]) == 1 and man["left_out"] == 1 and man["bytes"] <= 0.005 * 2 ** 20
    assert "1 left out" in capsys.readouterr().out
    assert replay(d).all_equal
    assert gpu_of("NVIDIA H100 80GB HBM3") == "h100" and gpu_of("AMD Instinct MI300X") == "mi300x"
    assert gpu_of("NVIDIA B200") == "b200" and gpu_of("Intel Arc") is None


def test_example_decoder_diff_h100_vs_b200():
    model, ids = build(impl="torch", width=32, layers=1, tokens=8)
    r = diff(model, ids, "h100", "b200")
    assert [c.scope for c in r.calls][:3] == ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                                              "model.layers.0.self_attn.v_proj"]
    assert r.output is not None and r.output.shape == "1x8x256"
