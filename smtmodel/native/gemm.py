"""The GEMM reading of a model's chain: the traced blocks split by the operands they read.

A GEMM evaluates M·N dot products that share their operands: row i of A meets every column of
B, column j of B every row of A. Each block of the model's chain (``chain_start``, one
``chain_step`` per block of Algorithm 5, ``chain_end``; :meth:`smtmodel.model.Model.build` is
exactly their composition) is traced once (:mod:`smtmodel.bv.trace_backend`), and every node of
its DAG is classed by the inputs it reads:

* **A-only** nodes (decode of a_k: sign, exponent, significand, special flags, and whatever the
  model derives from a_k alone) are computed once per element of A, O(MK);
* **B-only** nodes once per element of B, O(KN);
* the rest (the products, the alignment to the block's maximum exponent, the sum, the
  rounding: everything that reads both, or the accumulator) in the O(MNK) loop.

The A-only nodes that the rest reads (the A *frontier*) are stored per row of A in a record,
block after block (``prep_a``, one row per case); the B frontier per vector of
:func:`~.kernel.vector_lanes` columns of B (``prep_b``). The main function (``gemm``) runs, for each row of
a rectangle of rows and column vectors, the whole chain of one vector of columns in registers:
the first block from C (or +0), the next blocks in a loop, the zero-padded last block, the end;
A's frontier values are read as scalars and broadcast, B's as vectors. Rectangles are sized so
that their columns' B records stay in the core's L2 cache, and run on all cores.

Nothing is written twice: the three functions are emitted from the same traced nodes as every
other reading (:mod:`.codegen` emits each node the same way), only distributed over three
loops. The NumPy reading of the GEMM (:func:`smtmodel.gemm.gemm_bits` with ``backend="numpy"``)
and the per-row compiled reading are tested equal to this one bit for bit
(tests/test_gemm_reading.py).
"""

from __future__ import annotations

import ctypes
import threading
import time
from concurrent.futures import wait

import numpy as np

from ..bv.trace_backend import TraceBackend
from .kernel import VECTOR_WIDTH, NativeError, TooWide, _cached, default_jobs, pool, vector_lanes

WIDE_LANES = 8
"""Columns per vector where a block computes on integers wider than 64 bits (up to
:data:`~.kernel.VECTOR_WIDTH`): LLVM compiles CDNA1's fp16 E-FDPA blocks (90-bit sums) in 2.8 s
on 8 lanes, 21.6 s on 32."""

TILE_BYTES = 384 << 10
"""The B records of one rectangle of columns at most this large (they are read once per row of
the rectangle: kept in a 1 MiB L2 with room for the rest)."""

_A, _B, _X, _S = 1, 2, 4, 8


class NotSplit(NativeError):
    """The traced chain does not split into A-only, B-only and mixed parts that the GEMM reading
    runs (a node wider than :data:`~.kernel.VECTOR_WIDTH` bits, or a block whose result reads
    only one operand); the caller falls back to the per-row reading."""


def chain_pieces(m, k: int) -> dict:
    """The model's chain for K = ``k`` as the pieces a GEMM runs, as :meth:`Model.build` composes
    them: ``L`` (block length), ``nb`` (blocks), ``tail`` (real elements of the last block),
    and builds ``first(a, b, c)`` (the first block from ``chain_start(c)``), ``next(a, b, d)``
    (a block after the first), ``last(a, b, d)`` (the last block, zero-padded to L as
    :meth:`Model.padded_k` says; None when it is a whole block) and ``end(d, c)``
    (``chain_end``; None when it is the identity)."""
    (wa, wb), (_, wc, wo) = m.operand_widths, m.widths
    L = m.block(k)
    kp = m.padded_k(k)
    nb = kp // L
    tail = k - (nb - 1) * L

    def first(a, b, c):
        return m.chain_step(a, b, m.chain_start(c), m.c_fmt)

    def step(a, b, d):
        return m.chain_step(a, b, d, m.out_fmt)

    def last(a, b, d):
        za, zb = a[0].B.const(0, wa), a[0].B.const(0, wb)
        return m.chain_step(a + [za] * (L - tail), b + [zb] * (L - tail), d, m.out_fmt)

    def end(d, c):
        return m.chain_end(d, c)

    return {"L": L, "nb": nb, "tail": tail, "widths": (wa, wb, wc, wo), "first": first,
            "next": step if nb > 1 else None, "last": last if nb > 1 and tail < L else None,
            "end": end if m.c_entry == "end" or m.flush_outputs else None}


def _bytes(w: int) -> int:
    """Bytes a frontier value of width ``w`` (0: a Boolean, kept as 8 bits) is stored in."""
    w = max(w, 8)
    for s in (1, 2, 4, 8, 16):
        if w <= 8 * s:
            return s
    raise NotSplit(f"a {w}-bit frontier value")          # pragma: no cover (VECTOR_WIDTH checked first)


