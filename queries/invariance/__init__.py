"""Will a row's bits change? Batch, split-K, accumulation and dataflow invariance of a library
GEMM (docs/invariance.md).

A library (a dispatch table, :mod:`smtmodel.dataflow.dispatch`) picks a dataflow per call shape.
Output element (i, j) of a GEMM is a function of row i of A, column j of B and the dataflow only
(elements are independent: seed 000 §3.1.1, and the dataflow profiles), so a fixed row's bits can
change with M only where the dataflow changes. Each query pairs two dataflows per M:

* :func:`batch`: the dataflow at M against the one at the next M the table holds (the row's bits
  as the batch grows);
* :func:`splitk`: the recorded dataflow against the same one unsplit (S = 1: split-K off, what
  cuBLASLt computes without a workspace);
* :func:`fast`: fast against slow accumulation (both recorded);
* :func:`against`: the recorded dataflow against a fixed one (a CUTLASS profile, say).

Every distinct pair is settled once (:func:`settle`): ``same`` where the two dataflows are
identical (proof by identical dataflow: the same steps on the same inputs give the same bits) or
differ only in the order of one commutative addition (two slices combined serially or pairwise:
proof by solver that the core's addition commutes),
``differ`` with a witness (one row of A and one column of B) whose bits the GEMM twin computes
differently under the two dataflows (found by the compiled twin, confirmed by the NumPy reading),
or ``unknown`` (no witness among the candidates tried, nothing proved: the count is stated).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.dataflow import Dataflow, parse_dataflow
from smtmodel.dataflow.dispatch import DispatchError, Table
from smtmodel.dataflow.tables import ANSWERS, get_table
from smtmodel.dataflow.plan import chains
from smtmodel.formats import get_format
from smtmodel.limits import cases_memory, check_at_most, check_memory, check_positive
from smtmodel.gemm import gemm_bits
from smtmodel.sampling import round_to

MAX_M = 1 << 16
"""The most M values one query takes (``--m``); the tables hold M up to 16,384."""
ONE = 0x3F800000            # scale_a = scale_b = 1.0 (fp32): alpha = 1
BATCH = 32                  # candidates per twin call (a (n, K) times b (K, n), the diagonal kept)
LIMIT_MAX = 1 << 16         # --limit at most: each candidate is a twin GEMM row of K products per pair of groups


def check_sizes(N: int, K: int, limit: int) -> None:
    """``--n``, ``--k`` and ``--limit`` before any work: each at least 1, ``limit`` at most
    :data:`LIMIT_MAX`, and a batch of candidates (BATCH x K by K x BATCH, both dataflows' partial
    sums) within memory (:class:`smtmodel.limits.LimitError`)."""
    for opt, v in (("--n", N), ("--k", K), ("--limit", limit)):
        check_positive(opt, v)
    check_at_most("--limit", limit, LIMIT_MAX, "each candidate is a twin GEMM row of K products per pair of groups")
    check_memory(cases_memory(BATCH, K, arrays=16) * BATCH / 8, f"a witness search at K = {K}", "lower --k")


class InvarianceError(DispatchError):
    """Bad input to an invariance query (one line, exit 2)."""


# ---- witnesses ----------------------------------------------------------------------------------

@dataclass
class Verdict:
    """How two dataflows compare on every input of one (model, K, output)."""
    status: str                     # same | differ | unknown
    how: str                        # the proof or the search, in words
    a: list | None = None           # witness: row of A, column of B (raw bits, length K)
    b: list | None = None
    d: tuple | None = None          # the two outputs (raw bits of the output format)
    tried: int = 0
    seconds: float = 0.0

    def to_json(self, fmt_a=None, fmt_b=None) -> dict:
        out = {"status": self.status, "how": self.how, "tried": self.tried, "seconds": round(self.seconds, 3)}
        if self.a is not None:
            out["witness"] = {"nonzero_k": _nonzero(self.a, self.b), "a": [int(x) for x in self.a],
                              "b": [int(x) for x in self.b], "d": [int(x) for x in self.d]}
        return out


def _nonzero(a, b) -> list[int]:
    return [k for k in range(len(a)) if int(a[k]) or int(b[k])]


def _plain(df: Dataflow) -> Dataflow:
    return replace(df, name="", source="")


def _run(m, df: Dataflow, a: np.ndarray, b: np.ndarray, backend: str = "auto") -> np.ndarray:
    """The twin on n candidate pairs: row r of ``a`` (n, K) with row r of ``b`` (n, K)."""
    n = a.shape[0]
    sc = dict(scale_a_bits=ONE, scale_b_bits=ONE) if df.alpha_from_scales else {}
    d = gemm_bits(m, a, b.T, None, beta_bits=0, dataflow=df, backend=backend, **sc)
    return d[np.arange(n), np.arange(n)]


def _exp_bits(fmt: str, e: int, sign: int = 0) -> int:
    return int(round_to(np.array([(-1.0 if sign else 1.0) * 2.0 ** e]), fmt)[0])


def _tiles(df1: Dataflow, df2: Dataflow, m, K: int, w: int) -> list[int]:
    """The k-tiles (of width w) where a chunk of either dataflow starts or ends, and 0, 1, T-1."""
    T = -(-K // w)
    got = {0, min(1, T - 1), T - 1}
    for df in (df1, df2):
        for sl in chains(df, m, K):
            for ch in sl:
                real = ch[ch >= 0]
                if len(real):
                    got.update((int(real[0]) // w, int(real[-1]) // w))
    return sorted(got)


def _structured(df1, df2, m, K: int, fmt_a: str, fmt_b: str, rng, limit: int):
    """Sparse candidates: +B and -B (B = 2^16) in two k-tiles and a small s = 2^e in a third (or
    beside one of them): the exact sum is s, and the two dataflows group the three terms apart
    where their chunks, slices or combines differ, so one loses s and the other does not."""
    w = min(x for x in (df1.tile, df2.tile, 64) if x)
    tiles = _tiles(df1, df2, m, K, w)
    if len(tiles) > 16:
        tiles = sorted(set(tiles[:6] + tiles[-6:] + list(rng.choice(tiles, 4, replace=False))))
    big = [(_exp_bits(fmt_a, 8), _exp_bits(fmt_b, 8)), (_exp_bits(fmt_a, 8, 1), _exp_bits(fmt_b, 8))]
    smalls = []
    for e in (4, -2, -8, -14):
        ea = max(e // 2, -9 if fmt_a == "fp8e4m3" else -16)
        smalls.append((_exp_bits(fmt_a, ea), _exp_bits(fmt_b, e - ea)))
    cands = []
    for i in tiles:
        for j in tiles:
            if i == j:
                continue
            for l in tiles:
                for s in smalls:
                    kl = l * w + (1 if l in (i, j) else 0)
                    if kl < K:
                        cands.append(((i * w, big[0]), (j * w, big[1]), (kl, s)))
    order = rng.permutation(len(cands))[:limit]
    for c in order:
        a = np.zeros(K, np.uint64)
        b = np.zeros(K, np.uint64)
        for k, (x, y) in cands[c]:
            a[k], b[k] = x, y
        yield a, b


def _random(K: int, fmt_a: str, fmt_b: str, rng, n: int):
    for _ in range(n):
        yield (round_to(rng.standard_normal(K), fmt_a), round_to(rng.standard_normal(K), fmt_b))


def settle(model_id: str, df1: Dataflow, df2: Dataflow, K: int, fmt_a: str, fmt_b: str, *, seed: int = 0,
           limit: int = 4096) -> Verdict:
    """Whether two dataflows compute the same bits on every input of ``model_id`` at K (see the
    module docstring). ``limit``: candidates tried before answering unknown."""
    t0 = time.perf_counter()
    if _plain(df1) == _plain(df2):
        return Verdict("same", "proof by identical dataflow: the two calls run the same steps (same chains, "
                               "combine and epilogue), so every input gives the same bits", seconds=0.0)
    m = get_model(model_id)
    proof = _commuted_combine(m, df1, df2)
    if proof is not None:
        return Verdict("same", proof, seconds=time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    tried = 0
    for gen in (_structured(df1, df2, m, K, fmt_a, fmt_b, rng, limit),
                _random(K, fmt_a, fmt_b, rng, max(limit // 8, BATCH))):
        while tried < limit:
            batch = [x for _, x in zip(range(BATCH), gen)]
            if not batch:
                break
            a = np.stack([x[0] for x in batch])
            b = np.stack([x[1] for x in batch])
            d1, d2 = _run(m, df1, a, b), _run(m, df2, a, b)
            diff = np.nonzero(d1 != d2)[0]
            tried += len(batch)
            if len(diff):
                r = int(diff[0])
                return _confirm(m, df1, df2, a[r], b[r], (int(d1[r]), int(d2[r])), tried, t0)
    return Verdict("unknown", f"no witness among {tried} candidates (sparse cancellations and random normal "
                              "inputs); not proved equal", tried=tried, seconds=time.perf_counter() - t0)


PROOF_TIMEOUT = 120.0


def _commuted_combine(m, df1: Dataflow, df2: Dataflow) -> str | None:
    """Two slices combined serially (p0 + p1) and pairwise (p1 + p0, smtmodel.gemm's tree with
    S = 2), the dataflows otherwise identical: the same bits for every input exactly when the
    core's addition in the combine format is commutative, which is proved here by a solver (the
    proof cache keeps it). None where the reduction does not apply or the proof does not come."""
    if not (df1.slices == df2.slices == 2 and {df1.combine, df2.combine} == {"serial", "pairwise"}
            and _plain(replace(df1, combine="serial")) == _plain(replace(df2, combine="serial"))):
        return None
    from smtmodel.dataflow import steps
    from smtmodel.gemm import epilogue_format
    from smtmodel.solve import solve
    E = epilogue_format(m, df1)
    w = get_format(E).width

    def build(B):
        v = {"x": B.var("x", w), "y": B.var("y", w)}
        return [steps.add(v["x"], v["y"], E).ne(steps.add(v["y"], v["x"], E))], v
    r = solve(build, "portfolio", timeout=PROOF_TIMEOUT)
    if r.status != "unsat":
        return None
    who = r.extra.get("cached") or f"proved by {r.solver} in {r.seconds:.1f} s"
    return (f"proof by solver: with S = 2 the pairwise combine adds p1 + p0 and the serial one p0 + p1, "
            f"all else identical, and the core's {E} addition is commutative on every pair of inputs "
            f"(x + y != y + x unsat; {who})")


def _confirm(m, df1, df2, a, b, d, tried, t0) -> Verdict:
    """The witness recomputed alone by the NumPy reading of the twin (independent of the compiled
    batch that found it): both outputs must agree with the search's and differ."""
    ref = tuple(int(_run(m, df, a[None, :], b[None, :], backend="numpy")[0]) for df in (df1, df2))
    if ref != d or ref[0] == ref[1]:
        raise RuntimeError(f"the NumPy reading of the twin gives {ref}, the compiled search {d} (a bug)")
    return Verdict("differ", "witness found by the compiled twin and confirmed by its NumPy reading",
                   a=[int(x) for x in a], b=[int(x) for x in b], d=d, tried=tried,
                   seconds=time.perf_counter() - t0)


