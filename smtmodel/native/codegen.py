"""LLVM IR from a recorded DAG of core primitives (:mod:`smtmodel.bv.trace_backend`).

Each primitive maps to one or two LLVM instructions on ``iN`` (N = the core width; Booleans are
``i1``): arithmetic and logic directly, comparisons to ``icmp``, ``ite`` to ``select``,
``extract`` to ``lshr`` + ``trunc``, ``concat`` to ``zext``/``shl``/``or``. SMT-LIB ``QF_BV``
semantics are kept where LLVM's differ: a shift by an amount >= width is poison in LLVM but 0
(``ashr``: all sign bits) in SMT-LIB, so a variable shift amount is guarded by a ``select``
(the poison of the arm not taken does not propagate through ``select``).

The generated function loops over ``n`` cases (``i`` = 0..n-1); operand ``x`` element ``j`` of
case ``i`` is the uint64 at ``x[j * x_ld + i * x_cs]``, where the case strides ``x_cs`` are
compile-time (``layout``) and the leading dimensions runtime arguments. So the same kernel reads
a (K, N) array of N cases (``cs = 1``), one GEMM row broadcast over all cases (``cs = 0``), or
row-major (N, K) cases in place (``cs = K``, ``x_ld = 1``: one scalar load per lane), and the
loop over ``i`` is emitted on vectors of cases::

    void kernel(i64 n, i64* a, i64 a_ld, i64* b, i64 b_ld, i64* c, i64* sa, i64* sb, i64 s_ld,
                i64* out)
"""

from __future__ import annotations

import threading

from llvmlite import ir

from ..bv.trace_backend import Node

I64 = ir.IntType(64)
I1 = ir.IntType(1)
P64 = I64.as_pointer()

SUPPORTED = frozenset(("input", "const", "bconst", "add", "sub", "mul", "and_", "or_", "xor", "not_",
                       "neg", "shl", "lshr", "ashr", "eq", "ult", "ule", "slt", "sle", "extract",
                       "concat", "zext", "sext", "ite", "b_and", "b_or", "b_xor", "b_not"))
"""Every primitive of the core (the ``Backend`` interface) the native reading compiles."""


class UnsupportedPrimitive(Exception):
    """A DAG node whose primitive the code generator does not know."""


LANES = 8
"""Cases per vector: the body is emitted on ``<LANES x iN>`` vectors, so no loop vectoriser
(the slowest part of LLVM's -O3 on these straight-line bodies) is needed."""

_LANES = LANES
_EMIT_LOCK = threading.Lock()


BOOL_BITS = 8
"""Width a Boolean is kept in between operations (0 or 1): 8, so that Boolean logic stays in
vector registers (``<8 x i1>`` logic lives in AVX-512 mask registers and is moved to and from
general registers at every use); 1: plain ``i1``."""


def _ty(w: int):
    t = ir.IntType(BOOL_BITS) if w == 0 else ir.IntType(w)
    return ir.VectorType(t, _LANES) if _LANES > 1 else t


def _const(w: int, v: int):
    ty = _ty(w)
    return ir.Constant(ty, [v] * ty.count) if isinstance(ty, ir.VectorType) else ir.Constant(ty, v)


def emit_module(nodes: list[Node], live: list[int], root: int, inputs: dict, layout: dict,
                name: str = "kernel", lanes: int = LANES) -> ir.Module:
    """An LLVM module with one function ``name`` computing node ``root`` for each case.

    ``inputs`` maps an input node's name (``("a", j)`` ...) to its operand and element index;
    ``layout`` gives the compile-time case stride (0 or 1) of operands ``a``, ``b``, ``c``, ``s``.
    ``n`` must be a multiple of ``lanes`` (the caller pads the tail).
    """
    global _LANES
    with _EMIT_LOCK:                       # _ty/_const read the lane count of this emission
        _LANES = lanes
        return _emit(nodes, live, root, inputs, layout, name, lanes)


