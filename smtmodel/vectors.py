"""Vector files (../shared/spec/vectors.md): JSON Lines, optionally gzip, header + one case a line.

Reading validates the header and every case (widths, hex syntax, k entries) and reports the
file and line of the first problem. Writing is atomic (a temporary file renamed into place),
so no half-written file is ever left behind, and extra fields are kept as they were.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .formats import Format, FormatError, get_format
from .io import DataFileError, atomic_open, json_objects

KIND = "mmaprobe.vectors"


class VectorFileError(DataFileError):
    """A malformed or inconsistent vector file (one line naming the file, and the line in it)."""


@dataclass
class VectorFile:
    header: dict
    cases: list[dict] = field(default_factory=list)
    path: str | None = None

    # ---- formats ------------------------------------------------------------------------
    @property
    def in_fmt(self) -> Format:
        """The one input format of a file whose a and b share it (mixed files: an error)."""
        if self.a_fmt.name != self.b_fmt.name:
            raise VectorFileError(f"{self.path or 'vector file'}: a and b have different formats "
                                  f"({self.a_fmt.name} x {self.b_fmt.name}); use a_fmt / b_fmt")
        return self.a_fmt

    @property
    def a_fmt(self) -> Format:
        """Format of a: the header's ``a_fmt``, else ``in_fmt``."""
        return get_format(self.header.get("a_fmt") or self.header["in_fmt"])

    @property
    def b_fmt(self) -> Format:
        """Format of b: the header's ``b_fmt``, else ``in_fmt``."""
        return get_format(self.header.get("b_fmt") or self.header["in_fmt"])

    @property
    def c_fmt(self) -> Format:
        return get_format(self.header["c_fmt"])

    @property
    def out_fmt(self) -> Format:
        return get_format(self.header["out_fmt"])

    @property
    def k(self) -> int:
        return int(self.header["k"])

    # ---- arrays of raw bits ---------------------------------------------------------------
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a, b, c) as uint64 arrays of shapes (N, k), (N, k), (N,)."""
        fa, fb, fc = self.a_fmt, self.b_fmt, self.c_fmt
        n, k = len(self.cases), self.k
        for key in ("a", "b"):
            bad = next((i for i, case in enumerate(self.cases) if len(case[key]) != k), None)
            if bad is not None:
                raise VectorFileError(f"case {bad}: {key!r} has {len(self.cases[bad][key])} patterns, not k={k}")
        a, b = (np.array(f.parse_hex_list([x for case in self.cases for x in case[key]]), dtype=np.uint64).reshape(n, k)
                for key, f in (("a", fa), ("b", fb)))
        c = np.array(fc.parse_hex_list([case["c"] for case in self.cases]), dtype=np.uint64).reshape(n)
        return a, b, c

    def scales(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(a_scale, b_scale) as uint64 arrays (N, k/scale_block), or None without scales."""
        if "scale_fmt" not in self.header:
            return None
        fs = get_format(self.header["scale_fmt"])
        sa = np.array([fs.parse_hex_list(c["a_scale"]) for c in self.cases], dtype=np.uint64)
        sb = np.array([fs.parse_hex_list(c["b_scale"]) for c in self.cases], dtype=np.uint64)
        return sa, sb

    @classmethod
    def from_arrays(cls, header: dict, a, b, c, **rows) -> "VectorFile":
        """A file of ``header`` whose cases are the raw-bit arrays (the inverse of :meth:`arrays`
        and :meth:`scales`); ``rows`` as :func:`case_rows` takes them."""
        fs = header.get("scale_fmt")
        fmts = (header.get("a_fmt") or header["in_fmt"], header.get("b_fmt") or header["in_fmt"], header["c_fmt"])
        return cls(header, case_rows(fmts, a, b, c, out_fmt=header["out_fmt"], scale_fmt=fs, **rows))

    def set_expect(self, model_id: str, d_bits: np.ndarray) -> None:
        fo = self.out_fmt
        for case, d in zip(self.cases, d_bits):
            case.setdefault("expect", {})[model_id] = fo.hex(int(d))
        models = self.header.setdefault("models", [])
        if model_id not in models:
            models.append(model_id)