# ---- the queries --------------------------------------------------------------------------------

@dataclass
class Group:
    """One pair of dataflows and the M values where the query meets it."""
    left: object                   # a table's answer (Dispatch, Predicted) or a fixed Dataflow
    right: object
    where: list = field(default_factory=list)      # batch: (M_before, M_after); others: M
    verdict: Verdict | None = None


@dataclass
class Report:
    query: str
    table: Table
    N: int
    K: int
    setting: dict
    Ms: tuple                      # the asked range (lo, hi)
    covered: list
    missing: list
    segments: list                 # (M_lo, M_hi, Dispatch): runs of one dataflow over covered M
    kernel_changes: int            # covered neighbours with another kernel but the same dataflow
    groups: list
    model: str
    against: str | None = None

    def to_json(self) -> dict:
        def side(x):
            return x.dataflow.text() if isinstance(x, ANSWERS) else x.text()
        return {
            "query": self.query, "table": self.table.name, "device": self.table.device, "N": self.N, "K": self.K,
            **self.setting, "M": list(self.Ms), "model": self.model, "against": self.against,
            "covered": len(self.covered), "missing": _ranges(self.missing),
            "segments": [{"M": [lo, hi], "dataflow": d.dataflow.text(), "split": d.split_text()}
                         for lo, hi, d in self.segments],
            "kernel_changes_same_dataflow": self.kernel_changes,
            "groups": [{"left": side(g.left), "right": side(g.right), "where": g.where,
                        **(g.verdict.to_json() if g.verdict else {})} for g in self.groups]}