def _emit(nodes, live, root, inputs, layout, name, lanes) -> ir.Module:
    for i in live:
        if nodes[i].op not in SUPPORTED:
            raise UnsupportedPrimitive(nodes[i].op)
    mod = ir.Module(name=name)
    fnty = ir.FunctionType(ir.VoidType(), [I64, P64, I64, P64, I64, P64, P64, P64, I64, P64])
    fn = ir.Function(mod, fnty, name=name)
    n, a, a_ld, b, b_ld, c, sa, sb, s_ld, out = fn.args
    for arg in (a, b, c, sa, sb, out):
        arg.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    bld = ir.IRBuilder(entry)
    base = {"a": (a, a_ld, layout["a"]), "b": (b, b_ld, layout["b"]), "c": (c, None, layout["c"]),
            "sa": (sa, s_ld, layout["s"]), "sb": (sb, s_ld, layout["s"])}
    rows = {}
    for i in live:                         # row pointers x + j * x_ld, outside the loop
        if nodes[i].op == "input":
            opnd, j = inputs[nodes[i].p[0]]
            ptr, ld, _ = base[opnd]
            rows[i] = ptr if ld is None or j == 0 else bld.gep(ptr, [bld.mul(ld, ir.Constant(I64, j))])
    bld.cbranch(bld.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)

    bld.position_at_end(loop)
    idx = bld.phi(I64, name="i")
    idx.add_incoming(ir.Constant(I64, 0), entry)
    val: dict[int, ir.Value] = {}
    for i in live:
        nd = nodes[i]
        op, w = nd.op, nd.w
        x = [val[j] for j in nd.args]
        if op == "input":
            opnd = inputs[nd.p[0]][0]
            cs = base[opnd][2]
            v = _load(bld, rows[i], idx, cs, lanes)
            val[i] = bld.trunc(v, _ty(w)) if w < 64 else v
        elif op in ("const", "bconst"):
            val[i] = _const(w, int(nd.p[0]))
        elif op == "add":
            val[i] = bld.add(*x)
        elif op == "sub":
            val[i] = bld.sub(*x)
        elif op == "mul":
            val[i] = bld.mul(*x)
        elif op in ("and_", "b_and"):
            val[i] = bld.and_(*x)
        elif op in ("or_", "b_or"):
            val[i] = bld.or_(*x)
        elif op in ("xor", "b_xor"):
            val[i] = bld.xor(*x)
        elif op == "not_":
            val[i] = bld.xor(x[0], _const(w, (1 << w) - 1))
        elif op == "b_not":
            val[i] = bld.xor(x[0], _const(0, 1))
        elif op == "neg":
            val[i] = bld.sub(_const(w, 0), x[0])
        elif op in ("shl", "lshr", "ashr"):
            val[i] = _shift(bld, op, x[0], x[1], w, nodes[nd.args[1]])
        elif op in ("eq", "ult", "ule"):
            val[i] = _bool(bld, bld.icmp_unsigned({"eq": "==", "ult": "<", "ule": "<="}[op], *x))
        elif op in ("slt", "sle"):
            val[i] = _bool(bld, bld.icmp_signed({"slt": "<", "sle": "<="}[op], *x))
        elif op == "extract":
            hi, lo = nd.p
            v = x[0]
            if lo:
                v = bld.lshr(v, _const(nodes[nd.args[0]].w, lo))
            val[i] = bld.trunc(v, _ty(hi - lo + 1)) if hi - lo + 1 < nodes[nd.args[0]].w else v
        elif op == "concat":
            wb = nodes[nd.args[1]].w
            hi = bld.shl(bld.zext(x[0], _ty(w)), _const(w, wb))
            val[i] = bld.or_(hi, bld.zext(x[1], _ty(w)))
        elif op == "zext":
            val[i] = bld.zext(x[0], _ty(w))
        elif op == "sext":
            v = x[0]
            if nodes[nd.args[0]].w == 0 and BOOL_BITS > 1:
                v = bld.trunc(v, ir.VectorType(I1, lanes) if lanes > 1 else I1)
            val[i] = bld.sext(v, _ty(w))
        elif op == "ite":
            cond = x[0]
            if BOOL_BITS > 1:
                cond = bld.trunc(cond, ir.VectorType(I1, lanes) if lanes > 1 else I1)
            val[i] = bld.select(cond, x[1], x[2])
    r = val[root]
    rw = nodes[root].w
    r = bld.zext(r, _ty(64)) if rw < 64 else r
    bld.store(r, bld.bitcast(bld.gep(out, [idx]), _ty(64).as_pointer()), align=8)
    nxt = bld.add(idx, ir.Constant(I64, lanes))
    idx.add_incoming(nxt, loop)
    bld.cbranch(bld.icmp_signed("<", nxt, n), loop, done)
    bld.position_at_end(done)
    bld.ret_void()
    return mod


def _bool(bld: ir.IRBuilder, v):
    """An ``i1`` comparison result as a Boolean of :data:`BOOL_BITS` bits (0 or 1)."""
    return bld.zext(v, _ty(0)) if BOOL_BITS > 1 else v


def _load(bld: ir.IRBuilder, row, idx, cs: int, lanes: int):
    """``lanes`` consecutive cases: case stride 1 (one vector load), 0 (one value for all), or
    ``cs`` elements (row-major cases: one scalar load per lane, assembled into a vector)."""
    if cs == 1:
        p = bld.gep(row, [idx])
        return bld.load(bld.bitcast(p, _ty(64).as_pointer()), align=8) if lanes > 1 else bld.load(p)
    if cs == 0:
        v = bld.load(row)
        if lanes == 1:
            return v
        vt = _ty(64)
        one = bld.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
        return bld.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes))
    base = bld.gep(row, [bld.mul(idx, ir.Constant(I64, cs))])
    if lanes == 1:
        return bld.load(base)
    v = ir.Constant(_ty(64), ir.Undefined)
    for lane in range(lanes):
        x = bld.load(bld.gep(base, [ir.Constant(I64, lane * cs)]) if lane else base, align=8)
        v = bld.insert_element(v, x, ir.Constant(ir.IntType(32), lane))
    return v


def _shift(bld: ir.IRBuilder, op: str, x, amount, w: int, amount_node: Node):
    """SMT-LIB shift: amounts >= w give 0 (``ashr``: the sign bit everywhere)."""
    full = {"shl": lambda: _const(w, 0), "lshr": lambda: _const(w, 0),
            "ashr": lambda: bld.ashr(x, _const(w, w - 1))}[op]
    do = {"shl": bld.shl, "lshr": bld.lshr, "ashr": bld.ashr}[op]
    if amount_node.op == "const":
        return full() if amount_node.p[0] >= w else do(x, amount)
    big = bld.icmp_unsigned(">=", amount, _const(w, w))
    return bld.select(big, full(), do(x, amount))
