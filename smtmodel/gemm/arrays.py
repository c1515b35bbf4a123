"""The batched GEMM's reading of :mod:`smtmodel.dataflow.compose`: every value an (M, N) array
of bits (:class:`Arrays`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..dataflow import compose, steps
from ..dataflow.plan import is_range
from ..formats import get_format
from ..model import Model, ModelError
from .readings import Readings

def _fn1(f):
    """An elementwise step of one input (the third) in Elementwise's build signature."""
    def build(a, b, c, sa=None, sb=None):
        return f(c)
    return build


def _fn3(f):
    def build(a, b, c, sa=None, sb=None):
        return f(a[0], b[0], c)
    return build


class Arrays(compose.Reading):
    """The composition's reading on (M, N) arrays of bits (:mod:`smtmodel.dataflow.compose`):
    each step the bit-vector composition of :mod:`~smtmodel.dataflow.steps` run elementwise
    (:class:`.elementwise.Elementwise`: NumPy or compiled), the chains by the GEMM's dot-product readings,
    and two fast paths that trace the same steps into fewer passes (:meth:`fused_part`,
    :meth:`combine_finish`)."""

    def __init__(self, call: compose.Call, a, b, blocks, readings: Readings, jobs):
        """``a`` (M, K), ``b`` (K, N): the operands' bits, or batches (B, M, K) and (B, K, N) of
        them (every value then (B, M, N)); ``blocks``: the per-block scales (``combine_op=ffma``;
        None: none; one GEMM only); ``readings``: :func:`.readings.readings`."""
        self.call, self.m, self.df, self.E = call, call.m, call.df, call.E
        self.a, self.b, self.blocks = a, b, blocks
        self.ew, self.dots, self.fused, self.jobs = readings.ew, readings.dots, readings.fused, jobs
        self.shape = a.shape[:-1] + b.shape[-1:]
        self.wE = get_format(call.E).width

    def _each(self, f, a, b, c, part=None):
        """f(a, b, c, part, jobs) -> (M, N) on one GEMM or on a batch: the compiled readings take
        the batch in one call (:func:`smtmodel.native.gemm.dots`), the others a matrix at a time."""
        if a.ndim == 2 or self.fused:
            return f(a, b, c, part, self.jobs)
        out = np.empty(self.shape, np.uint64)
        for i in range(a.shape[0]):
            out[i] = f(a[i], b[i], None if c is None else c[i], None if part is None else part[i], self.jobs)
        return out

    def zero(self, fmt):
        return np.zeros(self.shape, np.uint64)  # +0 is the all-zero pattern in every format here

    def convert(self, x, src, dst):
        if get_format(src).name == get_format(dst).name:
            return x
        w = get_format(src).width
        return self.ew.run(("df-to", src, dst), _fn1(lambda v: steps.to_fmt(v, src, dst)), (w,) * 3, x, x, x)

    def add(self, x, y):
        E = self.E
        return self.ew.run(("df-add", E), _fn3(lambda u, v, _: steps.add(u, v, E)), (self.wE,) * 3, x, y, y)

    def ffma(self, s, p, acc):
        E = self.E
        return self.ew.run(("df-ffma", E), _fn3(lambda u, v, w: steps.ffma(u, v, w, E)), (self.wE,) * 3, s, p, acc)

    def fp32_mul(self, x, y):
        """RN(x * y) in fp32 of two uint64 arrays of fp32 bits (the block scales' products)."""
        from ..fp.exact import fp_mul
        return self.ew.run(("df-mul", "fp32"), _fn3(lambda u, v, _: fp_mul(u, v, "fp32")), (32,) * 3, x, y, y)

    def block_scale(self, idx):
        return self.blocks(idx, self.fp32_mul)

    def prescale(self, c):
        call, m = self.call, self.m
        if self.df.c_scale == "none":
            return c
        wc = get_format(m.c_fmt).width
        return self.ew.run(("df-cscale", m.c_fmt, call.E, self.df.c_scale, call.alpha_bits, call.beta_bits, call.q_bits),
                           _fn1(call.prescale), (wc,) * 3, c, c, c)

    def through_out(self, p):
        E, out = self.E, self.call.out
        return self.ew.run(("df-ws", E, out), _fn1(lambda x: steps.to_fmt(steps.to_fmt(x, E, out), out, E)),
                           (self.wE,) * 3, p, p, p)

    def finish(self, acc, c, epi):
        return self.ew.run(_epi_key(epi), _fn3(lambda x, _, z: epi.term(x, z)), (self.wE, self.wE, get_format(epi.c_fmt).width),
                           acc, acc, c)

    def chain(self, idx, c) -> np.ndarray:
        """The model's chain over the K elements idx (-1: zero) from c (None: +0), in the
        model's output format."""
        m, a, b, dots = self.m, self.a, self.b, self.dots
        r = _plain_range(m, idx)
        if r is not None:
            return self._each(lambda a, b, c, _, j: dots(m, a, b, c, r[0], r[1], j), a, b, c)
        head = _padded_range(idx)
        if head is not None:               # K[k0:k1] then zeros (a k-tile padded): two slices copied
            k0, k1 = head
            ag = np.zeros(a.shape[:-1] + (len(idx),), np.uint64)
            ag[..., :k1 - k0] = a[..., k0:k1]
            bg = np.zeros(b.shape[:-2] + (len(idx), b.shape[-1]), np.uint64)
            bg[..., :k1 - k0, :] = b[..., k0:k1, :]
        else:
            pad = idx < 0
            k = np.where(pad, 0, idx)
            ag = np.ascontiguousarray(a[..., k])
            bg = np.ascontiguousarray(b[..., k, :])
            if pad.any():
                ag[..., pad] = 0
                bg[..., pad, :] = 0
        return self._each(lambda a, b, c, _, j: dots(m, a, b, c, 0, len(idx), j), ag, bg, c)

    def fused_part(self, chunks, c0):
        """A slice's partial sum (:func:`smtmodel.dataflow.compose.part`) in the GEMM reading:
        per run of equal-length chunks one compiled pass that chains each chunk and adds it (to
        E, then ``add`` or ``ffma`` with the block scale: the same steps, traced into the kernel)
        to the partial sum as it goes, instead of an (M, N) array and an elementwise pass per
        chunk. None where the GEMM reading does not apply (compiled chains only)."""
        if not self.fused:
            return None
        from .. import native
        from ..native import gemm as ngemm
        m, E, ffma, a, b = self.m, self.E, self.df.combine_op == "ffma", self.a, self.b
        if any(len(idx) == 0 for idx in chunks):
            return None
        runs = []              # [zero blocks, L, chunks]: chunks of equal length and zero tail
        for j, idx in enumerate(chunks):
            nz, L, real = _zero_blocks(m, idx)
            if nz < 0 and (ffma or (j == 0 and c0 is not None)):
                nz, L, real = 0, 0, idx    # a chunk of zeros from C, or scaled: chained as it is
            if runs and runs[-1][:2] == [nz, L] and len(runs[-1][2][0]) == len(real):
                runs[-1][2].append(real)
            else:
                runs.append([nz, L, [real]])
        (wa, wb), (_, wc, _) = m.operand_widths, m.widths

        def combine(nz: int, L: int):
            def build(part, acc, s):
                if nz:                     # the chunk's zero tail: whole blocks of zero products
                    za, zb = acc.B.const(0, wa), acc.B.const(0, wb)
                    for _ in range(nz):
                        acc = m.chain_step([za] * L, [zb] * L, acc, m.out_fmt)
                p = steps.to_fmt(acc, m.out_fmt, E)
                return steps.ffma(s, p, part, E) if ffma else steps.add(part, p, E)
            return (("df-slice", m.out_fmt, E, self.df.combine_op, nz, L), build, (self.wE, 32 if ffma else 0))
        try:
            for nz, L, run in runs:
                if nz >= 0:
                    ngemm.gemm_kernel(m, len(run[0]), combine(nz, L))
        except (ngemm.NotSplit, native.TooWide):
            return None
        except native.NativeError as e:
            raise ModelError(str(e)) from None
        part = None
        for j, (nz, L, run) in enumerate(runs):
            if nz < 0:                     # chunks of zeros from +0: a constant chain, added
                n, E_ = len(run[0]), E

                def zbuild(x, y, part, sa=None, sb=None, n=n):
                    B = part.B
                    acc = m.build([B.const(0, wa)] * n, [B.const(0, wb)] * n, B.const(0, wc))
                    return steps.add(part, steps.to_fmt(acc, m.out_fmt, E_), E_)
                if part is None:
                    part = self.zero(E)
                for _ in run:
                    part = self.ew.run(("df-zero-chunk", m, m.id, n, E), zbuild, (self.wE,) * 3, part, part, part)
                continue
            idx = np.concatenate(run)
            r = is_range(idx)
            if r is not None:
                aa, bb, k0, k1 = a, b, r[0], r[1]
            else:
                aa, bb, k0, k1 = _gather(a, idx, -1), _gather(b, idx, -2), 0, len(idx)
            scales = None
            if ffma:
                sc = np.ascontiguousarray(self.blocks(run, self.fp32_mul, compact=True))
                scales = (sc, sc.shape[1] * sc.shape[2], sc.shape[2] if sc.shape[1] > 1 else 0)
            cmb, nrun = combine(nz, L), len(run)
            part = self._each(lambda x, y, c, p, jobs: ngemm.dots(m, x, y, c, k0, k1, jobs, chunks=nrun, combine=cmb,
                                                                  part=p, scales=scales),
                              aa, bb, c0 if j == 0 else None, part)
        return part

    def combine_finish(self, parts, c, epi):
        """:func:`~smtmodel.dataflow.compose.combine` and the epilogue as one elementwise step:
        the same composition read on the bit vectors of one element (:class:`~smtmodel.dataflow.
        compose.Terms`) and run once over the partial sums instead of one pass per addition and
        one more for the epilogue, where the partials and the C it reads are at most three
        arrays; None otherwise."""
        S, reads_c, call, wE = len(parts), epi.reads_c, self.call, self.wE
        if S + reads_c > 3:
            return None
        wc = get_format(epi.c_fmt).width

        def f(x, y, z):
            r = compose.Terms(call, x.B)
            acc = compose.combine(r, [x, y, z][:S])
            return epi.term(acc, z if reads_c else x.B.const(0, wc))
        arrays = parts + ([c] if reads_c else [])
        arrays += [arrays[-1]] * (3 - len(arrays))
        return self.ew.run(("df-combine", self.df.combine, S) + epi.key, _fn3(f),
                           (wE, wE, wc if reads_c else wE), *arrays)