def _ranges(ms) -> list:
    out = []
    for m in sorted(ms):
        if out and m == out[-1][1] + 1:
            out[-1][1] = m
        else:
            out.append([m, m])
    return out


def ranges_text(ms, limit: int = 8) -> str:
    r = _ranges(ms)
    parts = [f"{a}" if a == b else f"{a}..{b}" for a, b in r[:limit]]
    return ", ".join(parts) + (f", ... ({len(r) - limit} more runs)" if len(r) > limit else "")


def parse_m(text: str) -> tuple[int, int]:
    """``LO:HI`` (inclusive) or one ``M``."""
    lo, sep, hi = str(text).partition(":")
    try:
        lo_i = int(lo)
        hi_i = int(hi) if sep else lo_i
    except ValueError:
        raise InvarianceError(f"--m takes LO:HI or one M (integers), got {text!r}") from None
    if lo_i < 1 or hi_i < lo_i:
        raise InvarianceError(f"--m {text}: need 1 <= LO <= HI")
    if hi_i - lo_i + 1 > MAX_M:
        raise InvarianceError(f"--m {text}: {hi_i - lo_i + 1} M values; at most {MAX_M} per query")
    return lo_i, hi_i


def _covered(t: Table, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace) -> tuple[dict, list]:
    lo, hi = Ms
    got = t.lookup_m(range(lo, hi + 1), N, K, fmt_a, fmt_b, out, fast_, workspace)
    if not got:
        raise InvarianceError(t.not_in_table(lo, N, K, fmt_a, fmt_b, out, fast_, workspace).replace(
            f"M={lo} ", f"any M in {lo}..{hi} ", 1).replace(f"M = {lo} is not", f"none of M = {lo}..{hi} is", 1))
    missing = sorted(set(range(lo, hi + 1)) - set(got))
    return got, missing


