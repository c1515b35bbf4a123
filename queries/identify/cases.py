"""A batch of input cases (raw bit patterns) and its hex form for journals and vector files."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smtmodel.formats import get_format, operand_formats


@dataclass
class Cases:
    """``a``, ``b``: uint64 (N, k); ``c``: uint64 (N,)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def __post_init__(self):
        self.c = np.asarray(self.c, dtype=np.uint64).reshape(-1)
        self.a = np.asarray(self.a, dtype=np.uint64)
        self.b = np.asarray(self.b, dtype=np.uint64)
        if self.a.ndim != 2 or self.a.shape != self.b.shape or self.a.shape[0] != len(self.c):
            raise ValueError(f"cases: a, b of shape (N, k) and c of shape (N,), got {self.a.shape}, "
                             f"{self.b.shape}, {self.c.shape}")

    def __len__(self) -> int:
        return len(self.c)

    @property
    def k(self) -> int:
        return self.a.shape[1]

    def take(self, idx) -> "Cases":
        idx = np.asarray(idx, dtype=np.int64)
        return Cases(self.a[idx], self.b[idx], self.c[idx])

    def __add__(self, other: "Cases") -> "Cases":
        return Cases(np.concatenate([self.a, other.a]), np.concatenate([self.b, other.b]),
                     np.concatenate([self.c, other.c]))

    @staticmethod
    def empty(k: int) -> "Cases":
        return Cases(np.zeros((0, k), np.uint64), np.zeros((0, k), np.uint64), np.zeros(0, np.uint64))

    def nonzero_terms(self) -> np.ndarray:
        """Products with both factors non-zero patterns, per case (for picking small examples)."""
        return ((self.a != 0) & (self.b != 0)).sum(axis=1)

    # ---- hex (the vector-file spelling, ../shared/spec/vectors.md) ---------------------------
    def case_dict(self, i: int, in_fmt: str, c_fmt: str) -> dict:
        """Case i in hex; ``in_fmt`` is a format or a mixed operand key (``AxB``)."""
        (fa, fb), fc = operand_formats(in_fmt), get_format(c_fmt)
        return {"a": [fa.hex(int(x)) for x in self.a[i]], "b": [fb.hex(int(x)) for x in self.b[i]],
                "c": fc.hex(int(self.c[i]))}

    def to_json(self, in_fmt: str, c_fmt: str) -> list[dict]:
        return [self.case_dict(i, in_fmt, c_fmt) for i in range(len(self))]

    @staticmethod
    def from_json(rows: list[dict], in_fmt: str, c_fmt: str) -> "Cases":
        """Cases from hex rows; a TF32 container's low bits may be set (identify's probes of how
        they are read), so only the width is checked here."""
        (fa, fb), fc = operand_formats(in_fmt), get_format(c_fmt)
        a = [[_raw(x, fa) for x in r["a"]] for r in rows]
        b = [[_raw(x, fb) for x in r["b"]] for r in rows]
        c = [_raw(r["c"], fc) for r in rows]
        return Cases(np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64), np.array(c, dtype=np.uint64))

    def keys(self) -> list[bytes]:
        """One hashable key per case (its raw patterns), to look answers up."""
        return [self.a[i].tobytes() + self.b[i].tobytes() + self.c[i:i + 1].tobytes() for i in range(len(self))]


def _raw(text: str, f) -> int:
    if f.shift:
        bits = f.parse_hex(f.hex(int(text, 16) & ~((1 << f.shift) - 1)))   # validates the rest
        return bits | (int(text, 16) & ((1 << f.shift) - 1))
    return f.parse_hex(text)


def hex_bits(bits, fmt: str) -> list[str]:
    f = get_format(fmt)
    return [f.hex(int(x)) for x in np.asarray(bits)]


def parse_bits(texts, fmt: str) -> np.ndarray:
    f = get_format(fmt)
    return np.array([f.parse_hex(t) for t in texts], dtype=np.uint64)