class _Piece:
    """One traced block, split: ``mixed`` (in order, constants included), the frontiers
    ``front[_A]``/``front[_B]`` as (node, offset, bytes), the record sizes and the side DAGs."""

    def __init__(self, name: str, build, n: int, widths: tuple, lanes: int):
        wa, wb, wc, wo = widths
        T = TraceBackend()
        if name == "end":
            acc = T.input(("acc", 0), wo)
            d = build(acc, T.input(("c", 0), wc))
        elif name == "combine":                 # widths: (wE, ws) of the partial sum and the scale
            wE, ws = n
            d = build(T.input(("part", 0), wE), T.input(("acc", 0), wo), T.input(("s", 0), ws) if ws else None)
        else:
            a = [T.input(("a", j), wa) for j in range(n)]
            b = [T.input(("b", j), wb) for j in range(n)]
            d = build(a, b, T.input(("acc", 0), wc if name == "first" else wo))
        self.name, self.n, self.T, self.root = name, n, T, d.v
        nodes = T.nodes
        live = T.live([d.v])
        wide = max(live, key=lambda i: nodes[i].w)
        if nodes[wide].w > VECTOR_WIDTH:
            raise NotSplit(f"the GEMM reading keeps values within {VECTOR_WIDTH} bits; {name} block computes "
                           f"{nodes[wide].op!r} on {nodes[wide].w} bits")
        dep = {}
        for i in live:
            nd = nodes[i]
            if nd.op == "input":
                dep[i] = {"a": _A, "b": _B, "s": _S}.get(nd.p[0][0], _X)
            else:
                x = 0
                for j in nd.args:
                    x |= dep[j]
                dep[i] = x
        if dep[d.v] in (_A, _B):
            raise NotSplit(f"{name} block reads only one operand")
        self.width = nodes[wide].w
        self.mixed = [i for i in live if dep[i] not in (_A, _B, _S)]
        front = {_A: set(), _B: set(), _S: set()}
        for i in self.mixed:
            for j in nodes[i].args:
                if dep[j] in front:
                    front[dep[j]].add(j)
        self._front = front
        self.side = {s: T.live(sorted(front[s])) if front[s] else [] for s in front}
        self.stats = {"nodes": len(live), "a": sum(1 for i in live if dep[i] == _A),
                      "b": sum(1 for i in live if dep[i] == _B), "mixed": len(self.mixed),
                      "front_a": len(front[_A]), "front_b": len(front[_B])}
        self.layout(lanes)

    def layout(self, lanes: int) -> None:
        """The records for vectors of ``lanes`` columns: each frontier value at an offset, the
        widest first; a row of A holds one value of each, a column vector of B ``lanes``."""
        nodes = self.T.nodes
        self.front, self.size = {}, {}
        for s, ln in ((_A, 1), (_B, lanes)):
            off, rec = 0, []
            for i in sorted(self._front[s], key=lambda i: (-_bytes(nodes[i].w), i)):
                nb = _bytes(nodes[i].w)
                rec.append((i, off, nb))
                off += nb * ln
            self.front[s] = rec
            self.size[s] = -(-off // 8) * 8


class GemmKernel:
    """The compiled GEMM reading of a model's chain for one block structure (L, the last block's
    length, whether there are blocks after the first, the end); K itself (the number of next
    blocks) is a run-time argument. ``size(side, nnext)``: the record bytes of a row of A
    (``side`` = 1) or a column vector of B (2)."""

    PREP = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
    MAIN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                            ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
    FUSED = ctypes.CFUNCTYPE(None, *(MAIN._argtypes_ + (ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                                         ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)))

    def __init__(self, m, k: int, lanes: int | None = None, combine=None):
        try:
            from . import codegen
            from .jit import compile_functions
        except ImportError as e:
            raise NativeError(f"native backend unavailable (llvmlite: {e}); use backend='numpy'") from None
        t0 = time.perf_counter()
        ch = chain_pieces(m, k)
        self.L, self.tail, self.id = ch["L"], ch["tail"], m.id
        widths = ch["widths"]
        self.wc, self.wo = widths[2], widths[3]
        G = vector_lanes()
        self.pieces = {}
        for name, n in (("first", self.L), ("next", self.L), ("last", self.tail), ("end", 1)):
            if ch[name] is not None:
                self.pieces[name] = _Piece(name, ch[name], n, widths, G)
        first, nxt = self.pieces["first"], self.pieces.get("next")
        if nxt is not None and first.root == nxt.root and first.T.nodes == nxt.T.nodes:
            del self.pieces["first"]        # chain_start(c) = c in the output format: the first block is a next block
        self.kstart = self.L if "first" in self.pieces else 0
        self.wE = self.ws = 0
        if combine is not None:
            _, build, (self.wE, self.ws) = combine
            self.pieces["combine"] = _Piece("combine", build, (self.wE, self.ws), widths, G)
        self.width = max(p.width for p in self.pieces.values())
        self.lanes = lanes or (G if self.width <= 64 else WIDE_LANES)
        if self.lanes != G:
            for p in self.pieces.values():
                p.layout(self.lanes)
        self.trace_seconds = time.perf_counter() - t0
        try:
            for p in self.pieces.values():
                codegen.check_supported(p.T.nodes, p.T.live([p.root]))
            ir_text = str(_module(self, codegen))
        except codegen.UnsupportedPrimitive as e:
            raise NativeError(f"{m.id}: the native reading cannot compile primitive {e.args[0]!r}; "
                              f"use backend='numpy'") from None
        try:
            self.compiled = compile_functions(ir_text, {"prep_a": self.PREP, "prep_b": self.PREP,
                                                        "gemm": self.FUSED if combine else self.MAIN})
        except (ImportError, OSError, RuntimeError) as e:
            raise NativeError(f"native backend unavailable (llvmlite: {e}); use backend='numpy'") from None
        self.fn = self.compiled.fn
        self.compile_seconds = self.compiled.seconds

    def size(self, side: int, nnext: int) -> int:
        p = self.pieces
        s = p["first"].size[side] if "first" in p else 0
        if "next" in p:
            s += nnext * p["next"].size[side]
        if "last" in p:
            s += p["last"].size[side]
        return s

    def stats(self) -> dict:
        return {n: p.stats for n, p in self.pieces.items()}


_CACHE: dict = {}
_LOCK = threading.Lock()


def gemm_kernel(m, k: int, combine=None) -> GemmKernel:
    """The GEMM reading of ``m`` for chains of ``k`` elements (cached in the process per model and
    block structure; a :class:`NotSplit` or :class:`TooWide` answer is remembered too).
    ``combine``: (key, build, (wE, ws)) for restarted chains summed in the kernel,
    ``build(part, acc, s)`` the new partial sum from the partial sum (``wE`` bits), a chain's
    result and, where ``ws`` > 0, a per-chunk scale of ``ws`` bits (None otherwise); ``key``
    names everything ``build`` depends on."""
    ch_L = m.block(k)
    nb = m.padded_k(k) // ch_L
    tail = k - (nb - 1) * ch_L
    key = (m, m.id, ch_L, tail if nb > 1 and tail < ch_L else 0, nb > 1, combine and combine[0])
    return _cached(key, lambda: GemmKernel(m, k, combine=combine), _CACHE, _LOCK, (NotSplit, TooWide))


# ---- code generation ---------------------------------------------------------------------------

def _module(gk: GemmKernel, cg):
    from llvmlite import ir
    mod = ir.Module(name=f"gemm_{gk.id}")
    for side, name, lanes in ((_A, "prep_a", 1), (_B, "prep_b", gk.lanes)):
        _emit_prep(mod, name, gk, side, lanes, cg)
    _emit_main(mod, gk, cg)
    return mod


def _i8p(ir):
    return ir.IntType(8).as_pointer()


def _gep(bld, ptr, off):
    from llvmlite import ir
    return bld.gep(ptr, [off if isinstance(off, ir.Value) else ir.Constant(ir.IntType(64), off)])


def _loop(bld, fn, name, start, stop, body):
    """``for i in range(start, stop): body(i)`` (stop > start checked by the caller or here);
    ``body`` may leave the builder in a later block."""
    from llvmlite import ir
    I64 = ir.IntType(64)
    pre = bld.block
    head = fn.append_basic_block(name)
    after = fn.append_basic_block(name + ".end")
    bld.cbranch(bld.icmp_signed("<", start, stop), head, after)
    bld.position_at_end(head)
    i = bld.phi(I64, name=name + ".i")
    i.add_incoming(start, pre)
    body(i)
    nxt = bld.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, bld.block)
    bld.cbranch(bld.icmp_signed("<", nxt, stop), head, after)
    bld.position_at_end(after)