def _segments(got: dict) -> tuple[list, int]:
    segs, kchanges = [], 0
    for m in sorted(got):
        d = got[m]
        if segs and _plain(segs[-1][2].dataflow) == _plain(d.dataflow):
            if segs[-1][3].kernel() != d.kernel():
                kchanges += 1
            segs[-1][1] = m
            segs[-1][3] = d
        else:
            segs.append([m, m, d, d])
    return [(lo, hi, d) for lo, hi, d, _ in segs], kchanges


def _setting(fmt_a, fmt_b, out, fast_, workspace) -> dict:
    return {"fmt_a": fmt_a, "fmt_b": fmt_b, "out": out, "fast": fast_, "workspace": workspace}


def _model(t: Table, fmt_a, fmt_b) -> str:
    return t.model_id(fmt_a, fmt_b)


def _settle_groups(groups, model_id, K, fmt_a, fmt_b, seed, limit):
    def df(x):
        return x.dataflow if isinstance(x, ANSWERS) else x
    for g in groups:
        g.verdict = settle(model_id, df(g.left), df(g.right), K, fmt_a, fmt_b, seed=seed, limit=limit)


def batch(table: str, N: int, K: int, Ms=(1, 4096), fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16", fast_=True,
          workspace=1 << 20, seed: int = 0, limit: int = 4096) -> Report:
    """The M values (of those the table holds in ``Ms``) where a fixed row's bits can change:
    each change of dataflow between neighbouring covered M, grouped by the pair of dataflows."""
    t = get_table(table)
    got, missing = _covered(t, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace)
    segs, kch = _segments(got)
    groups: dict = {}
    for (lo0, hi0, d0), (lo1, hi1, d1) in zip(segs, segs[1:]):
        key = frozenset((_plain(d0.dataflow), _plain(d1.dataflow)))
        g = groups.setdefault(key, Group(d0, d1))
        g.where.append((hi0, lo1))
    groups = list(groups.values())
    mid = _model(t, fmt_a, fmt_b)
    _settle_groups(groups, mid, K, fmt_a, fmt_b, seed, limit)
    return Report("batch", t, N, K, _setting(fmt_a, fmt_b, out, fast_, workspace), tuple(Ms), sorted(got), missing,
                  segs, kch, groups, mid)