def case_rows(fmts, a, b, c, *, ids=None, a_scale=None, b_scale=None, scale_fmt=None, expect=None,
              observed=None, out_fmt=None, extra=None) -> list[dict]:
    """Cases of a vector file (../shared/spec/vectors.md) from raw-bit arrays: the one writer of
    rows, the inverse of :meth:`VectorFile.arrays`.

    ``fmts`` is (a's, b's, c's) format; ``a``, ``b`` (N, k), ``c`` (N,); ``ids`` a prefix (ids
    ``prefix-i``) or one id per case; ``a_scale``/``b_scale`` (N, k/block) in ``scale_fmt``;
    ``expect``/``observed`` map a model or device name to (N,) outputs in ``out_fmt``; ``extra``
    one dict of further fields per case (or None)."""
    fa, fb, fc = (get_format(f) for f in fmts)
    a, b = np.atleast_2d(np.asarray(a)), np.atleast_2d(np.asarray(b))
    c = np.asarray(c).reshape(-1)
    n = len(c)
    if a.shape[0] != n or b.shape[0] != n:
        raise ValueError(f"case_rows: a, b and c have {a.shape[0]}, {b.shape[0]} and {n} cases")
    cols = {"a": _hex_rows(fa, a), "b": _hex_rows(fb, b), "c": fc.hex_list(c)}
    if a_scale is not None:
        fs = get_format(scale_fmt)
        cols |= {"a_scale": _hex_rows(fs, np.atleast_2d(a_scale)), "b_scale": _hex_rows(fs, np.atleast_2d(b_scale))}
    rows = []
    for i in range(n):
        row = {} if ids is None else {"id": f"{ids}-{i}" if isinstance(ids, str) else str(ids[i])}
        row.update((key, col[i]) for key, col in cols.items())
        rows.append(row)
    for key, outs in (("expect", expect), ("observed", observed)):
        if outs:
            fo = get_format(out_fmt)
            texts = {name: fo.hex_list(np.asarray(d).reshape(-1)) for name, d in outs.items()}
            for i, row in enumerate(rows):
                row[key] = {name: t[i] for name, t in texts.items()}
    for row, more in zip(rows, extra or ()):
        row.update(more)
    return rows


def _hex_rows(fmt, arr: np.ndarray) -> list[list[str]]:
    flat, k = fmt.hex_list(arr.reshape(-1)), arr.shape[1]
    return [flat[i * k:(i + 1) * k] for i in range(arr.shape[0])]


def make_header(in_fmt, c_fmt, out_fmt, k: int, **extra) -> dict:
    """A header; ``in_fmt`` is one format, or a pair (a's, b's): a pair of two different formats
    is written as ``a_fmt`` / ``b_fmt`` without ``in_fmt`` (docs/vectors.md)."""
    fa, fb = (in_fmt, in_fmt) if isinstance(in_fmt, (str, Format)) else in_fmt
    fa, fb = get_format(fa).name, get_format(fb).name
    ins = {"in_fmt": fa} if fa == fb else {"a_fmt": fa, "b_fmt": fb}
    h = {"kind": KIND, "version": 1, **ins,
         "c_fmt": get_format(c_fmt).name, "out_fmt": get_format(out_fmt).name, "k": int(k)}
    h.update(extra)
    return h


