"""A GEMM under a dataflow, composed once: what the dataflow does around the model's chains
(docs/dataflow.md, "Order of a GEMM element"), written over a *reading* — the few operations
the composition needs, on values of one kind — as symfpu writes each IEEE operation once over an
abstract bit-vector interface.

Two readings instantiate it:

* :class:`Terms` (here): one output element, every value a bit vector of any backend (NumPy
  lanes, z3/cvc5/Bitwuzla terms): :func:`smtmodel.dataflow.element`, the SMT reading;
* the batched GEMM's reading (``smtmodel.gemm``): every value an (M, N) array of bits, every step
  the same bit-vector composition run elementwise (NumPy, or compiled through LLVM), with fast
  paths of its own (:meth:`Reading.fused_part`, :meth:`Reading.combine_finish`) that trace the
  same steps into fewer passes.

What one call decides once — the epilogue and output formats, the beta = 0 rule, whether C enters
the accumulator and its pre-scale, the epilogue's form and constants — is a :class:`Call`
(:func:`call`); the epilogue with the output rounding is an :class:`Epilogue`. The order of an
element: the plan's chunks (:func:`smtmodel.dataflow.plan.chains`), each a model chain from +0 or
from C → each slice's chunks combined (:func:`part`) → the slices combined (:func:`combine`) →
the epilogue and the output (:func:`finish`); :func:`gemm` is the whole.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from dataclasses import astuple, dataclass

from ..formats import get_format
from ..fp.classify import one_bits
from . import steps
from .spec import Dataflow

# ---- what a call decides once ---------------------------------------------------------------------

def epilogue_format(m, df: Dataflow | None = None) -> str:
    """The format of the partial sums and the alpha/beta epilogue: the dataflow's, else fp32
    (fp64 for fp64 models)."""
    if df is not None and df.epi_fmt != "auto":
        return df.epi_fmt
    return "fp64" if get_format(m.out_fmt).width > 32 else "fp32"


def output_format(m, df: Dataflow) -> str:
    """D's format: the dataflow's ``out``, or the model's output format."""
    return m.out_fmt if df.out == "model" else df.out


def scale_result_applies(df: Dataflow, out: str) -> bool:
    """Whether the dataflow applies scale_result to an output of format ``out`` (its
    ``scale_result`` field: ``fp8`` outputs only, ``none``, or every output)."""
    return df.scale_result != "none" and not (df.scale_result == "fp8" and out not in steps.FP8)


def beta_is_zero(beta_bits: int, E: str) -> bool:
    """Whether beta (raw bits of ``E``) is +0 or -0: the dataflow's beta = 0 rule applies."""
    return (int(beta_bits) & ~(1 << (get_format(E).width - 1))) == 0


def no_products(df: Dataflow, K: int) -> bool:
    """K = 0 under ``k0=zero``: D = +0 with nothing computed (not even the epilogue)."""
    return K == 0 and df.k0 == "zero"


@dataclass(frozen=True)
class Epilogue:
    """D in the output format from acc (in ``E``) and C (in ``c_fmt``): the epilogue's ``form``
    with alpha and beta (raw bits of E) and C's use (``"read"``, ``"skip"``, ``"fma0"``:
    :func:`.steps.epilogue`), then scale_result and the output rounding (:func:`.steps.output`)."""
    E: str
    c_fmt: str
    out: str
    form: str
    use_c: str
    alpha_bits: int
    beta_bits: int
    via: str
    saturate: bool
    sr_bits: int | None
    nan: str

    @property
    def key(self) -> tuple:
        """A name of the composition (equal keys: equal functions of acc and C)."""
        return ("df-epi",) + astuple(self)

    @property
    def reads_c(self) -> bool:
        return self.use_c == "read"

    def term(self, acc, c):
        """The composition on bit vectors of any backend."""
        d = steps.epilogue(acc, c, self.E, self.form, self.alpha_bits, self.beta_bits, self.c_fmt, self.use_c)
        return steps.output(d, self.E, self.out, self.via, self.saturate, self.sr_bits, self.nan)


@dataclass(frozen=True)
class Call:
    """What one GEMM call decides before any chain runs (:func:`call`)."""
    m: object
    df: Dataflow
    E: str                    # the epilogue's and the combine's format
    out: str                  # D's format
    use_c: str                # beta = 0 rule applied: "read" C | "skip" | "fma0"
    c_in_acc: bool            # C (pre-scaled) starts slice 0's first chain
    q_bits: int | None        # RN(beta/alpha) for c_scale=beta/alpha
    epilogue: Epilogue        # the epilogue of the combined accumulator (or of partition 0)

    @property
    def alpha_bits(self) -> int:
        return self.epilogue.alpha_bits

    @property
    def beta_bits(self) -> int:
        return self.epilogue.beta_bits

    @property
    def partition(self) -> Epilogue:
        """``combine=output``: the epilogue of partitions k > 0, which read D (in the output
        format) with beta = 1 (CUTLASS serial split-K)."""
        e = self.epilogue
        return Epilogue(e.E, self.out, e.out, e.form, "read", e.alpha_bits, one_bits(self.E), e.via, e.saturate,
                        e.sr_bits, e.nan)

    def prescale(self, c):
        """C as it enters the accumulator (bit vectors, C's format): C, RN(beta*C) or RN(C*q)."""
        return steps.c_prescale(c, self.m.c_fmt, self.E, self.df.c_scale, self.alpha_bits, self.beta_bits,
                                self.q_bits)