def _emit_prep(mod, name, gk: GemmKernel, side: int, lanes: int, cg):
    """``name(u0, u1, nnext, x, ustride, kstride, rec, rec_sz)``: for each unit u in [u0, u1) (a row
    of A, lanes = 1; a vector of ``lanes`` columns of B), the side's frontier of every block
    from the elements ``x[u * ustride + k * kstride]`` (uint64; a vector of lanes consecutive
    elements), stored at ``rec + u * rec_sz``."""
    from llvmlite import ir
    I64 = ir.IntType(64)
    fnty = ir.FunctionType(ir.VoidType(), [I64, I64, I64, I64.as_pointer(), I64, I64, _i8p(ir), I64])
    fn = ir.Function(mod, fnty, name=name)
    u0, u1, nnext, x, ustride, kstride, rec, rec_sz = fn.args
    for arg in (x, rec):
        arg.add_attribute("noalias")
    bld = ir.IRBuilder(fn.append_basic_block("entry"))
    opnd = "a" if side == _A else "b"
    P = gk.pieces
    L = gk.L

    def unit(u):
        xu = _gep(bld, x, bld.mul(u, ustride))
        ru = _gep(bld, rec, bld.mul(u, rec_sz))
        off_n = 0
        if "first" in P:
            _side_block(bld, P["first"], side, opnd, xu, kstride, ru, lanes, cg)
            off_n = P["first"].size[side]
        if "next" in P:
            szn = P["next"].size[side]

            def blk(kb):
                k0 = bld.add(ir.Constant(I64, gk.kstart), bld.mul(kb, ir.Constant(I64, L)))
                _side_block(bld, P["next"], side, opnd, _gep(bld, xu, bld.mul(k0, kstride)), kstride,
                            _gep(bld, ru, bld.add(ir.Constant(I64, off_n), bld.mul(kb, ir.Constant(I64, szn)))),
                            lanes, cg)
            _loop(bld, fn, "kb", ir.Constant(I64, 0), nnext, blk)
            if "last" in P:
                k0 = bld.add(ir.Constant(I64, gk.kstart), bld.mul(nnext, ir.Constant(I64, L)))
                _side_block(bld, P["last"], side, opnd, _gep(bld, xu, bld.mul(k0, kstride)), kstride,
                            _gep(bld, ru, bld.add(ir.Constant(I64, off_n), bld.mul(nnext, ir.Constant(I64, szn)))),
                            lanes, cg)
    _loop(bld, fn, "u", u0, u1, unit)
    bld.ret_void()