def _open_text(path: Path, mode: str, gz: bool | None = None):
    if path.suffix == ".gz" if gz is None else gz:
        return io.TextIOWrapper(gzip.open(path, mode + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def read_vectors(path) -> VectorFile:
    """Read and validate a vector file; raise VectorFileError naming file:line on any problem."""
    path = Path(path)
    if not path.exists():
        raise VectorFileError(f"{path}: no such file")
    try:
        with _open_text(path, "r") as fh:
            lines = fh.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
        raise VectorFileError(f"{path}: cannot read ({exc})") from None
    if not lines:
        raise VectorFileError(f"{path}: empty file (expected a header line)")
    records = json_objects(lines, path, VectorFileError)
    if not records:
        raise VectorFileError(f"{path}: only blank lines (expected a header line)")
    (hno, header), cases = records[0], records[1:]
    _check_header(header, f"{path}:{hno}")
    vf = VectorFile(header, [c for _, c in cases], str(path))
    try:
        _check_cases(vf, vf.cases, str(path))     # a field at a time over every case
    except VectorFileError:
        for no, case in cases:                  # the same rules case by case name the faulty line
            _check_cases(vf, [case], f"{path}:{no}")
        raise
    return vf


def _check_header(h: dict, where: str) -> None:
    if h.get("kind") != KIND:
        raise VectorFileError(f"{where}: header 'kind' must be {KIND!r}, got {h.get('kind')!r}")
    if h.get("version") != 1:
        raise VectorFileError(f"{where}: unsupported version {h.get('version')!r} (this reader knows 1)")
    if "in_fmt" not in h and not ("a_fmt" in h and "b_fmt" in h):
        raise VectorFileError(f"{where}: header lacks 'in_fmt' (or both 'a_fmt' and 'b_fmt')")
    for key in ("in_fmt", "a_fmt", "b_fmt", "c_fmt", "out_fmt"):
        if key not in h:
            if key in ("c_fmt", "out_fmt"):
                raise VectorFileError(f"{where}: header lacks {key!r}")
            continue
        try:
            get_format(h[key])
        except FormatError as exc:
            raise VectorFileError(f"{where}: {key}: {exc}") from None
    if "in_fmt" in h:
        for key in ("a_fmt", "b_fmt"):
            if key in h and get_format(h[key]).name != get_format(h["in_fmt"]).name:
                raise VectorFileError(f"{where}: {key}={h[key]} contradicts in_fmt={h['in_fmt']} "
                                      "(give a_fmt and b_fmt without in_fmt for mixed operands)")
    if not isinstance(h.get("k"), int) or h["k"] < 1:
        raise VectorFileError(f"{where}: header 'k' must be a positive integer, got {h.get('k')!r}")
    if "scale_fmt" in h:
        try:
            get_format(h["scale_fmt"])
        except FormatError as exc:
            raise VectorFileError(f"{where}: scale_fmt: {exc}") from None
        if not isinstance(h.get("scale_block"), int) or h["scale_block"] < 1 or h["k"] % h["scale_block"]:
            raise VectorFileError(f"{where}: scale_block must be a positive divisor of k")


def _check_cases(vf: VectorFile, cases: list, where: str) -> None:
    """Every case's fields against the header (a field at a time over ``cases``: a file holds
    10^5-10^6 patterns); VectorFileError prefixed with ``where`` on the first fault."""
    h, k = vf.header, vf.header["k"]
    try:
        for key, fi in (("a", vf.a_fmt), ("b", vf.b_fmt)):
            rows = [case.get(key) for case in cases]
            if not all(isinstance(r, list) and len(r) == k for r in rows):
                raise VectorFileError(f"{where}: {key!r} must be a list of k={k} hex patterns")
            fi.parse_hex_list([x for r in rows for x in r])
        if not all("c" in case for case in cases):
            raise VectorFileError(f"{where}: case lacks 'c'")
        vf.c_fmt.parse_hex_list([case["c"] for case in cases])
        for key in ("expect", "observed"):
            got = [case[key] for case in cases if key in case]
            if not all(isinstance(d, dict) for d in got):
                raise VectorFileError(f"{where}: {key!r} must be an object")
            vf.out_fmt.parse_hex_list([x for d in got for x in d.values()])
        if "scale_fmt" in h:
            fs, nblk = get_format(h["scale_fmt"]), k // h["scale_block"]
            for key in ("a_scale", "b_scale"):
                rows = [case.get(key) for case in cases]
                if not all(isinstance(r, list) and len(r) == nblk for r in rows):
                    raise VectorFileError(f"{where}: {key!r} must list {nblk} scale patterns")
                fs.parse_hex_list([x for r in rows for x in r])
    except FormatError as exc:
        raise VectorFileError(f"{where}: {exc}") from None


def write_vectors(path, vf: VectorFile) -> None:
    """Write atomically: the file appears complete or not at all. ``.gz`` names are gzipped."""
    path = Path(path)
    with atomic_open(path) as fh:
        fh.write(json.dumps(vf.header, separators=(", ", ": ")) + "\n")
        for case in vf.cases:
            fh.write(json.dumps(case, separators=(", ", ": ")) + "\n")
    vf.path = str(path)