def _paired(query, table, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace, other, seed, limit, against=None):
    """Pair each covered M's dispatch with ``other(table, M, dispatch)`` (None: M not compared)."""
    t = get_table(table)
    got, missing = _covered(t, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace)
    groups: dict = {}
    for m in sorted(got):
        left = got[m]
        right = other(t, m, left)
        if right is None:
            del got[m]
            missing.append(m)
            continue
        key = (_plain(left.dataflow), _plain(right.dataflow if isinstance(right, ANSWERS) else right))
        groups.setdefault(key, Group(left, right)).where.append(m)
    if not got:
        raise InvarianceError(f"{t.name}: no M in {Ms[0]}..{Ms[1]} has both rows the query compares "
                              f"(N={N} K={K}); nothing is inferred outside the recorded rows")
    segs, kch = _segments(got)
    groups = list(groups.values())
    mid = _model(t, fmt_a, fmt_b)
    _settle_groups(groups, mid, K, fmt_a, fmt_b, seed, limit)
    return Report(query, t, N, K, _setting(fmt_a, fmt_b, out, fast_, workspace), tuple(Ms), sorted(got),
                  sorted(missing), segs, kch, groups, mid, against)


def splitk(table: str, N: int, K: int, Ms=(1, 4096), fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16", fast_=True,
           workspace=1 << 20, seed: int = 0, limit: int = 4096) -> Report:
    """Split-K as recorded against split-K off (the same dataflow with S = 1), per covered M."""
    def off(t, m, d):
        return replace(d.dataflow, slices=1, combine="serial").validate()
    return _paired("splitk", table, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace, off, seed, limit)


def fast(table: str, N: int, K: int, Ms=(1, 4096), fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16",
         workspace=1 << 20, seed: int = 0, limit: int = 4096) -> Report:
    """Fast against slow accumulation, each as the table records it, per M the table holds for both."""
    slow = get_table(table).lookup_m(range(Ms[0], Ms[1] + 1), N, K, fmt_a, fmt_b, out, False, workspace)
    return _paired("fast", table, N, K, Ms, fmt_a, fmt_b, out, True, workspace, lambda t, m, d: slow.get(m),
                   seed, limit)


def against(table: str, dataflow: str, N: int, K: int, Ms=(1, 4096), fmt_a="fp8e4m3", fmt_b="fp8e4m3", out="bf16",
            fast_=True, workspace=1 << 20, seed: int = 0, limit: int = 4096) -> Report:
    """The recorded dataflow against a fixed one (``dataflow``: a profile or text form; its
    output is the call's where it leaves it at the model's)."""
    fixed = parse_dataflow(dataflow)
    if fixed.out == "model":
        fixed = replace(fixed, out=out).validate()
    try:
        chains(fixed, get_model(get_table(table).model_id(fmt_a, fmt_b)), K)
    except Exception as e:          # a dataflow that does not fit K (one line)
        raise InvarianceError(str(e)) from None
    return _paired("against", table, N, K, Ms, fmt_a, fmt_b, out, fast_, workspace, lambda t, m, d: fixed, seed,
                   limit, against=fixed.text())