def call(m, df: Dataflow, *, has_c: bool, alpha_bits: int | None = None, beta_bits: int | None = None,
         beta_zero: bool | None = None, sr_bits: int | None = None, q_bits: int | None = None,
         E: str | None = None, out: str | None = None) -> Call:
    """The :class:`Call` of a GEMM of model ``m`` under ``df``. alpha, beta (None: 1.0) and
    scale_result (None: none; the caller decides whether the dataflow applies it) are raw bits of
    the epilogue format ``E`` (None: :func:`epilogue_format`); ``beta_zero`` (None: from beta's
    bits) selects the beta = 0 rule; ``has_c``: whether C is given (no C: as beta = 0); ``out``
    (None: :func:`output_format`); ``q_bits``: RN(beta/alpha) (None: computed where used)."""
    E = E or epilogue_format(m, df)
    out = out or output_format(m, df)
    one = one_bits(E)
    alpha_bits = one if alpha_bits is None else int(alpha_bits)
    beta_bits = one if beta_bits is None else int(beta_bits)
    if beta_zero is None:
        beta_zero = beta_is_zero(beta_bits, E)
    use_c = "read" if (has_c and not beta_zero) else df.beta0
    c_in_acc = df.c_entry == "accumulator" and use_c == "read"
    if c_in_acc and q_bits is None and df.c_scale == "beta/alpha":
        q_bits = steps.beta_over_alpha(E, alpha_bits, beta_bits)
    if df.c_entry == "accumulator":           # C is in the chain: the epilogue is RN(alpha*acc)
        form, use_epi = "alpha_acc", "skip"
    else:
        form, use_epi = df.epilogue, use_c
    epi = Epilogue(E, m.c_fmt, out, form, use_epi, alpha_bits, beta_bits, df.out_via, df.saturate,
                   None if sr_bits is None else int(sr_bits), df.nan)
    return Call(m, df, E, out, use_c, c_in_acc, q_bits, epi)


# ---- the reading: what the composition needs of a kind of value ----------------------------------

class Reading(ABC):
    """The operations the composition runs on values of one kind (bit vectors of one element, or
    (M, N) arrays of them): an interface, each reading (:class:`Terms`, ``smtmodel.gemm.arrays``)
    defines every abstract operation. ``call`` is the :class:`Call`; formats are format names."""

    call: Call

    @abstractmethod
    def zero(self, fmt: str):
        """+0 of ``fmt``."""

    @abstractmethod
    def convert(self, x, src: str, dst: str):
        """x converted RNE from ``src`` to ``dst`` (x itself when they are one format)."""

    @abstractmethod
    def add(self, x, y):
        """x + y in the epilogue format, RNE (FADD)."""

    @abstractmethod
    def ffma(self, s, p, acc):
        """acc + s*p in the epilogue format with one rounding (FFMA)."""

    @abstractmethod
    def block_scale(self, idx):
        """The per-block scale RN(s_a*s_b) of the k-tile of chunk ``idx`` (fp32)."""

    @abstractmethod
    def chain(self, idx, start):
        """The model's chain over K's elements ``idx`` (a non-empty int array; -1: a zero element)
        from ``start`` (C's format; None: +0), in the model's output format."""

    @abstractmethod
    def prescale(self, c):
        """:meth:`Call.prescale` of C."""

    @abstractmethod
    def finish(self, acc, c, epi: Epilogue):
        """``epi`` of acc and C (already +0 where ``epi`` does not read it)."""

    def through_out(self, p):
        """A partial (in E) rounded to the output format and back (``combine=workspace``)."""
        E, out = self.call.E, self.call.out
        return self.convert(self.convert(p, E, out), out, E)

    # fast paths: None where the reading has none (the composition then runs the steps above)

    def fused_part(self, chunks, start):
        """A slice's partial sum of several chunks (:func:`part`) in fewer passes, or None."""

    def combine_finish(self, parts, c, epi: Epilogue):
        """:func:`combine` and ``epi`` in fewer passes, or None."""


