"""A library's shape -> dataflow decisions as data: cuBLASLt 12.8.3.14's FP8 ``torch._scaled_mm``
dispatch, as recorded by mmaemu 0.1.0 (docs/invariance.md, "Dispatch tables").

Two dispatch tables, each a GPU's recorded cuBLASLt heuristic answers (one row per
(M, N, K, A format, B format, output, fast accumulation, workspace): algorithm, tile, stages,
numSplitsK, customOption, reduction scheme, swizzle):

``cublaslt-h100pcie-fp8``
    NVIDIA H100 PCIe (114 SMs), 1,767,416 rows; the dataflow is profile
    ``cublaslt-hopper-fp8-fast`` / ``-slow`` with the row's split count S (contiguous runs of
    128-wide k-tiles, partials added serially: every customOption, mmaemu's rule).
``cublaslt-rtx4060-fp8``
    NVIDIA GeForce RTX 4060 (24 SMs), 1,228,448 rows; profile ``cublaslt-ada-fp8-fast`` /
    ``-slow`` with S and the combine of the row's customOption (0 and 2: serial, 1: pairwise).

:func:`lookup` gives the :class:`Dispatch` of one call, and raises :class:`DispatchError` ("not
in the table") for any call the table does not hold: nothing is inferred between or beyond the
recorded rows (mmaemu's own envelope inference is not used). :func:`lookup_m` does the same for
many M at one (N, K, setting) and says which M are not in the table.

The data (``data/cublaslt/``) are mmaemu's two table files, copied unchanged from the mmaemu
0.1.0 wheel (Apache-2.0; LICENSE and NOTICE beside them) and checked on loading against the
sha256 that mmaemu's own metadata records, plus ``tables.json``, derived from the wheel by
:func:`derive` (the metadata this module reads and the confirmed split combinations, without
mmaemu's recording lists). The smtmodel layer only reads data: NumPy and the standard library.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..formats import dtype_name
from ..model import ModelError
from .profiles import get_profile
from .spec import Dataflow

DATA = Path(__file__).resolve().parent / "data" / "cublaslt"
WHEEL = "mmaemu-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "f9725a7334901574debde819b9f285ca00443e2b6c7f6ccc9a7993ec0cf7e44f"
"""The wheel the data come from (PyPI, ``pip download mmaemu==0.1.0 --no-deps``)."""

TABLES = {
    "cublaslt-h100pcie-fp8": dict(table="heur_h100pcie_lt12.8.3.14", verified="verified_split_combos_h100pcie_lt12.8.3.14.json",
                                  profile="cublaslt-hopper-fp8", model="hopper-{ab}-fp32:zero_align=ignore"),
    "cublaslt-rtx4060-fp8": dict(table="heur_rtx4060_lt12.8.3.14", verified="verified_split_combos.json",
                                 profile="cublaslt-ada-fp8", model="ada-{ab}-fp32:zero_align=ignore"),
}
"""The dispatch tables by name: mmaemu's table id and confirmed-combination file, the dataflow
profile family (``-fast`` / ``-slow``) and the catalog model template of the instruction."""

FMTS = ("fp8e4m3", "fp8e5m2")                      # table codes 0, 1 (mmaemu "fa/fb")
OUTS = ("fp32", "bf16", "fp16", "fp8e4m3", "fp8e5m2")   # table codes 0..4 (mmaemu "out")
TORCH_WORKSPACE = 1 << 20
"""torch's default cuBLASLt workspace for these calls (1 MiB: mmaemu logged it on every recorded
call of torch 2.7.1); the tables also hold 0, 4 MiB and 32 MiB (``--workspace``)."""
REDUCTION = {0: "none", 1: "inplace", 2: "compute_type", 4: "output_type"}
"""cublasLtReductionScheme_t values (cublasLt.h, CUDA 12.8)."""
_KEY = 1 << 21


class DispatchError(ModelError):
    """An unknown dispatch table, a call the table does not hold, or damaged data (one line)."""


@dataclass(frozen=True)
class Dispatch:
    """cuBLASLt's recorded choice for one call, and the dataflow it computes."""
    table: str
    M: int
    N: int
    K: int
    fmt_a: str
    fmt_b: str
    out: str
    fast: bool
    workspace: int
    splitk: int
    custom: int
    scheme: str          # none | serial | pairwise | contiguous (mmaemu's customOption rule)
    algo: int
    tile: int
    stages: int
    reduction: int
    swizzle: int
    dataflow: Dataflow

    def kernel(self) -> tuple:
        """What cuBLASLt picked beyond the dataflow (algorithm, tile, stages, customOption,
        reduction scheme, swizzle): a change here alone changes no bit under the profile."""
        return (self.algo, self.tile, self.stages, self.custom, self.reduction, self.swizzle)

    def kernel_text(self) -> str:
        return (f"algo {self.algo}, tile enum {self.tile}, stages enum {self.stages}, numSplitsK {self.splitk}, "
                f"customOption {self.custom}, reduction {REDUCTION.get(self.reduction, self.reduction)}")

    def split_text(self) -> str:
        return "unsplit (S=1)" if self.splitk == 1 else f"split-K S={self.splitk} {self.scheme}"

    def to_json(self) -> dict:
        return {"table": self.table, "M": self.M, "N": self.N, "K": self.K, "fmt_a": self.fmt_a, "fmt_b": self.fmt_b,
                "out": self.out, "fast": self.fast, "workspace": self.workspace, "splitK": self.splitk,
                "customOption": self.custom, "scheme": self.scheme, "algo": self.algo, "tile": self.tile,
                "stages": self.stages, "reduction": self.reduction, "swizzle": self.swizzle,
                "dataflow": self.dataflow.text()}