def _side_block(bld, p: _Piece, side: int, opnd: str, xb, kstride, rb, lanes: int, cg):
    """One block's side nodes from elements ``xb[j * kstride]``, frontier stored at ``rb``."""
    from llvmlite import ir
    if not p.side[side]:
        return
    nodes = p.T.nodes
    val = {}
    for i in p.side[side]:
        nd = nodes[i]
        if nd.op == "input":
            assert nd.p[0][0] == opnd
            ptr = _gep(bld, xb, bld.mul(ir.Constant(ir.IntType(64), nd.p[0][1]), kstride))
            if lanes > 1:
                v = bld.load(bld.bitcast(ptr, cg.ty(64, lanes).as_pointer()), align=8)
            else:
                v = bld.load(ptr)
            val[i] = bld.trunc(v, cg.ty(nd.w, lanes)) if nd.w < 64 else v
        else:
            val[i] = cg.emit_node(bld, nodes, i, val, lanes)
    for i, off, nb in p.front[side]:
        st = cg.ty(8 * nb, lanes)
        v = val[i]
        w = max(nodes[i].w, cg.BOOL_BITS if nodes[i].w == 0 else 1)
        if w < 8 * nb:
            v = bld.zext(v, st)
        bld.store(v, bld.bitcast(_gep(bld, rb, off), st.as_pointer()), align=1)