class Terms(Reading):
    """The composition on one element's bit vectors (any backend): ``a``, ``b`` the K elements of
    row i of op(A) and column j of op(B); ``block_scale(t)``: the per-block scale term of k-tile
    t (``combine_op=ffma``)."""

    def __init__(self, call: Call, B, a=(), b=(), block_scale=None):
        self.call, self.B, self.a, self.b, self._block_scale = call, B, a, b, block_scale

    def zero(self, fmt):
        return steps.zero(self.B, fmt)

    def convert(self, x, src, dst):
        return steps.to_fmt(x, src, dst)

    def add(self, x, y):
        return steps.add(x, y, self.call.E)

    def ffma(self, s, p, acc):
        return steps.ffma(s, p, acc, self.call.E)

    def block_scale(self, idx):
        return self._block_scale(int(idx[idx >= 0][0]) // 128)

    def chain(self, idx, start):
        m = self.call.m
        wa, wb = m.operand_widths
        za, zb = self.B.const(0, wa), self.B.const(0, wb)
        aa = [self.a[k] if k >= 0 else za for k in idx]
        bb = [self.b[k] if k >= 0 else zb for k in idx]
        return m.build(aa, bb, self.zero(m.c_fmt) if start is None else start)

    def prescale(self, c):
        return self.call.prescale(c)

    def finish(self, acc, c, epi):
        return epi.term(acc, c)


# ---- the composition ---------------------------------------------------------------------------------

def _c(r: Reading, c):
    """C where the call reads it (+0 where C is not given), else None."""
    if r.call.use_c != "read":
        return None
    return r.zero(r.call.m.c_fmt) if c is None else c


def chain(r: Reading, idx, start):
    """The model's chain over ``idx`` from ``start`` (None: +0), in its output format; an empty
    chunk is its start."""
    m = r.call.m
    if len(idx) == 0:
        return r.zero(m.out_fmt) if start is None else r.convert(start, m.c_fmt, m.out_fmt)
    return r.chain(idx, start)


def part(r: Reading, chunks: list, start):
    """A slice's partial sum in E: its chunks' chains (the first from ``start``: C entering the
    accumulator, or None), added serially from +0 — or by FFMA with the per-block scale — when
    the chain restarts."""
    call = r.call
    m, E = call.m, call.E
    if not chunks:
        return r.zero(E) if start is None else r.convert(start, m.c_fmt, E)
    if len(chunks) == 1:
        return r.convert(chain(r, chunks[0], start), m.out_fmt, E)
    got = r.fused_part(chunks, start)
    if got is not None:
        return got
    acc = r.zero(E)
    for j, idx in enumerate(chunks):
        p = r.convert(chain(r, idx, start if j == 0 else None), m.out_fmt, E)
        acc = r.ffma(r.block_scale(idx), p, acc) if call.df.combine_op == "ffma" else r.add(acc, p)
    return acc


def parts(r: Reading, plan: list, c) -> list:
    """The slices' partial sums in E (``plan``: :func:`.plan.chains`); C (None: not given)
    starts slice 0's first chain where the call says so."""
    c0 = r.prescale(_c(r, c)) if r.call.c_in_acc else None
    return [part(r, chunks, c0 if s == 0 else None) for s, chunks in enumerate(plan)]


def combine(r: Reading, parts: list):
    """The slices' partial sums combined in E (docs/dataflow.md, "combine"): serially (from the
    first, or from +0), cuBLASLt's pairwise tree, or each rounded to the output format first
    (``workspace``). ``output`` is :func:`finish`'s."""
    df = r.call.df
    if len(parts) == 1:
        return parts[0]
    if df.combine == "workspace":
        parts = [r.through_out(p) for p in parts]
    if df.combine == "pairwise":
        S = len(parts)
        h = -(-S // 2)
        acc = parts[S - 1]
        for i in range(h):
            slot = r.add(parts[i], parts[i + h]) if i + h < S - 1 else parts[i]
            acc = r.add(acc, slot)
        return acc
    acc = r.zero(r.call.E) if df.combine == "serial0" else parts[0]
    for p in (parts if df.combine == "serial0" else parts[1:]):
        acc = r.add(acc, p)
    return acc


def epilogue(r: Reading, acc, c, epi: Epilogue | None = None):
    """``epi`` (default: the call's) of acc and C (None: not given)."""
    epi = epi or r.call.epilogue
    cc = _c(r, c) if epi.reads_c else None
    return r.finish(acc, r.zero(epi.c_fmt) if cc is None else cc, epi)


def finish(r: Reading, parts: list, c):
    """D from the slices' partial sums and C (None: not given): ``combine=output`` runs each
    partition through the epilogue into D (partition k > 0 reading D with beta = 1); otherwise
    the partials are combined and the epilogue runs once."""
    call = r.call
    if call.df.combine == "output" and len(parts) > 1:
        d = epilogue(r, parts[0], c)
        for p in parts[1:]:
            d = r.finish(p, d, call.partition)
        return d
    epi = call.epilogue
    if len(parts) > 1:
        got = r.combine_finish(parts, _c(r, c) if epi.reads_c else None, epi)
        if got is not None:
            return got
    return epilogue(r, combine(r, parts), c)


def gemm(r: Reading, plan: list, c):
    """D (one element, or all of them: the reading's values) under the call's dataflow."""
    return finish(r, parts(r, plan, c), c)
