"""docs/torch.md's worked example: the transformers LlamaForCausalLM that
``mmaprobe.torch.example.build(impl="transformers")`` makes and the plain-torch ``Decoder`` (what
the tests and the GPU capture use without transformers) give the same logits bit for bit, natively
and under ``emulate(gpu="h100")``, with the same weights. Skips without torch or transformers."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mmaprobe.torch import emulate  # noqa: E402
from mmaprobe.torch.example import build  # noqa: E402


def test_plain_torch_decoder_equals_transformers_llama():
    hf, ids = build(impl="transformers", width=32, layers=1, tokens=8)
    dec, _ = build(impl="torch", width=32, layers=1, tokens=8)
    assert not torch.equal(hf.lm_head.weight, dec.lm_head.weight)     # the weights differ until loaded
    dec.load_state_dict(hf.state_dict())
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        assert torch.equal(hf(ids).logits, dec(ids))
        with emulate(gpu="h100") as ma:
            a = hf(ids).logits
        with emulate(gpu="h100") as mb:
            b = dec(ids)
    assert torch.equal(a, b)
    assert [(c.op, c.scope, c.shape_text()) for c in ma.report().emulated] == \
        [(c.op, c.scope, c.shape_text()) for c in mb.report().emulated]
