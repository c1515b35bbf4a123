"""A batch of input cases (raw bit patterns) and its hex form for journals and vector files."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smtmodel.formats import get_format, operand_formats
from smtmodel.vectors import case_rows


@dataclass
class Cases:
    """``a``, ``b``: uint64 (N, k); ``c``: uint64 (N,); for block-scaled units ``sa``, ``sb``: the
    raw scale bits, uint64 (N, k / scale_block) (None without scales)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    sa: np.ndarray | None = None
    sb: np.ndarray | None = None

    def __post_init__(self):
        self.c = np.asarray(self.c, dtype=np.uint64).reshape(-1)
        self.a = np.asarray(self.a, dtype=np.uint64)
        self.b = np.asarray(self.b, dtype=np.uint64)
        if self.a.ndim != 2 or self.a.shape != self.b.shape or self.a.shape[0] != len(self.c):
            raise ValueError(f"cases: a, b of shape (N, k) and c of shape (N,), got {self.a.shape}, "
                             f"{self.b.shape}, {self.c.shape}")
        if (self.sa is None) != (self.sb is None):
            raise ValueError("cases: a_scale and b_scale come together")
        if self.sa is not None:
            self.sa = np.asarray(self.sa, dtype=np.uint64)
            self.sb = np.asarray(self.sb, dtype=np.uint64)
            if self.sa.ndim != 2 or self.sa.shape != self.sb.shape or self.sa.shape[0] != len(self.c):
                raise ValueError(f"cases: a_scale {self.sa.shape} and b_scale {self.sb.shape} differ")

    @property
    def scaled(self) -> bool:
        return self.sa is not None

    def scales(self) -> dict:
        """Keyword arguments of Model.evaluate for the scales (empty without)."""
        return {"a_scale": self.sa, "b_scale": self.sb} if self.scaled else {}

    def __len__(self) -> int:
        return len(self.c)

    @property
    def k(self) -> int:
        return self.a.shape[1]

    def take(self, idx) -> "Cases":
        idx = np.asarray(idx, dtype=np.int64)
        if self.scaled:
            return Cases(self.a[idx], self.b[idx], self.c[idx], self.sa[idx], self.sb[idx])
        return Cases(self.a[idx], self.b[idx], self.c[idx])

    def __add__(self, other: "Cases") -> "Cases":
        if self.scaled != other.scaled:
            raise ValueError("cases: cannot join scaled and unscaled cases")
        sc = (np.concatenate([self.sa, other.sa]), np.concatenate([self.sb, other.sb])) if self.scaled else ()
        return Cases(np.concatenate([self.a, other.a]), np.concatenate([self.b, other.b]),
                     np.concatenate([self.c, other.c]), *sc)

    @staticmethod
    def join_unique(parts: list["Cases"]) -> "Cases":
        """The parts joined, each distinct case (elements, c and scales) once, in first-seen order."""
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        cols = [out.a, out.b, out.c[:, None]] + ([out.sa, out.sb] if out.scaled else [])
        _, first = np.unique(np.concatenate(cols, axis=1), axis=0, return_index=True)
        return out.take(np.sort(first))

    def tile(self, h: int) -> dict:
        """Evaluate's arguments for ``h`` copies of the cases one after the other (batched lanes)."""
        out = {"a": np.tile(self.a, (h, 1)), "b": np.tile(self.b, (h, 1)), "c": np.tile(self.c, h)}
        if self.scaled:
            out.update(a_scale=np.tile(self.sa, (h, 1)), b_scale=np.tile(self.sb, (h, 1)))
        return out

    @staticmethod
    def empty(k: int, blocks: int | None = None) -> "Cases":
        """No cases; ``blocks`` scales per case for a block-scaled unit."""
        sc = (np.zeros((0, blocks), np.uint64),) * 2 if blocks else ()
        return Cases(np.zeros((0, k), np.uint64), np.zeros((0, k), np.uint64), np.zeros(0, np.uint64), *sc)

    def nonzero_terms(self) -> np.ndarray:
        """Products with both factors non-zero patterns, per case (for picking small examples)."""
        return ((self.a != 0) & (self.b != 0)).sum(axis=1)

    # ---- hex (the vector-file spelling, ../shared/spec/vectors.md) ---------------------------
    def case_dict(self, i: int, in_fmt: str, c_fmt: str, scale_fmt: str | None = None) -> dict:
        """Case i in hex; ``in_fmt`` is a format or a mixed operand key (``AxB``); the scales
        (``a_scale``, ``b_scale``, ../shared/spec/vectors.md) in ``scale_fmt``."""
        return self._rows(slice(i, i + 1), in_fmt, c_fmt, scale_fmt)[0]

    def to_json(self, in_fmt: str, c_fmt: str, scale_fmt: str | None = None) -> list[dict]:
        return self._rows(slice(None), in_fmt, c_fmt, scale_fmt)

    def _rows(self, pick: slice, in_fmt: str, c_fmt: str, scale_fmt: str | None) -> list[dict]:
        if self.scaled and not scale_fmt:
            raise ValueError("cases: scaled cases need their scale format to be written")
        fa, fb = operand_formats(in_fmt)
        return case_rows((fa, fb, c_fmt), self.a[pick], self.b[pick], self.c[pick],
                         a_scale=self.sa[pick] if self.scaled else None, b_scale=self.sb[pick] if self.scaled else None,
                         scale_fmt=scale_fmt)

    @staticmethod
    def from_json(rows: list[dict], in_fmt: str, c_fmt: str, scale_fmt: str | None = None) -> "Cases":
        """Cases from hex rows; a TF32 container's low bits may be set (identify's probes of how
        they are read), so only the width is checked here. With ``scale_fmt`` every row carries
        ``a_scale`` and ``b_scale``."""
        (fa, fb), fc = operand_formats(in_fmt), get_format(c_fmt)
        a = [[_raw(x, fa) for x in r["a"]] for r in rows]
        b = [[_raw(x, fb) for x in r["b"]] for r in rows]
        c = [_raw(r["c"], fc) for r in rows]
        sc = ()
        if scale_fmt:
            fs = get_format(scale_fmt)
            sc = tuple(np.array([[fs.parse_hex(x) for x in r[key]] for r in rows], dtype=np.uint64)
                       .reshape(len(rows), len(rows[0][key]) if rows else 0) for key in ("a_scale", "b_scale"))
        return Cases(np.array(a, dtype=np.uint64), np.array(b, dtype=np.uint64), np.array(c, dtype=np.uint64), *sc)

    def keys(self) -> list[bytes]:
        """One hashable key per case (its raw patterns, scales included), to look answers up."""
        if self.scaled:
            return [self.a[i].tobytes() + self.b[i].tobytes() + self.c[i:i + 1].tobytes()
                    + self.sa[i].tobytes() + self.sb[i].tobytes() for i in range(len(self))]
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