# ---- text ---------------------------------------------------------------------------------------

def _side(x, query: str = "") -> str:
    if isinstance(x, ANSWERS):
        return f"{x.split_text()} ({x.dataflow.text()})"
    return f"{'split-K off (S=1)' if query == 'splitk' else 'fixed'} ({x.text()})"


def witness_lines(v: Verdict, fmt_a: str, fmt_b: str, out: str) -> list[str]:
    fa, fb, fo = get_format(fmt_a), get_format(fmt_b), get_format(out)
    from smtmodel.fp.classify import value_text
    nz = [k for k in range(len(v.a)) if (v.a[k] or v.b[k])]
    lines = []
    if len(nz) <= 8:
        terms = ", ".join(f"k={k}: a={fa.hex(v.a[k])} ({value_text(v.a[k], fa)}) b={fb.hex(v.b[k])} "
                          f"({value_text(v.b[k], fb)})" for k in nz)
        lines.append(f"witness row of A and column of B: zero except {terms}")
    else:
        lines.append(f"witness row of A and column of B: {len(nz)} nonzero terms (random normal; -o writes them)")
    lines.append(f"twin: {fo.hex(v.d[0])} ({value_text(v.d[0], fo)}) against {fo.hex(v.d[1])} "
                 f"({value_text(v.d[1], fo)})")
    return lines


def report_text(r: Report) -> str:
    s = r.setting
    t = r.table
    head = {"batch": "batch invariance", "splitk": "split-K on against off", "fast": "fast against slow accumulation",
            "against": f"against the fixed dataflow {r.against}"}[r.query]
    acc = "" if r.query == "fast" or t.call != "torch._scaled_mm" else \
        f", {'fast' if s['fast'] else 'slow'} accumulation"
    L = [f"{head}: {t.call} through {t.name} ({t.device}), {s['fmt_a']} x {s['fmt_b']} -> {s['out']}{acc}, "
         f"workspace {s['workspace'] >> 20} MiB, N={r.N} K={r.K}, M {r.Ms[0]}..{r.Ms[1]}",
         f"  model {r.model}; a row's bits depend on its row of A, B and the dataflow only",
         *([] if t.validated else [f"  {t.name} is an UNVALIDATED rule, not recorded rows: the dataflows are its "
                                   "predictions (docs/invariance.md)"]),
         f"  in the table: {len(r.covered)} of {r.Ms[1] - r.Ms[0] + 1} M values"
         + (f"; not in the table (no claim): {ranges_text(r.missing)}" if r.missing else "")]
    L.append("  dataflow by M (runs over the M in the table):")
    for lo, hi, d in r.segments:
        L.append(f"    M {lo}..{hi}: {_side(d)}")
    if r.kernel_changes:
        L.append(f"  {r.kernel_changes} kernel change(s) (tile, stages, customOption, ...) keep the dataflow: same "
                 "bits under the profile, whose chains do not depend on the kernel (docs/invariance.md)")
    if r.query == "batch" and not r.groups:
        L.append("  result: one dataflow over every M in the table: the row's bits never change with M there "
                 "(proof by identical dataflow)")
    for g in r.groups:
        v = g.verdict
        if r.query == "batch":
            where = ", ".join(f"{a}->{b}" for a, b in g.where[:12]) + (" ..." if len(g.where) > 12 else "")
            L.append(f"  {_side(g.left)}  vs  {_side(g.right)}: between M {where}")
        else:
            L.append(f"  {_side(g.left)}  vs  {_side(g.right, r.query)}: M {ranges_text(g.where)}")
        word = {"same": "same bits", "differ": "bits change", "unknown": "unknown"}[v.status]
        L.append(f"    {word}: {v.how} ({v.tried} candidate(s), {v.seconds:.2f} s)")
        if v.status == "differ":
            L += ["    " + x for x in witness_lines(v, s["fmt_a"], s["fmt_b"], s["out"])]
    return "\n".join(L)
