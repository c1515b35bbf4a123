"""Reader for the ``mmaemu-hwmini/1`` hardware recordings (../shared/hwdata/rtx4060_mmaemu/).

The folder holds an ``index.json`` and ``*.npz`` shards. The index lists the shards with their
sha256 and byte size, and the recordings ("cases"), each naming its arrays as
``[shard, array name]``; an array's name is ``{dtype}_{shape}_{sha256[:16]}`` of its bytes, and
every expected-output array also carries its full sha256. :func:`open_hwmini` checks all of it
(shards on opening, each array when it is first read) and raises :class:`HwminiError` with one
line naming the first mismatch.

Two kinds of recording come back as plain data:

``mma`` -> :class:`MmaRecording` (:meth:`Hwmini.mma`): single ``mma.sync`` FP8 instructions
    (fp32 c and d). Layout ``"tile"``: a (T, M, K), b (T, N, K), c and d (T, M, N) with
    d[t, i, j] = c[t, i, j] + sum_k a[t, i, k] * b[t, j, k]; layout ``"vector"``: a, b (T, K),
    c, d (T,). :attr:`MmaRecording.a` ... :attr:`MmaRecording.expect` are already flattened to
    one dot product per row (a, b of shape (n, K), c and expect of shape (n,)), the form
    :meth:`smtmodel.model.Model.evaluate` takes; :meth:`MmaRecording.vector_file` writes them as
    a vector file (../shared/spec/vectors.md, with ``a_fmt``/``b_fmt`` for mixed pairs).

``gemm`` and ``gemm_call`` -> :class:`GemmOutput` (:meth:`Hwmini.gemm_outputs`), one per
    recorded output of a ``torch._scaled_mm`` call through cuBLASLt:
    ``a`` (M', K) and ``b`` (N', K) raw bits (b holds B's columns as rows, like mma's b) in
    ``fmt_a``/``fmt_b``; ``scale_a_bits``/``scale_b_bits``/``scale_result_bits`` (fp32 bit
    patterns, None where absent or not a scalar); ``out_fmt`` (project format name) and
    ``out_dtype`` (torch's); ``fast`` (fast accumulation; None where not recorded); ``splitk``
    ``(S, scheme)`` with scheme ``"none"``, ``"serial"`` or ``"pairwise"`` (None where not
    recorded); ``rows``/``cols``: indices of the kept rows of A and columns of B in the original
    call (None: all, in order) and ``select``: ``"grid"`` (expect[i, j] is output
    (rows[i], cols[j]) = row i of ``a`` with row j of ``b``) or ``"diagonal"`` (expect[i] pairs
    row i of ``a`` with row i of ``b``); ``expect``: the recorded output bits (uint8/16/32 by
    out_dtype) or None with ``error`` naming the rejection (CUBLAS errors, unsupported features).
    ``scope`` is set where the recording marks an output outside the reference's scope (bias,
    grad, row-wise scales); ``call`` is the recorded call description (``gemm_call``: the index's
    ``call_defaults`` merged with the case's call and the output's ``call_diff``).

Only NumPy and the standard library are used: the smtmodel layer reads data, it runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .formats import FormatError, format_of_dtype
from .io import read_npz

FORMAT = "mmaemu-hwmini/1"


class HwminiError(ValueError):
    """A missing, malformed or corrupted mmaemu-hwmini folder (one line: what and where)."""


def project_format(name: str | None) -> str | None:
    """The project's format name for a recording's format / torch dtype name (None stays None)."""
    if name is None:
        return name
    try:
        return format_of_dtype(name).name
    except FormatError:
        raise HwminiError(f"unknown format {name!r} in the recording") from None


@dataclass(frozen=True)
class MmaRecording:
    """One ``mma`` recording, flattened to dot products (see the module docstring)."""
    id: str
    truth_id: str
    fmt_a: str               # project format names (fp8e4m3, fp8e5m2)
    fmt_b: str
    c_fmt: str
    out_fmt: str
    K: int
    layout: str              # "tile" or "vector"
    shape: tuple             # shape of the recorded d array ((T, M, N) or (T,))
    a: np.ndarray = field(repr=False)       # (n, K) raw bits
    b: np.ndarray = field(repr=False)       # (n, K)
    c: np.ndarray = field(repr=False)       # (n,)
    expect: np.ndarray = field(repr=False)  # (n,)

    def __len__(self) -> int:
        return int(self.expect.shape[0])

    def vector_file(self, device: str = "NVIDIA GeForce RTX 4060 / sm_89 / mma.sync (mmaemu hw_mini)"):
        """The recording as a :class:`smtmodel.vectors.VectorFile` whose cases carry the recorded
        d as ``observed[device]``."""
        from .vectors import VectorFile, make_header
        h = make_header((self.fmt_a, self.fmt_b), self.c_fmt, self.out_fmt, self.K,
                        source={"tool": "smtmodel.mmaemu", "format": FORMAT, "recording": self.id})
        return VectorFile.from_arrays(h, self.a, self.b, self.c, ids=[f"{self.id}#{i}" for i in range(len(self))],
                                      observed={device: self.expect})


@dataclass(frozen=True)
class GemmOutput:
    """One recorded output of a cuBLASLt GEMM call (see the module docstring)."""
    case_id: str
    name: str
    kind: str                # "gemm" or "gemm_call"
    truth_id: str
    fmt_a: str | None
    fmt_b: str | None
    a: np.ndarray | None = field(repr=False)
    b: np.ndarray | None = field(repr=False)
    scale_a_bits: int | None
    scale_b_bits: int | None
    scale_result_bits: int | None
    out_fmt: str | None
    out_dtype: str | None
    fast: bool | None
    splitk: tuple | None     # (S, scheme)
    rows: tuple | None
    cols: tuple | None
    select: str              # "grid" or "diagonal"
    expect: np.ndarray | None = field(repr=False)
    error: str | None = None
    scope: str | None = None
    api: str | None = None
    why: str | None = None
    call: dict = field(default_factory=dict, repr=False)

    @property
    def id(self) -> str:
        return f"{self.case_id}:{self.name}"


class Hwmini:
    """An opened, verified ``mmaemu-hwmini/1`` folder (use :func:`open_hwmini`)."""

    def __init__(self, root: Path, index: dict):
        self.root = root
        self.index = index
        self._shards: dict[str, dict[str, np.ndarray]] = {}
        self._arrays: dict[tuple, np.ndarray] = {}

    # ---- arrays ---------------------------------------------------------------------------
    def array(self, ref, sha256: str | None = None) -> np.ndarray:
        """The array ``[shard, name]``, checked against the dtype, shape and hash its name
        carries (and the full ``sha256`` where the index gives one)."""
        try:
            shard, name = ref
        except (TypeError, ValueError):
            raise HwminiError(f"{self.root}: bad array reference {ref!r}") from None
        key = (shard, name)
        if key in self._arrays:
            return self._arrays[key]
        if shard not in self.index["shards"]:
            raise HwminiError(f"{self.root}: array {name} refers to shard {shard!r}, not listed in index.json")
        if shard not in self._shards:
            self._shards[shard] = read_npz(self.root / shard)
        try:
            x = self._shards[shard][name]
        except KeyError:
            raise HwminiError(f"{self.root / shard}: no array {name!r}") from None
        dtype, shape, short = _parse_name(name, self.root / shard)
        got = tuple(x.shape)
        if str(x.dtype) != dtype or got != shape:
            raise HwminiError(f"{self.root / shard}: array {name} is {x.dtype} {got}, its name says {dtype} {shape}")
        digest = hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()
        if not digest.startswith(short) or (sha256 is not None and digest != sha256):
            raise HwminiError(f"{self.root / shard}: array {name}: sha256 {digest[:16]}... does not match the index")
        self._arrays[key] = x
        return x

    # ---- mma ------------------------------------------------------------------------------
    def mma(self) -> list[MmaRecording]:
        """Every ``mma`` recording, flattened to dot products, in index order."""
        return [self._mma(c) for c in self.index["cases"] if c.get("kind") == "mma"]

    def _mma(self, case: dict) -> MmaRecording:
        p, e, cid = case["params"], case["expect"], case["id"]
        a, b, c = (self.array(case["inputs"][k]) for k in ("a", "b", "c"))
        d = self.array(e["bits"], e.get("sha256"))
        K, layout = int(p["K"]), p["layout"]
        if layout == "tile":
            T, M, _ = a.shape
            N = b.shape[1]
            if a.shape != (T, M, K) or b.shape != (T, N, K) or c.shape != (T, M, N) or d.shape != (T, M, N):
                raise HwminiError(f"{cid}: tile shapes a {a.shape}, b {b.shape}, c {c.shape}, d {d.shape} "
                                  f"do not fit (T, M, K), (T, N, K), (T, M, N) with K={K}")
            A = np.broadcast_to(a[:, :, None, :], (T, M, N, K)).reshape(-1, K)
            B = np.broadcast_to(b[:, None, :, :], (T, M, N, K)).reshape(-1, K)
            C, D = c.reshape(-1), d.reshape(-1)
        elif layout == "vector":
            T = a.shape[0]
            if a.shape != (T, K) or b.shape != (T, K) or c.shape != (T,) or d.shape != (T,):
                raise HwminiError(f"{cid}: vector shapes a {a.shape}, b {b.shape}, c {c.shape}, d {d.shape} "
                                  f"do not fit (T, K), (T, K), (T,) with K={K}")
            A, B, C, D = a, b, c, d
        else:
            raise HwminiError(f"{cid}: unknown mma layout {layout!r} (this reader knows tile and vector)")
        if e.get("dtype", "float32") != "float32":
            raise HwminiError(f"{cid}: mma output dtype {e.get('dtype')!r}; this reader knows float32")
        return MmaRecording(cid, case.get("truth_id", ""), project_format(p["fmt_a"]), project_format(p["fmt_b"]),
                            "fp32", "fp32", K, layout, tuple(d.shape), A, B, C, D)

    # ---- GEMM -----------------------------------------------------------------------------
    def gemm_outputs(self, with_errors: bool = False) -> list[GemmOutput]:
        """Every recorded GEMM output (kinds ``gemm`` and ``gemm_call``) in index order; outputs
        that record a rejection (``error`` set, no bits) only with ``with_errors``."""
        out = []
        for case in self.index["cases"]:
            kind = case.get("kind")
            if kind == "gemm":
                outs = self._gemm(case)
            elif kind == "gemm_call":
                outs = self._gemm_call(case)
            else:
                continue
            out.extend(o for o in outs if with_errors or o.error is None)
        return out

    def _inputs(self, case):
        ins = case.get("inputs") or {}
        return tuple(self.array(ins[k]) if k in ins else None for k in ("a", "b"))

    def _gemm(self, case: dict) -> list[GemmOutput]:
        base = case.get("params", {})
        if "outputs" not in case:       # a rejected call or an out-of-scope feature: no bits
            err = case.get("expect", {}).get("error", "no output recorded")
            return [_gemm_output(case, "gemm", "", base, None, None, None, error=err,
                                 scope=case.get("reason"))]
        a, b = self._inputs(case)
        res = []
        for o in case["outputs"]:
            p = {**base, **o.get("params", {})}
            e = o["expect"]
            bits = self.array(e["bits"], e.get("sha256"))
            sel = o.get("sel") or {}
            res.append(_gemm_output(case, "gemm", o["name"], p, a, b, bits, sel=sel,
                                    dtype=e.get("dtype"), why=o.get("why")))
        return res

    def _gemm_call(self, case: dict) -> list[GemmOutput]:
        call0 = {**self.index.get("call_defaults", {}), **case.get("call", {})}
        a, b = self._inputs(case)
        res = []
        for o in case["outputs"]:
            call = {**call0, **o.get("call_diff", {})}
            e = o["expect"]
            p = {"fmt_a": _torch_fmt(call.get("mat1")), "fmt_b": _torch_fmt(call.get("mat2")),
                 "out_dtype": o.get("out_dtype"), "fast": o.get("fast"), "splitk": o.get("splitk"),
                 "scale_a_bits": _scalar_bits(call.get("scale_a")),
                 "scale_b_bits": _scalar_bits(call.get("scale_b")),
                 "scale_result_bits": _scalar_bits(call.get("scale_result"))}
            if isinstance(e, str):
                res.append(_gemm_output(case, "gemm_call", o["name"], p, a, b, None, error=e,
                                        scope=o.get("scope"), call=call))
                continue
            bits = self.array(e["bits"], e.get("sha256"))
            res.append(_gemm_output(case, "gemm_call", o["name"], p, a, b, bits, scope=o.get("scope"),
                                    call=call, dtype=o.get("out_dtype")))
        return res


def open_hwmini(path, verify: bool = True) -> Hwmini:
    """Open an ``mmaemu-hwmini/1`` folder (or its ``index.json``); with ``verify`` every shard's
    size and sha256 are checked first. Raises :class:`HwminiError`."""
    path = Path(path)
    root = path.parent if path.name == "index.json" else path
    idx = root / "index.json"
    if not idx.is_file():
        raise HwminiError(f"{root}: no index.json (not an mmaemu-hwmini folder)")
    try:
        index = json.loads(idx.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HwminiError(f"{idx}: cannot read ({exc})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        got = index.get("format") if isinstance(index, dict) else None
        raise HwminiError(f"{idx}: format {got!r}, this reader knows {FORMAT!r}")
    for key in ("shards", "cases"):
        if key not in index:
            raise HwminiError(f"{idx}: lacks {key!r}")
    if verify:
        for shard, meta in index["shards"].items():
            f = root / shard
            if not f.is_file():
                raise HwminiError(f"{f}: shard listed in index.json is missing")
            data = f.read_bytes()
            if len(data) != meta.get("bytes", len(data)) or hashlib.sha256(data).hexdigest() != meta.get("sha256"):
                raise HwminiError(f"{f}: sha256 or size does not match index.json (corrupted copy?)")
    return Hwmini(root, index)


def is_hwmini(path) -> bool:
    """Whether ``path`` looks like an ``mmaemu-hwmini`` folder (a folder holding ``index.json``,
    or that file): :func:`open_hwmini` then checks the format and says what is wrong."""
    path = Path(path)
    return (path.is_dir() and (path / "index.json").is_file()) or (path.name == "index.json" and path.is_file())


# ---- helpers -------------------------------------------------------------------------------

def _parse_name(name: str, where) -> tuple[str, tuple, str]:
    parts = name.split("_")
    if len(parts) != 3:
        raise HwminiError(f"{where}: array name {name!r} is not dtype_shape_hash")
    dtype, shape, short = parts
    try:
        dims = tuple(int(s) for s in shape.split("x")) if shape else ()
    except ValueError:
        raise HwminiError(f"{where}: array name {name!r} has a bad shape") from None
    return dtype, dims, short


def _torch_fmt(mat) -> str | None:
    return project_format(mat.get("dtype")) if isinstance(mat, dict) and mat.get("dtype") else None


def _scalar_bits(spec) -> int | None:
    """fp32 bits of a recorded scalar tensor ``{"dtype": "float32", "shape": [], "value": v}``
    (value a number or "nan"/"inf"/"-inf"); None for anything else (absent, row-wise, ...)."""
    if not isinstance(spec, dict) or spec.get("dtype") != "float32" or list(spec.get("shape", [None])) not in ([], [1], [1, 1]):
        return None
    v = spec.get("value")
    if isinstance(v, str):
        if v not in ("nan", "inf", "-inf"):
            return None
        v = float(v)
    if not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and math.isnan(v):
        return 0x7FC00000
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


def _splitk(spec) -> tuple | None:
    if spec is None:
        return None
    if isinstance(spec, dict):
        return int(spec["S"]), str(spec["scheme"])
    S, scheme = spec
    return int(S), str(scheme)


def _gemm_output(case, kind, name, p, a, b, bits, *, sel=None, dtype=None, why=None, error=None,
                 scope=None, call=None) -> GemmOutput:
    sel = sel or {}
    rows, cols = sel.get("rows"), sel.get("cols")
    select = "diagonal" if p.get("out_select") == "diagonal" else "grid"
    out_dtype = p.get("out_dtype") or dtype
    if bits is not None and a is not None:
        n_r = a.shape[0] if rows is None else len(rows)
        want = (n_r,) if select == "diagonal" else (n_r, b.shape[0] if cols is None else len(cols))
        if tuple(bits.shape) != want or (select == "grid" and (a.shape[0], b.shape[0]) != want) or \
                a.shape[1:] != b.shape[1:]:
            raise HwminiError(f"{case['id']}:{name}: output {bits.shape} does not fit a {a.shape}, b {b.shape} "
                              f"({select})")
    return GemmOutput(
        case_id=case["id"], name=name, kind=kind, truth_id=case.get("truth_id", ""),
        fmt_a=project_format(p.get("fmt_a")), fmt_b=project_format(p.get("fmt_b")), a=a, b=b,
        scale_a_bits=p.get("scale_a_bits"), scale_b_bits=p.get("scale_b_bits"),
        scale_result_bits=p.get("scale_result_bits"), out_fmt=project_format(out_dtype), out_dtype=out_dtype,
        fast=p.get("fast"), splitk=_splitk(p.get("splitk")),
        rows=None if rows is None else tuple(rows), cols=None if cols is None else tuple(cols),
        select=select, expect=bits, error=error, scope=scope, api=p.get("api"), why=why or case.get("why"),
        call=dict(call or p.get("call") or {}))
