"""docs/torch.md's worked example: a small Llama-style decoder in bf16 with seeded random weights
(no download), and the protocol ``mmaprobe torch diff`` / ``capture`` read: :func:`build`
returns ``(module, inputs)``.

Two implementations of the same architecture (RMSNorm, rotary positions, grouped-query causal
attention through ``scaled_dot_product_attention``, a SwiGLU MLP, an untied LM head):

- ``impl="transformers"``: ``transformers.LlamaForCausalLM`` from a ``LlamaConfig`` (the
  ``example`` extra: ``pip install -e '.[example]'``);
- ``impl="torch"``: :class:`Decoder`, the same layers written in plain torch (no transformers);
  it is what the tests and the GPU capture use where transformers is not installed.

``impl="auto"`` (default) takes transformers when it imports. Both name their linear layers as
transformers does (``model.layers.0.self_attn.q_proj``, ..., ``lm_head``); the transformers model
returns a ``ModelOutput`` whose ``logits`` :func:`mmaprobe.torch.diff` compares, :class:`Decoder`
the logits.

Run with ``mmaprobe torch diff mmaprobe/torch/example.py --gpu-a h100 --gpu-b b200``; the
environment variables ``MMAPROBE_EXAMPLE_WIDTH`` / ``_LAYERS`` / ``_TOKENS`` / ``_IMPL`` change the
size and implementation of :func:`build` when it is called without arguments.
"""

from __future__ import annotations

import math
import os

import torch
import torch.nn.functional as F
from torch import nn


def mlp_width(width: int) -> int:
    """The MLP's width: 8/3 of the model's, rounded up to a multiple of 64 (Llama's rule)."""
    return 64 * math.ceil(8 * width / 3 / 64)


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, d, heads, kv_heads, theta=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.theta = heads, kv_heads, d // heads, theta
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.hd).transpose(1, 2)
        q = (q * cos + _rotate(q) * sin).to(x.dtype)
        k = (k * cos + _rotate(k) * sin).to(x.dtype)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        return self.o_proj(a.transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, d, inner):
        super().__init__()
        self.gate_proj = nn.Linear(d, inner, bias=False)
        self.up_proj = nn.Linear(d, inner, bias=False)
        self.down_proj = nn.Linear(inner, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, d, heads, kv_heads, inner):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.self_attn, self.mlp = Attention(d, heads, kv_heads), MLP(d, inner)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class _Body(nn.Module):
    def __init__(self, vocab, d, layers, heads, kv_heads, inner):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, heads, kv_heads, inner) for _ in range(layers))
        self.norm = RMSNorm(d)


class Decoder(nn.Module):
    """A Llama-style decoder in plain torch: ``Decoder(...)(ids)`` -> logits (B, T, vocab)."""

    def __init__(self, vocab=256, width=64, layers=2, heads=4, kv_heads=2, inner=None):
        super().__init__()
        self.model = _Body(vocab, width, layers, heads, kv_heads, inner or mlp_width(width))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.hd, self.theta = width // heads, 10000.0

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        T = ids.shape[-1]
        inv = 1.0 / self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
        ang = torch.cat((ang, ang), dim=-1)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.model.norm(x))


def build(width: int | None = None, layers: int | None = None, tokens: int | None = None, heads: int = 4,
          kv_heads: int = 2, vocab: int = 256, batch: int = 1, seed: int = 0, impl: str | None = None,
          dtype=torch.bfloat16):
    """``(module, ids)``: a Llama-style decoder (``width``, ``layers``, ``heads`` with ``kv_heads``
    key/value heads, MLP width :func:`mlp_width`) with weights seeded by ``seed``, in ``dtype``, in
    eval mode, and ``batch`` x ``tokens`` random token ids. Defaults: width 64, 2 layers, 32
    tokens, or the ``MMAPROBE_EXAMPLE_*`` environment variables."""
    env = os.environ.get
    width = int(width or env("MMAPROBE_EXAMPLE_WIDTH", 64))
    layers = int(layers or env("MMAPROBE_EXAMPLE_LAYERS", 2))
    tokens = int(tokens or env("MMAPROBE_EXAMPLE_TOKENS", 32))
    impl = impl or env("MMAPROBE_EXAMPLE_IMPL", "auto")
    if impl not in ("auto", "transformers", "torch"):
        raise ValueError(f"impl is auto, transformers or torch, got {impl!r}")
    if impl == "auto":
        try:
            import transformers  # noqa: F401
            impl = "transformers"
        except ImportError:
            impl = "torch"
    torch.manual_seed(seed)
    if impl == "transformers":
        from transformers import LlamaConfig, LlamaForCausalLM
        cfg = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=mlp_width(width),
                          num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                          max_position_embeddings=max(128, tokens), tie_word_embeddings=False, use_cache=False)
        cfg._attn_implementation = "sdpa"
        module = LlamaForCausalLM(cfg)          # its output's ``logits`` is what diff compares
    else:
        module = Decoder(vocab, width, layers, heads, kv_heads)
    module = module.to(dtype).eval()
    ids = torch.randint(0, vocab, (batch, tokens), generator=torch.Generator().manual_seed(seed + 1))
    return module, ids