def _emit_main(mod, gk: GemmKernel, cg):
    """``gemm(r0, r1, v0, v1, nnext, pa, a_sz, pb, b_sz, c, c_ld, out, out_ld)``: for rows i in
    [r0, r1) and column vectors v in [v0, v1), the chain of D[i, v*G:(v+1)*G] from C (uint64,
    ``c[i * c_ld + v * G]``; c_ld = 0: one shared row) into ``out[i * out_ld + v * G]``.

    With a combine (restarted chains summed as they go), five more arguments ``nchunks, a_csz,
    b_csz, part, sc`` and two strides ``part_ld, sc_row, sc_col``: per (i, v), ``part`` starts
    from ``part[i * part_ld + v * G]``; chunk q (records at q * a_csz, q * b_csz) is a chain from
    C (q = 0) or +0 (q > 0), then part = combine(part, chain, scale) with the scale
    ``sc[i * sc_row + (v * G / 128) * sc_col + q]``; part is stored. Each combine is emitted
    among the nodes of the next chain's first block (see ``pending``), the last one at the end."""
    from llvmlite import ir
    I64 = ir.IntType(64)
    G = gk.lanes
    P64 = I64.as_pointer()
    P = gk.pieces
    fused = "combine" in P
    args = [I64, I64, I64, I64, I64, _i8p(ir), I64, _i8p(ir), I64, P64, I64, P64, I64]
    if fused:
        args += [I64, I64, I64, P64, I64, P64, I64, I64]
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), args), name="gemm")
    r0, r1, v0, v1, nnext, pa, a_sz, pb, b_sz, c, c_ld, out, out_ld = fn.args[:13]
    for arg in (pa, pb, c, out):
        arg.add_attribute("noalias")
    if fused:
        nchunks, a_csz, b_csz, part, part_ld, sc, sc_row, sc_col = fn.args[13:]
    bld = ir.IRBuilder(fn.append_basic_block("entry"))
    vt = cg.ty(64, G)

    def const(v):
        return ir.Constant(I64, v)

    def load_vec(row, col0, w):
        v = bld.load(bld.bitcast(_gep(bld, row, col0), vt.as_pointer()), align=8)
        return bld.trunc(v, cg.ty(w, G)) if w < 64 else v

    def chain(arow, brow, c0, defer=None):
        """The model's chain over one chunk's records from c0: first, next..., last, end.
        ``defer``: the previous chunk's combine (:func:`pending`), emitted among the nodes of
        the chain's first block (the first next block, peeled, where the first is one)."""
        acc, off_a, off_b, k_start = c0, 0, 0, 0
        beside, target = defer() if defer else (None, None)
        if "first" in P:
            acc = _mixed_block(bld, P["first"], arow, brow, {"acc": c0}, G, cg, beside)
            off_a, off_b = P["first"].size[_A], P["first"].size[_B]
        elif beside:                       # the first block deleted: nnext >= 1 (GemmKernel)
            acc = _mixed_block(bld, P["next"], arow, brow, {"acc": c0}, G, cg, beside)
            k_start = 1
        if beside:
            store_part(beside.result(), target)
        if "next" in P:
            p = P["next"]
            pre = bld.block
            head = fn.append_basic_block("kb")
            after = fn.append_basic_block("kb.end")
            bld.cbranch(bld.icmp_signed(">", nnext, const(k_start)), head, after)
            bld.position_at_end(head)
            kb = bld.phi(I64, name="kb.i")
            kb.add_incoming(const(k_start), pre)
            accp = bld.phi(acc.type, name="acc")
            accp.add_incoming(acc, pre)
            ra = _gep(bld, arow, bld.add(const(off_a), bld.mul(kb, const(p.size[_A]))))
            rb = _gep(bld, brow, bld.add(const(off_b), bld.mul(kb, const(p.size[_B]))))
            acc1 = _mixed_block(bld, p, ra, rb, {"acc": accp}, G, cg)
            nxt = bld.add(kb, const(1))
            body_end = bld.block
            kb.add_incoming(nxt, body_end)
            accp.add_incoming(acc1, body_end)
            bld.cbranch(bld.icmp_signed("<", nxt, nnext), head, after)
            bld.position_at_end(after)
            acc2 = bld.phi(acc.type, name="acc.next")
            acc2.add_incoming(acc, pre)
            acc2.add_incoming(acc1, body_end)
            acc = acc2
            if "last" in P:
                ra = _gep(bld, arow, bld.add(const(off_a), bld.mul(nnext, const(p.size[_A]))))
                rb = _gep(bld, brow, bld.add(const(off_b), bld.mul(nnext, const(p.size[_B]))))
                acc = _mixed_block(bld, P["last"], ra, rb, {"acc": acc}, G, cg)
        if "end" in P:
            acc = _mixed_block(bld, P["end"], None, None, {"acc": acc, "c": c0}, G, cg)
        return acc

    if fused:
        # A chunk's combine (part = combine(part, chain, scale)) is one dependent chain of
        # operations; it waits here (its chain's result, where part lies, the scale) and runs
        # among the next chunk's first block -- the next vector's, the next row's; the last one
        # after all rows. The first waiting combine is a dummy one into ``scratch``.
        pc = P["combine"]
        at = cg.ty(gk.wo, G)
        pend_acc, pend_ptr = bld.alloca(at), bld.alloca(vt.as_pointer())
        scratch = bld.alloca(vt)
        bld.store(ir.Constant(vt, None), scratch)
        bld.store(ir.Constant(at, None), pend_acc)
        bld.store(scratch, pend_ptr)
        if gk.ws:
            st = ir.IntType(gk.ws)
            pend_s = bld.alloca(st)
            bld.store(ir.Constant(st, 0), pend_s)

        def store_part(p1, target):
            bld.store(bld.zext(p1, vt) if gk.wE < 64 else p1, target, align=8)

        def pending():
            target = bld.load(pend_ptr)
            pp = bld.load(target, align=8)
            inputs = {"part": bld.trunc(pp, cg.ty(gk.wE, G)) if gk.wE < 64 else pp, "acc": bld.load(pend_acc)}
            pre = _scalar_side(bld, pc, bld.load(pend_s), G, cg) if gk.ws else {}
            return _BlockEmitter(bld, pc, None, None, inputs, G, cg, pre), target

    def row(i):
        arow = _gep(bld, pa, bld.mul(i, a_sz))
        crow = _gep(bld, c, bld.mul(i, c_ld))
        orow = _gep(bld, out, bld.mul(i, out_ld))

        def col(v):
            brow = _gep(bld, pb, bld.mul(v, b_sz))
            col0 = bld.mul(v, const(G))
            cv = load_vec(crow, col0, gk.wc)
            if not fused:
                res, wr = chain(arow, brow, cv), gk.wo
            else:
                ocol = bld.bitcast(_gep(bld, orow, col0), vt.as_pointer())
                # the partial sum waits in the output row while a chunk's chain runs (fewer
                # values live across the chain's blocks than a loop-carried register)
                part0 = load_vec(_gep(bld, part, bld.mul(i, part_ld)), col0, gk.wE)
                bld.store(bld.zext(part0, vt) if gk.wE < 64 else part0, ocol, align=8)
                zero = cg.const(gk.wc, 0, G)
                sc_base = _gep(bld, sc, bld.add(bld.mul(i, sc_row), bld.mul(bld.udiv(col0, const(128)), sc_col)))

                def chunk(q):
                    c0 = bld.select(bld.icmp_signed("==", q, const(0)), load_vec(crow, col0, gk.wc), zero)
                    acc = chain(_gep(bld, arow, bld.mul(q, a_csz)), _gep(bld, brow, bld.mul(q, b_csz)), c0, pending)
                    bld.store(acc, pend_acc)
                    bld.store(ocol, pend_ptr)
                    if gk.ws:
                        s = bld.load(_gep(bld, sc_base, q))
                        bld.store(bld.trunc(s, st) if gk.ws < 64 else s, pend_s)
                _loop(bld, fn, "q", const(0), nchunks, chunk)
                return
            if wr < 64:
                res = bld.zext(res, vt)
            bld.store(res, bld.bitcast(_gep(bld, orow, col0), vt.as_pointer()), align=8)
        _loop(bld, fn, "v", v0, v1, col)
    _loop(bld, fn, "i", r0, r1, row)
    if fused:                              # the last chunk's combine
        e, target = pending()
        store_part(e.emit_all(), target)
    bld.ret_void()