@lru_cache(maxsize=1024)
def _epi_key(epi) -> tuple:
    """``epi.key``, remembered (it is read on every GEMM)."""
    return epi.key


def _zero_blocks(m: Model, idx: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(z, L, head) for a chunk of K's elements ``idx`` (-1: a zero, the padding of a slice's last
    k-tiles, always at the end), L = ``m.block(len(idx))``: z >= 1 when the chunk is the chain
    over its first elements ``head``, which fill whole blocks, followed by z blocks of zero
    products (the chunk's chain, :meth:`Model.build`, cut at a block boundary: the same blocks);
    z = -1 for a chunk of zeros only; z = 0 for any other chunk (head = idx), and where the chain
    ends with a step of its own (``chain_end``) that would come between the two parts."""
    n = len(idx)
    L = m.block(n)
    real = int(np.count_nonzero(idx >= 0))
    if real == n or np.any(idx[:real] < 0):
        return 0, 0, idx
    if real == 0:
        return -1, L, idx
    if real % L or n % L or m.block(real) != L or m.c_entry == "end" or m.flush_outputs:
        return 0, 0, idx
    return (n - real) // L, L, idx[:real]


def _gather(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """x's columns (axis -1) or rows (axis -2) idx, -1 giving zeros (a batch: of each matrix):
    contiguous runs copied as slices (a k-tile is a run; a fancy-indexed gather of columns is
    ~20x slower)."""
    cut = np.flatnonzero((np.diff(idx) != 1) | (idx[1:] < 0) | (idx[:-1] < 0)) + 1
    parts = []
    for run in np.split(idx, cut):
        if run[0] < 0:
            shape = list(x.shape)
            shape[axis] = len(run)
            parts.append(np.zeros(shape, np.uint64))
        else:
            sl = slice(run[0], run[-1] + 1)
            parts.append(x[..., sl] if axis == -1 else x[..., sl, :])
    return np.ascontiguousarray(np.concatenate(parts, axis=axis), dtype=np.uint64)


_REMEMBERED: dict = {}


def _remembered(what: tuple, idx: np.ndarray, f):
    """f(idx), remembered under ``what`` for the read-only index arrays a plan shares between
    calls (:func:`smtmodel.dataflow.plan.chains`); computed afresh for any other array."""
    if idx.flags.writeable:
        return f(idx)
    key = what + (id(idx),)
    got = _REMEMBERED.get(key)
    if got is None or got[0] is not idx:
        if len(_REMEMBERED) > 4096:
            _REMEMBERED.clear()
        got = _REMEMBERED[key] = (idx, f(idx))
    return got[1]


def _plain_range(m: Model, idx: np.ndarray):
    """(k0, k1) where the chain over idx equals the model's chain over K[k0:k1] read in place:
    a plain range, possibly with trailing zeros the model pads itself."""
    return _remembered(("range", m.id), idx, lambda i: _range_of(m, i))


def _padded_range(idx: np.ndarray):
    """(k0, k1) where idx is K[k0:k1] followed by zeros (-1) only, else None."""
    return _remembered(("head",), idx, _head)


def _head(idx: np.ndarray):
    n = int(np.count_nonzero(idx >= 0))
    if n == 0 or not (idx[n:] < 0).all():
        return None
    return is_range(idx[:n])


def _range_of(m: Model, idx: np.ndarray):
    r = _head(idx)
    if r is None:
        return None
    n = r[1] - r[0]
    if n < len(idx) and (m.padded_k(n) != len(idx) or m.block(n) != m.block(len(idx))):
        return None
    return r