class Table:
    """One dispatch table, loaded and checked (use :func:`get_table`)."""

    call = "torch._scaled_mm"
    validated = True

    def __init__(self, name: str, meta: dict, cols: dict):
        self.name = name
        self.meta = meta
        self.id = meta["table_id"]
        self.profile = TABLES[name]["profile"]
        self.model_template = TABLES[name]["model"]
        self.workspaces = [int(w) for w in meta["ws"]]
        self.scheme_rule = {int(k): v for k, v in meta["custom -> scheme"].items()}
        self.scheme_unlisted = meta.get("custom -> scheme, unlisted")
        self.cols = cols
        skey = (cols["ws"].astype(np.int64) << 16) | (cols["out"].astype(np.int64) << 8) | \
            (cols["fast"].astype(np.int64) << 4) | (cols["fa"].astype(np.int64) << 2) | cols["fb"].astype(np.int64)
        rkey = (cols["M"].astype(np.int64) << 42) | (cols["N"].astype(np.int64) << 21) | cols["K"].astype(np.int64)
        order = np.lexsort((rkey, skey))
        self._skey, self._rkey, self._order = skey[order], rkey[order], order

    # ---- describing -----------------------------------------------------------------------
    @property
    def device(self) -> str:
        d = self.meta["profile_device"]
        return f"{d['gpu']} ({d['sm_count']} SMs, cuBLASLt {d['cublaslt']}, torch {d['torch']})"

    def setting_text(self, fmt_a, fmt_b, out, fast, workspace) -> str:
        return (f"{fmt_a} x {fmt_b} -> {out}, {'fast' if fast else 'slow'} accumulation, "
                f"workspace {_ws_text(workspace)}")

    def scheme_of(self, S: int, custom: int) -> str:
        if S <= 1:
            return "none"
        if custom in self.scheme_rule:
            return self.scheme_rule[custom]
        if self.scheme_unlisted is not None:
            return self.scheme_unlisted
        return "serial"          # mmaemu's RTX 4060 rule: every customOption other than 1

    def dataflow(self, fast: bool, out: str, S: int, scheme: str) -> Dataflow:
        df = get_profile(f"{self.profile}-{'fast' if fast else 'slow'}")
        kw = dict(out=out, slices=S)
        if S > 1:
            kw["combine"] = "pairwise" if scheme == "pairwise" else "serial"
        return replace(df, **kw).validate()

    def model_id(self, fmt_a: str, fmt_b: str) -> str:
        return self.model_template.format(ab=fmt_a if fmt_a == fmt_b else f"{fmt_a}x{fmt_b}")

    # ---- lookups --------------------------------------------------------------------------
    def _setting(self, fmt_a, fmt_b, out, fast, workspace) -> int:
        for what, v, allowed in (("A format", fmt_a, FMTS), ("B format", fmt_b, FMTS), ("output", out, OUTS)):
            if v not in allowed:
                raise DispatchError(f"{self.name}: {what} {v!r} is not in the table (it holds {', '.join(allowed)})")
        if workspace not in self.workspaces:
            raise DispatchError(f"{self.name}: workspace {workspace} B is not in the table (it holds "
                                f"{', '.join(_ws_text(w) for w in self.workspaces)})")
        return (self.workspaces.index(workspace) << 16) | (OUTS.index(out) << 8) | (int(bool(fast)) << 4) | \
            (FMTS.index(fmt_a) << 2) | FMTS.index(fmt_b)

    def _span(self, s: int) -> tuple[int, int]:
        return int(np.searchsorted(self._skey, s, "left")), int(np.searchsorted(self._skey, s, "right"))

    def _row(self, j: int, M, N, K, fmt_a, fmt_b, out, fast, workspace) -> Dispatch:
        c = self.cols
        S, custom = int(c["splitK"][j]), int(c["custom"][j])
        scheme = self.scheme_of(S, custom)
        return Dispatch(self.name, int(M), int(N), int(K), fmt_a, fmt_b, out, bool(fast), int(workspace), S, custom,
                        scheme, int(c["algo"][j]), int(c["tile"][j]), int(c["stages"][j]), int(c["reduction"][j]),
                        int(c["swizzle"][j]), self.dataflow(bool(fast), out, S, scheme))

    def lookup(self, M, N, K, fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16", fast=True,
               workspace=TORCH_WORKSPACE) -> Dispatch:
        """The recorded dispatch of one call; :class:`DispatchError` where the table has no row."""
        got = self.lookup_m([M], N, K, fmt_a, fmt_b, out, fast, workspace)
        if not got:
            raise DispatchError(self.not_in_table(M, N, K, fmt_a, fmt_b, out, fast, workspace))
        return got[int(M)]

    def lookup_m(self, Ms, N, K, fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16", fast=True,
                 workspace=TORCH_WORKSPACE) -> dict:
        """{M: Dispatch} for the M of ``Ms`` the table holds at (N, K, setting); the others are
        absent (never guessed)."""
        s = self._setting(fmt_a, fmt_b, out, fast, workspace)
        Ms = np.asarray(sorted(set(int(m) for m in Ms)), dtype=np.int64)
        if not (0 <= N < _KEY and 0 <= K < _KEY) or len(Ms) == 0:
            return {}
        ok = (Ms >= 0) & (Ms < _KEY)
        Ms = Ms[ok]
        lo, hi = self._span(s)
        keys = (Ms << 42) | (int(N) << 21) | int(K)
        pos = lo + np.searchsorted(self._rkey[lo:hi], keys)
        hit = (pos < hi) & (self._rkey[np.minimum(pos, len(self._rkey) - 1)] == keys)
        return {int(m): self._row(int(self._order[p]), int(m), N, K, fmt_a, fmt_b, out, fast, workspace)
                for m, p in zip(Ms[hit], pos[hit])}

    def shapes(self, fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16", fast=True, workspace=TORCH_WORKSPACE) -> dict:
        """{(N, K): number of M rows} of one setting."""
        lo, hi = self._span(self._setting(fmt_a, fmt_b, out, fast, workspace))
        nk = self._rkey[lo:hi] & ((1 << 42) - 1)
        u, n = np.unique(nk, return_counts=True)
        return {(int(x >> 21), int(x & (_KEY - 1))): int(c) for x, c in zip(u, n)}

    def not_in_table(self, M, N, K, fmt_a, fmt_b, out, fast, workspace) -> str:
        setting = self.setting_text(fmt_a, fmt_b, out, fast, workspace)
        have = self.shapes(fmt_a, fmt_b, out, fast, workspace)
        if not have:
            why = "the table has no row for this setting"
            rej = self.meta.get("rejects") or []
            if any(r["fmt_a"] == fmt_a[3:] and r["fmt_b"] == fmt_b[3:] and r["out"] == dtype_name(out) for r in rej):
                why = f"cuBLASLt rejected this setting on the {self.meta['profile_device']['gpu']}"
        elif (N, K) not in have:
            why = f"(N, K) = ({N}, {K}) is not among the table's {len(have)} (N, K) pairs of this setting"
        else:
            why = f"M = {M} is not among the {have[(N, K)]} M values recorded at (N, K) = ({N}, {K})"
        return (f"not in the table: {self.name} ({self.device}) has no row for M={M} N={N} K={K}, {setting}: {why} "
                f"(nothing is inferred outside the recorded rows)")


def _ws_text(w: int) -> str:
    return "0" if w == 0 else f"{w >> 20} MiB" if w % (1 << 20) == 0 else f"{w} B"


_LOADED: dict[str, Table] = {}


def table_names() -> list[str]:
    return list(TABLES)


def get_table(name: str, data_dir: Path | None = None) -> Table:
    """A dispatch table by name, its npz checked against the sha256 of ``tables.json``."""
    if name not in TABLES:
        import difflib
        close = difflib.get_close_matches(name, list(TABLES), n=2, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise DispatchError(f"unknown dispatch table {name!r}{hint} (tables: {', '.join(TABLES)})")
    key = f"{name}@{data_dir}"
    if key not in _LOADED:
        _LOADED[key] = _load(name, Path(data_dir) if data_dir else DATA)
    return _LOADED[key]


def _load(name: str, data_dir: Path) -> Table:
    try:
        meta_all = json.loads((data_dir / "tables.json").read_text(encoding="utf-8"))
        meta = meta_all["tables"][TABLES[name]["table"]]
        p = data_dir / f"{meta['table_id']}.npz"
        raw = p.read_bytes()
    except (OSError, KeyError, ValueError) as e:
        raise DispatchError(f"dispatch table {name}: cannot read {data_dir} ({e})") from None
    got = hashlib.sha256(raw).hexdigest()
    if got != meta["npz_sha256"]:
        raise DispatchError(f"{p}: sha256 {got[:16]}... differs from {meta['npz_sha256'][:16]}... recorded by mmaemu "
                            "(a damaged copy)")
    z = np.load(io.BytesIO(raw), allow_pickle=False)
    cols = {k: z[k] for k in z.files}
    if len(cols["M"]) != meta["rows"]:
        raise DispatchError(f"{p}: {len(cols['M'])} rows, mmaemu's metadata says {meta['rows']}")
    return Table(name, meta, cols)


def verified_combos(name: str) -> list[dict]:
    """mmaemu's confirmed split combinations of a table: (fast, S, scheme, out, fmt pair), each
    replayed bit for bit from a live call with that logged split (``in_table``: whether the
    table's rows hold it)."""
    vc = get_table(name).meta["verified_combos"]
    return [dict(zip(vc["columns"], row)) for row in vc["rows"]]


# ---- building the data from the wheel ------------------------------------------------------------

FORMAT = "mmaprobe-dispatch/1"
_COMBO_COLS = ("fast", "S", "scheme", "out", "fmt_pair", "in_table", "verified")
_META_KEYS = ("table_id", "format", "descriptor", "key", "columns", "rows", "split_rows", "npz_sha256", "npz_bytes",
              "profile_device", "rejects", "dropped_status_nonzero", "split_rule", "split_layouts",
              "workspace0_note", "align_invariance")


def derive(wheel: "str | Path", out_dir: "str | Path" = DATA) -> dict:
    """Write ``data/cublaslt`` from the mmaemu 0.1.0 wheel: the two table npz files unchanged,
    LICENSE and NOTICE, and ``tables.json`` (each table's metadata, and its confirmed split
    combinations without the recording lists). Checks the wheel's sha256 and, for every file
    taken, the sha256 the wheel's RECORD gives. Returns the tables.json object."""
    import base64
    raw = Path(wheel).read_bytes()
    if hashlib.sha256(raw).hexdigest() != WHEEL_SHA256:
        raise DispatchError(f"{wheel}: not the mmaemu 0.1.0 wheel (sha256 {hashlib.sha256(raw).hexdigest()})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    zf = zipfile.ZipFile(io.BytesIO(raw))
    record = {}
    for line in zf.read("mmaemu-0.1.0.dist-info/RECORD").decode().splitlines():
        path, h, _ = line.rsplit(",", 2)
        if h.startswith("sha256="):
            record[path] = base64.urlsafe_b64decode(h[7:] + "==").hex()

    def read(path):
        data = zf.read(path)
        if hashlib.sha256(data).hexdigest() != record[path]:
            raise DispatchError(f"{wheel}!{path}: sha256 differs from the wheel's RECORD")
        return data, record[path]

    tables, sources = {}, {}
    for name, spec in TABLES.items():
        tid = spec["table"]
        base = "mmaemu/platform/data/"
        npz, h_npz = read(base + f"{tid}.npz")
        js, h_js = read(base + f"{tid}.json")
        vc, h_vc = read(base + spec["verified"])
        m = json.loads(js)
        v = json.loads(vc)
        meta = {k: m[k] for k in _META_KEYS if k in m}
        meta["ws"] = m["codes"]["ws"]
        meta["custom -> scheme"] = m["codes"]["custom -> scheme"]
        if "custom -> scheme, unlisted" in m["codes"]:
            meta["custom -> scheme, unlisted"] = m["codes"]["custom -> scheme, unlisted"]
        meta["verified_combos"] = {
            "file": spec["verified"], "definition": v["definition"], "columns": list(_COMBO_COLS),
            "rows": sorted([c[k] for k in _COMBO_COLS] for c in v["combos"])}
        tables[tid] = meta
        (out_dir / f"{tid}.npz").write_bytes(npz)
        sources[tid] = {base + f"{tid}.npz": h_npz, base + f"{tid}.json": h_js, base + spec["verified"]: h_vc}
    for lic, path in (("LICENSE", "mmaemu-0.1.0.dist-info/licenses/LICENSE"),
                      ("NOTICE", "mmaemu-0.1.0.dist-info/licenses/NOTICE")):
        (out_dir / lic).write_bytes(read(path)[0])
    obj = {"format": FORMAT,
           "source": {"package": "mmaemu 0.1.0 (PyPI, Apache-2.0)", "wheel": WHEEL, "wheel_sha256": WHEEL_SHA256,
                      "files_sha256": sources},
           "tables": tables}
    text = json.dumps(obj, indent=1, sort_keys=True)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda mt: "[" + " ".join(mt.group(1).split()) + "]", text)
    (out_dir / "tables.json").write_text(text + "\n", encoding="utf-8")
    _LOADED.clear()
    return obj


if __name__ == "__main__":           # python -m smtmodel.dataflow.dispatch WHEEL [OUT_DIR]
    import sys
    derive(sys.argv[1], *(sys.argv[2:3]))