def _scalar_side(bld, p: _Piece, s, G: int, cg) -> dict:
    """The nodes of ``p`` that read only the per-chunk scale ``s`` (its decode: one value for all
    G columns), computed once on scalars; their frontier broadcast to G lanes."""
    nodes = p.T.nodes
    val = {}
    for i in p.side[_S]:
        val[i] = s if nodes[i].op == "input" else cg.emit_node(bld, nodes, i, val, 1)
    return {i: cg.broadcast(bld, val[i], cg.ty(nodes[i].w, G)) for i in sorted(p._front[_S])}


class _BlockEmitter:
    """One block's mixed nodes on G columns, emitted node by node (:meth:`step`): A's frontier
    read from ``ra`` (scalars, broadcast), B's from ``rb`` (vectors), the inputs ``acc``, ``c``
    and ``part`` given, ``pre`` the values of nodes already computed (:func:`_scalar_side`)."""

    def __init__(self, bld, p: _Piece, ra, rb, inputs: dict, G: int, cg, pre: dict | None = None):
        self.bld, self.p, self.ra, self.rb, self.inputs, self.G, self.cg = bld, p, ra, rb, inputs, G, cg
        self.fa = {i: (off, nb) for i, off, nb in p.front[_A]}
        self.fb = {i: (off, nb) for i, off, nb in p.front[_B]}
        self.val = dict(pre or {})
        self.order = cg.schedule(p.T.nodes, [p.root], set(p.mixed))

    def _load(self, j):
        from llvmlite import ir
        bld, cg, G = self.bld, self.cg, self.G
        w = self.p.T.nodes[j].w
        wt = cg.BOOL_BITS if w == 0 else w
        if j in self.fa:
            off, nb = self.fa[j]
            s = bld.load(bld.bitcast(_gep(bld, self.ra, off), ir.IntType(8 * nb).as_pointer()), align=1)
            if wt < 8 * nb:
                s = bld.trunc(s, ir.IntType(wt))
            return cg.broadcast(bld, s, cg.ty(w, G))
        off, nb = self.fb[j]
        v = bld.load(bld.bitcast(_gep(bld, self.rb, off), cg.ty(8 * nb, G).as_pointer()), align=1)
        return bld.trunc(v, cg.ty(w, G)) if wt < 8 * nb else v

    def step(self, i) -> None:
        nodes, val = self.p.T.nodes, self.val
        nd = nodes[i]
        if nd.op == "input":
            val[i] = self.inputs[nd.p[0][0]]
            return
        for j in nd.args:
            if j not in val:
                val[j] = self._load(j)
        val[i] = self.cg.emit_node(self.bld, nodes, i, val, self.G)

    def result(self):
        return self.val[self.p.root]

    def emit_all(self):
        """Every node not yet emitted; the block's result."""
        for i in self.order:
            if i not in self.val:
                self.step(i)
        return self.result()


def _mixed_block(bld, p: _Piece, ra, rb, inputs: dict, G: int, cg, beside: _BlockEmitter | None = None):
    """One block's mixed nodes on G columns (see :class:`_BlockEmitter`); returns the block's
    result. ``beside``: independent work (the previous chunk's combine) whose nodes are emitted
    spread among this block's, so that its dependent chain of operations runs while this
    block's many independent ones fill the core."""
    e = _BlockEmitter(bld, p, ra, rb, inputs, G, cg)
    if beside is None:
        return e.emit_all()
    n, m = len(e.order), len(beside.order)
    j = 0
    for t, i in enumerate(e.order):
        while j < m and j * n <= t * m:
            beside.step(beside.order[j])
            j += 1
        e.step(i)
    beside.emit_all()
    return e.result()


# ---- running --------------------------------------------------------------------------------

def _pieces_nnext(gk: GemmKernel, k: int) -> int:
    if "next" not in gk.pieces:
        return 0
    nb = -(-k // gk.L)
    return nb - ("first" in gk.pieces) - ("last" in gk.pieces)


def _submit_all(jobs: int, fn, items) -> None:
    """fn(*item) for every item on ``jobs`` threads; on an interrupt or error the items not
    started are cancelled (a Ctrl-C returns after the running ones, not after all)."""
    if jobs == 1 or len(items) <= 1:
        for it in items:
            fn(*it)
        return
    futures = [pool(jobs).submit(fn, *it) for it in items]
    try:
        for f in futures:
            f.result()
    except BaseException:
        for f in futures:
            f.cancel()
        wait(futures)                   # the running ones write into the caller's arrays: they end first
        raise


def dots(m, a: np.ndarray, b: np.ndarray, c, k0: int, k1: int, jobs: int | None = None, *, chunks: int = 1,
         combine=None, part=None, scales=None) -> np.ndarray:
    """D[i, j] = the model's chain over a[i, k0:k1] and b[k0:k1, j] from c[i, j] (or +0): a (M, K)
    and b (K, N) C-contiguous uint64 (values within the operands' widths), c (M, N) uint64 or
    None. Raises :class:`NotSplit`/:class:`TooWide` where the GEMM reading does not apply.

    A batch: a (B, M, K), b (B, K, N), c and ``part`` (B, M, N) -> (B, M, N), each matrix from
    its own operands: the records of all rows of A and all column vectors of B prepared in one
    call each, then one call of the kernel per matrix (per part of a large one), on ``jobs``
    threads.

    With ``combine`` (see :func:`gemm_kernel`): K[k0:k1] is ``chunks`` chains of equal length,
    chunk 0 from c, the others from +0, summed into ``part`` (M, N) (None: +0) as they go:
    part = combine(part, chain_q, scale_q); returns the final part (written into ``part`` itself
    where that is a C-contiguous (M, N) uint64 array of whole vectors: the caller's array is
    consumed). ``scales`` (one GEMM only): (array, row
    stride, column-block stride) of uint64 scale bits, chunk q's scale of row i and columns
    128 * cb .. 128 * cb + 127 at ``array[i * row + cb * col + q]``."""
    batched = a.ndim == 3
    if not batched:
        a, b = a[None], b[None]
        c = None if c is None else c[None]
        part = None if part is None else part[None]
    Bt, M, K = a.shape
    N = b.shape[2]
    if batched and scales is not None:
        raise ValueError("per-block scales take one GEMM, not a batch")
    kk = k1 - k0
    k = kk // chunks
    if k * chunks != kk or k < 1:
        raise ValueError(f"{kk} elements of K are not {chunks} chunks of equal length")
    gk = gemm_kernel(m, k, combine)
    G = gk.lanes
    Np = -(-N // G) * G
    nv = Np // G
    nnext = _pieces_nnext(gk, k)
    if Bt == 1 and Np == N:
        b2, kb0, ldb = b[0], k0, Np
    else:                                          # whole vectors of columns, the batch's side by side: (K, B, Np)
        b2 = np.zeros((kk, Bt, Np), np.uint64)
        b2[:, :, :N] = b[:, k0:k1].transpose(1, 0, 2)
        kb0, ldb = 0, Bt * Np

    def padded(x):
        if x is None or Np == N:
            return x
        y = np.zeros((Bt, M, Np), np.uint64)
        y[:, :, :N] = x
        return y
    c, part = (None if x is None else np.ascontiguousarray(padded(x), np.uint64) for x in (c, part))
    a_csz, b_csz = gk.size(_A, nnext), gk.size(_B, nnext)
    a_sz, b_sz = chunks * a_csz, chunks * b_csz
    ra = np.empty(max(Bt * M * a_sz, 1), np.uint8)
    rb = np.empty(max(Bt * nv * b_sz, 1), np.uint8)
    if combine is not None and part is not None and part.shape == (Bt, M, Np) and part.dtype == np.uint64 \
            and part.flags.c_contiguous and part.flags.writeable:
        out = part                   # the partial sums updated in place: each is read before it is written
    else:
        out = np.empty((Bt, M, Np), np.uint64)
    zero = np.zeros(Np, np.uint64)
    jobs = jobs or default_jobs()
    if jobs > 1 and Bt * M * Np * kk < SMALL_MACS:
        jobs = 1                                   # a small GEMM: one thread (handing out costs more)
    fn = gk.fn
    a_p = _addr(a) + 8 * k0
    b_p = _addr(b2) + 8 * kb0 * ldb
    ra_p, rb_p, out_p, zero_p = _addr(ra), _addr(rb), _addr(out), _addr(zero)

    def prep_a(q, r0, r1):
        fn["prep_a"](r0, r1, nnext, a_p + 8 * q * k, K, 1, ra_p + q * a_csz, a_sz)

    def prep_b(q, u0, u1):
        fn["prep_b"](u0, u1, nnext, b_p + 8 * q * k * ldb, G, ldb, rb_p + q * b_csz, b_sz)

    parts = 1 if jobs == 1 else max(1, -(-4 * jobs // chunks))
    ra_step, rb_step = -(-Bt * M // parts), -(-Bt * nv // parts)
    _submit_all(jobs, prep_a, [(q, r, min(r + ra_step, Bt * M)) for q in range(chunks)
                               for r in range(0, Bt * M, ra_step)])
    _submit_all(jobs, prep_b, [(q, u, min(u + rb_step, Bt * nv)) for q in range(chunks)
                               for u in range(0, Bt * nv, rb_step)])
    c_p, c_ld = (zero_p, 0) if c is None else (_addr(c), Np)
    tv = max(1, min(nv, TILE_BYTES // max(b_sz, 1)))
    tiles = [(v, min(v + tv, nv)) for v in range(0, nv, tv)]
    rows = 1 if jobs == 1 or Bt >= 4 * jobs else max(1, -(-8 * jobs // (len(tiles) * Bt)))
    rm = max(1, -(-M // rows))
    items = [(i, r, min(r + rm, M), v, w) for i in range(Bt) for v, w in tiles for r in range(0, M, rm)]
    p_p = p_ld = None
    if combine is not None:
        p_p, p_ld = (zero_p, 0) if part is None else (_addr(part), Np)
        sc_arr, sc_row, sc_col = scales if scales is not None else (zero, 0, 0)
        sc_p = _addr(sc_arr)
    elif chunks != 1:
        raise ValueError("chunks of K without a combine")
    mat = 8 * M * Np                               # bytes of one (M, Np) matrix of C, D, part

    def main(group):
        for i, r0, r1, v0, v1 in group:
            extra = () if p_p is None else (chunks, a_csz, b_csz, p_p + (i * mat if p_ld else 0), p_ld, sc_p,
                                            sc_row, sc_col)
            fn["gemm"](r0, r1, v0, v1, nnext, ra_p + i * M * a_sz, a_sz, rb_p + i * nv * b_sz, b_sz,
                       c_p + (i * mat if c_ld else 0), c_ld, out_p + i * mat, Np, *extra)

    step = 1 if jobs == 1 else max(1, len(items) // (4 * jobs))
    _submit_all(jobs, main, [(items[s:s + step],) for s in range(0, len(items), step)] if jobs > 1 else [(items,)])
    out = out[..., :N] if Np != N else out
    return out if batched else out[0]


SMALL_MACS = 1 << 18
"""Multiply-adds below which a GEMM runs on one thread: handing its parts to the pool costs more
than they take (a 16x16x16 GEMM is a few microseconds of kernel)."""


def _addr(x: np.ndarray) -> int:
    """The address of x's first element."""
    return x.ctypes.data


def memory_needed(M: int, N: int, K: int, partials: int = 1) -> int:
    """Bytes a GEMM of op(A) (M, K) and op(B) (K, N) allocates at most: the raw bits of A and B
    (uint64), the output and C, ``partials`` partial sums (slices, restarted chains), the GEMM
    reading's records (at most 32 bytes per element of A and B)."""
    return 8 * (M * K + K * N) + 8 * M * N * (3 + partials) + 32 * (M + N) * K


def memory_available() -> int | None:
    """Bytes of memory available to a new allocation (:func:`smtmodel.limits.memory_available`:
    ``MemAvailable`` of /proc/meminfo, and what ``RLIMIT_AS`` still allows), or None where it
    is not known."""
    from ..limits import memory_available as available
    return available()
