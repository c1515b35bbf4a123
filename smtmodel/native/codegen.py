"""LLVM IR from a recorded DAG of core primitives (:mod:`smtmodel.bv.trace_backend`).

Each primitive maps to one or two LLVM instructions on ``iN`` (N = the core width; Booleans are
``i1``): arithmetic and logic directly, comparisons to ``icmp``, ``ite`` to ``select``,
``extract`` to ``lshr`` + ``trunc``, ``concat`` to ``zext``/``shl``/``or``, ``clz`` to the
``llvm.ctlz`` intrinsic (zero defined: the width). SMT-LIB ``QF_BV``
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

from llvmlite import ir

from ..bv.trace_backend import Node

I64 = ir.IntType(64)
I1 = ir.IntType(1)
P64 = I64.as_pointer()

SUPPORTED = frozenset(("input", "const", "bconst", "add", "sub", "mul", "and_", "or_", "xor", "not_",
                       "neg", "shl", "lshr", "ashr", "eq", "ult", "ule", "slt", "sle", "extract",
                       "concat", "zext", "sext", "ite", "b_and", "b_or", "b_xor", "b_not", "clz"))
"""Every primitive of the core (the ``Backend`` interface) the native reading compiles."""


class UnsupportedPrimitive(Exception):
    """A DAG node whose primitive the code generator does not know."""


LANES = 8
"""Cases per vector: the body is emitted on ``<LANES x iN>`` vectors, so no loop vectoriser
(the slowest part of LLVM's -O3 on these straight-line bodies) is needed."""

BOOL_BITS = 8
"""Width a Boolean is kept in between operations (0 or 1): 8, so that Boolean logic stays in
vector registers (``<8 x i1>`` logic lives in AVX-512 mask registers and is moved to and from
general registers at every use); 1: plain ``i1``."""


def ty(w: int, lanes: int):
    """The LLVM type of a node of width ``w`` (0: Boolean) on ``lanes`` cases."""
    t = ir.IntType(BOOL_BITS) if w == 0 else ir.IntType(w)
    return ir.VectorType(t, lanes) if lanes > 1 else t


def const(w: int, v: int, lanes: int):
    t = ty(w, lanes)
    return ir.Constant(t, [v] * t.count) if isinstance(t, ir.VectorType) else ir.Constant(t, v)


def schedule(nodes: list[Node], roots, within=None, smallest_first: bool = False) -> list[int]:
    """The nodes ``roots`` depend on (restricted to ``within`` where given: the others are
    leaves computed elsewhere), in depth-first post-order, last argument first: each node right
    after its arguments, a common subexpression at its first use, so that values stay live for
    shorter stretches than in the recorded order (all decodes, then all products, ...). Measured
    on the GEMM reading's blocks (Zen 5, 32 lanes): Hopper FP8 +9 %, fp16/bf16 within noise.

    ``smallest_first``: a node's arguments are visited smallest first (the fewest nodes not yet
    scheduled under them, counted up to :data:`SIZE_CAP`): a reduction over values already
    computed (an ``ite`` on the special-value flags of every product) is done, and its inputs
    freed, before a large subtree keeps them live. Measured on the per-case kernels (Zen 5, 32
    lanes, 2^20 cases, interleaved runs), 10^7 dot products per CPU second, last argument first /
    smallest first: Hopper fp16 K = 16 11.1 / 12.0, e4m3 K = 32 10.3 / 10.9; on the GEMM
    reading's blocks smallest first is 2-5 % slower. With ``smallest_first`` every extract of a
    value is also placed right after it (an input's sign bit, read only by the products after the
    alignment, no longer keeps the whole input live across the maximum exponent): Hopper fp16
    K = 16 11.0 -> 11.7, e4m3 within noise."""
    order, seen = [], set()
    users: dict = {}
    if smallest_first:
        allnodes = within if within is not None else range(len(nodes))
        for u in allnodes:
            if nodes[u].op == "extract":
                users.setdefault(nodes[u].args[0], []).append(u)
    for r in roots:
        if r in seen:
            continue
        stack = [(r, False)]
        while stack:
            i, done = stack.pop()
            if done:
                order.append(i)
                for u in users.get(i, ()):
                    if u not in seen:
                        seen.add(u)
                        order.append(u)
                continue
            if i in seen:
                continue
            seen.add(i)
            stack.append((i, True))
            args = [j for j in nodes[i].args if j not in seen and (within is None or j in within)]
            if smallest_first and len(args) > 1:
                args.sort(key=lambda j: -_unscheduled(nodes, j, seen, within))
            stack.extend((j, False) for j in args)       # the last one pushed is visited first
    return order


SIZE_CAP = 400


def _unscheduled(nodes: list[Node], r: int, seen: set, within) -> int:
    """How many nodes under ``r`` (``r`` included) are not in ``seen``, counted up to
    :data:`SIZE_CAP`."""
    st, vis = [r], set()
    while st and len(vis) < SIZE_CAP:
        i = st.pop()
        if i in vis or i in seen:
            continue
        vis.add(i)
        st.extend(j for j in nodes[i].args if within is None or j in within)
    return len(vis)


NARROW_WIDTH = 32
"""Values of more than this many bits that provably lie in its signed range are computed at it
(:func:`narrowed`): on vectors, an op on 33-64-bit values takes twice the registers and
instructions of one on 32 bits."""


def ranges(nodes: list[Node], order) -> dict:
    """For each node in ``order`` (arguments first), an interval [lo, hi] of integers holding a
    representative v of its value (bits = v mod 2^w): inputs and unknown results [0, 2^w - 1],
    constants their signed reading, then interval arithmetic through add, sub, neg, mul, shl by
    a constant, ite, the extensions and the unsigned ops whose operands are known non-negative
    (lshr, and, or, xor, extract); a leading-zero count lies in [0, w]. Booleans are left out."""
    R: dict[int, tuple[int, int]] = {}

    def full(w):
        return (0, (1 << w) - 1)

    def uns(j):                                    # the operand's unsigned value, if R gives it
        if nodes[j].w == 0:
            return (0, 1)
        lo, hi = R.get(j) or (-1, -1)
        return (lo, hi) if lo >= 0 and hi < 1 << nodes[j].w else None

    for i in order:
        nd = nodes[i]
        w, op = nd.w, nd.op
        if w == 0:
            continue
        a = [R.get(j) for j in nd.args]
        r = None
        if op == "const":
            v = int(nd.p[0])
            r = (v - (1 << w), v - (1 << w)) if v >> (w - 1) else (v, v)
        elif op in ("add", "sub", "mul") and all(a):
            (l1, h1), (l2, h2) = a
            r = ((l1 + l2, h1 + h2) if op == "add" else (l1 - h2, h1 - l2) if op == "sub"
                 else (min(x * y for x in (l1, h1) for y in (l2, h2)), max(x * y for x in (l1, h1) for y in (l2, h2))))
        elif op == "neg" and a[0]:
            r = (-a[0][1], -a[0][0])
        elif op == "shl" and a[0] and nodes[nd.args[1]].op == "const" and nodes[nd.args[1]].p[0] < w:
            k = int(nodes[nd.args[1]].p[0])
            r = (a[0][0] << k, a[0][1] << k)
        elif op == "ite" and a[1] and a[2]:
            r = (min(a[1][0], a[2][0]), max(a[1][1], a[2][1]))
        elif op == "zext":
            r = uns(nd.args[0]) or full(nodes[nd.args[0]].w)
        elif op == "sext" and nodes[nd.args[0]].w == 0:
            r = (-1, 0)
        elif op == "sext" and a[0]:
            wx = nodes[nd.args[0]].w
            lo, hi = a[0]
            r = (lo, hi) if -(1 << (wx - 1)) <= lo and hi < 1 << (wx - 1) else (-(1 << (wx - 1)), (1 << (wx - 1)) - 1)
        elif op == "lshr" and uns(nd.args[0]):
            r = (0, a[0][1])
        elif op == "and_":
            us = [u for u in (uns(j) for j in nd.args) if u]
            if us:
                r = (0, min(u[1] for u in us))
        elif op in ("or_", "xor") and uns(nd.args[0]) and uns(nd.args[1]):
            r = (0, (1 << max(a[0][1], a[1][1]).bit_length()) - 1)
        elif op == "clz":
            r = (0, w)
        elif op == "extract":
            hi_, lo_ = nd.p
            u = uns(nd.args[0])
            r = (0, min((1 << (hi_ - lo_ + 1)) - 1, u[1] >> lo_)) if u else full(w)
        R[i] = r if r is not None and r[1] - r[0] < 1 << w else full(w)
    return R


NARROWABLE = frozenset(("add", "sub", "neg", "mul", "shl", "ite", "zext", "sext"))


def narrowed(nodes: list[Node], order, within=None) -> set:
    """The nodes of ``order`` (in ``within`` where given) wider than :data:`NARROW_WIDTH` bits,
    of an op that commutes with truncation (ring ops, a select, the extensions; a shift by a
    constant) and whose value provably lies in the signed range of :data:`NARROW_WIDTH` bits
    (:func:`ranges`): computed at that width, the value is exact, and sign-extending it gives
    the node's bits."""
    R = ranges(nodes, order)
    lo, hi = -(1 << (NARROW_WIDTH - 1)), (1 << (NARROW_WIDTH - 1)) - 1
    out = set()
    for i in order:
        nd = nodes[i]
        if (nd.w > NARROW_WIDTH and nd.op in NARROWABLE and (within is None or i in within)
                and lo <= R[i][0] and R[i][1] <= hi
                and (nd.op != "shl" or nodes[nd.args[1]].op == "const")
                and (nd.op not in ("zext", "sext") or nodes[nd.args[0]].w <= NARROW_WIDTH or nd.args[0] in out)):
            out.add(i)
    return out


class Emitter:
    """:func:`emit_node` with the :func:`narrowed` nodes computed at :data:`NARROW_WIDTH` bits:
    ``val`` holds each node's value (a narrowed node's at the narrow width), ``full(j)`` its
    value at the node's own width (a narrowed one sign-extended once)."""

    def __init__(self, bld, nodes, val: dict, lanes: int, narrow: set):
        self.bld, self.nodes, self.val, self.lanes, self.narrow = bld, nodes, val, lanes, narrow
        self._full: dict = {}

    def full(self, j):
        if j not in self.narrow:
            return self.val[j]
        v = self._full.get(j)
        if v is None:
            v = self._full[j] = self.bld.sext(self.val[j], ty(self.nodes[j].w, self.lanes))
        return v

    def _low(self, j):
        """Operand j at the narrow width (truncated: its value modulo 2^NARROW_WIDTH)."""
        if j in self.narrow:
            return self.val[j]
        v, w = self.val[j], self.nodes[j].w
        return self.bld.trunc(v, ty(NARROW_WIDTH, self.lanes)) if w > NARROW_WIDTH else v

    def emit(self, i):
        nodes, bld, lanes = self.nodes, self.bld, self.lanes
        nd = nodes[i]
        if i not in self.narrow:
            if any(j in self.narrow for j in nd.args):
                return emit_node(bld, nodes, i, _Full(self), lanes)
            return emit_node(bld, nodes, i, self.val, lanes)
        t = ty(NARROW_WIDTH, lanes)
        op = nd.op
        if op in ("zext", "sext"):
            (j,) = nd.args
            v = self.val[j]
            if j in self.narrow or nodes[j].w == NARROW_WIDTH:
                return v
            if nodes[j].w == 0:
                v = lanes_i1(bld, v, lanes)
            return bld.zext(v, t) if op == "zext" else bld.sext(v, t)
        if op == "ite":
            return bld.select(lanes_i1(bld, self.val[nd.args[0]], lanes), self._low(nd.args[1]), self._low(nd.args[2]))
        if op == "neg":
            return bld.sub(ir.Constant(t, [0] * lanes) if lanes > 1 else ir.Constant(t, 0), self._low(nd.args[0]))
        x, y = self._low(nd.args[0]), nd.args[1]
        if op == "shl":
            k = int(nodes[y].p[0])
            return bld.shl(x, const(NARROW_WIDTH, k, lanes)) if k < NARROW_WIDTH else const(NARROW_WIDTH, 0, lanes)
        return {"add": bld.add, "sub": bld.sub, "mul": bld.mul}[op](x, self._low(y))


class _Full:
    """A read-only view of an :class:`Emitter`'s values at the nodes' own widths."""

    def __init__(self, em: Emitter):
        self.em = em

    def __getitem__(self, j):
        return self.em.full(j)


def lanes_i1(bld: ir.IRBuilder, v, lanes: int):
    """A Boolean value (:data:`BOOL_BITS` bits a lane) as ``<lanes x i1>`` (``i1`` on one case)."""
    if BOOL_BITS > 1:
        return bld.trunc(v, ir.VectorType(I1, lanes) if lanes > 1 else I1)
    return v


def check_supported(nodes: list[Node], live) -> None:
    for i in live:
        if nodes[i].op not in SUPPORTED:
            raise UnsupportedPrimitive(nodes[i].op)


def emit_node(bld: ir.IRBuilder, nodes: list[Node], i: int, val: dict, lanes: int):
    """The LLVM value of node ``i`` (not an input) from its arguments' values in ``val``."""
    nd = nodes[i]
    op, w = nd.op, nd.w
    x = [val[j] for j in nd.args]
    if op in ("const", "bconst"):
        return const(w, int(nd.p[0]), lanes)
    if op == "add":
        return bld.add(*x)
    if op == "sub":
        return bld.sub(*x)
    if op == "mul":
        return bld.mul(*x)
    if op in ("and_", "b_and"):
        return bld.and_(*x)
    if op in ("or_", "b_or"):
        return bld.or_(*x)
    if op in ("xor", "b_xor"):
        return bld.xor(*x)
    if op == "not_":
        return bld.xor(x[0], const(w, (1 << w) - 1, lanes))
    if op == "b_not":
        return bld.xor(x[0], const(0, 1, lanes))
    if op == "neg":
        return bld.sub(const(w, 0, lanes), x[0])
    if op in ("shl", "lshr", "ashr"):
        return _shift(bld, op, x[0], x[1], w, nodes[nd.args[1]], lanes)
    if op in ("eq", "ult", "ule"):
        return _bool(bld, bld.icmp_unsigned({"eq": "==", "ult": "<", "ule": "<="}[op], *x), lanes)
    if op in ("slt", "sle"):
        return _bool(bld, bld.icmp_signed({"slt": "<", "sle": "<="}[op], *x), lanes)
    if op == "extract":
        hi, lo = nd.p
        v = x[0]
        if lo:
            v = bld.lshr(v, const(nodes[nd.args[0]].w, lo, lanes))
        return bld.trunc(v, ty(hi - lo + 1, lanes)) if hi - lo + 1 < nodes[nd.args[0]].w else v
    if op == "concat":
        wb = nodes[nd.args[1]].w
        hi = bld.shl(bld.zext(x[0], ty(w, lanes)), const(w, wb, lanes))
        return bld.or_(hi, bld.zext(x[1], ty(w, lanes)))
    if op == "zext":
        return bld.zext(x[0], ty(w, lanes))
    if op == "sext":
        v = lanes_i1(bld, x[0], lanes) if nodes[nd.args[0]].w == 0 else x[0]
        return bld.sext(v, ty(w, lanes))
    if op == "ite":
        return bld.select(lanes_i1(bld, x[0], lanes), x[1], x[2])
    if op == "clz":
        t = x[0].type
        suffix = f"v{t.count}i{t.element.width}" if isinstance(t, ir.VectorType) else f"i{t.width}"
        ctlz = _declare(bld.module, f"llvm.ctlz.{suffix}", ir.FunctionType(t, [t, I1]))
        return bld.call(ctlz, [x[0], ir.Constant(I1, 0)])
    raise UnsupportedPrimitive(op)                     # pragma: no cover (check_supported first)


def _declare(mod: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    """The module's declaration of function ``name`` (an LLVM intrinsic), made once."""
    f = mod.globals.get(name)
    return f if f is not None else ir.Function(mod, fnty, name=name)


def emit_module(nodes: list[Node], live: list[int], root: int, inputs: dict, layout: dict,
                name: str = "kernel", lanes: int = LANES, bits: dict | None = None,
                check=False, narrow: dict | None = None) -> ir.Module:
    """An LLVM module with one function ``name`` computing node ``root`` for each case.

    ``inputs`` maps an input node's name (``("a", j)`` ...) to its operand and element index;
    ``layout`` gives the compile-time case stride (0, 1 or K) of operands ``a``, ``b``, ``c``, ``s``;
    a stride K > 1 means row-major cases read in place, element j of case i at ``x[i * K + j]``
    (the leading dimension passed must be 1): such an operand is read a vector of cases' rows at
    a time and transposed (:func:`_transpose`).
    ``bits`` gives each operand's element size in memory (8, 16, 32 or 64; default 64: uint64
    arrays), leading dimensions counted in elements. ``check``: the function takes an eleventh
    argument, ``i64* chk`` (4 x ``lanes`` values, zeroed by the caller), where it leaves the OR of
    every element of ``a``, ``b``, ``c`` and the scales it read (for row-major cases, the whole
    rows of the cases), so that the caller can check that the inputs fit their widths without a
    second pass over them; a set of groups (``"a"``, ``"b"``, ``"c"``, ``"s"``): only those are
    ORed (the others' dtypes cannot hold more bits than their widths), the rest left 0.
    ``n`` must be a multiple of ``lanes`` (the caller pads the tail).
    The nodes are emitted depth-first (:func:`schedule`): fewer values live at once than in the
    recorded order (Zen 5, Hopper fp16 K = 16 per-case kernel: 834 -> 551 stack accesses,
    +10-20 % cases per second).
    """
    check_supported(nodes, live)
    bits = {"a": 64, "b": 64, "c": 64, "s": 64} | (bits or {})
    mod = ir.Module(name=name)
    checked = check is True or isinstance(check, (set, frozenset))
    args = [I64, P64, I64, P64, I64, P64, P64, P64, I64, P64] + ([P64] if checked else [])
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), args), name=name)
    n, a, a_ld, b, b_ld, c, sa, sb, s_ld, out = fn.args[:10]
    for arg in fn.args:
        if isinstance(arg.type, ir.PointerType):
            arg.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    bld = ir.IRBuilder(entry)

    def typed(ptr, opnd):
        return bld.bitcast(ptr, ir.IntType(bits[opnd]).as_pointer()) if bits[opnd] != 64 else ptr
    base = {"a": (typed(a, "a"), a_ld, layout["a"], "a"), "b": (typed(b, "b"), b_ld, layout["b"], "b"),
            "c": (typed(c, "c"), None, layout["c"], "c"), "sa": (typed(sa, "s"), s_ld, layout["s"], "s"),
            "sb": (typed(sb, "s"), s_ld, layout["s"], "s")}
    rows = {}
    for i in live:                         # row pointers x + j * x_ld, outside the loop
        if nodes[i].op == "input":
            opnd, j = inputs[nodes[i].p[0]]
            ptr, ld, _, _ = base[opnd]
            rows[i] = ptr if ld is None or j == 0 else bld.gep(ptr, [bld.mul(ld, ir.Constant(I64, j))])
    bld.cbranch(bld.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)

    entry_bld = ir.IRBuilder(entry)
    entry_bld.position_at_start(entry)
    bld.position_at_end(loop)
    idx = bld.phi(I64, name="i")
    idx.add_incoming(ir.Constant(I64, 0), entry)
    val: dict[int, ir.Value] = {}
    bufs = {}
    if lanes > 1:
        for opnd, (ptr, ld, cs, g) in base.items():
            js = sorted(j for o, j in inputs.values() if o == opnd)
            if cs > 1 and ld is not None and js:
                bufs[opnd] = _transpose(bld, entry_bld, ptr, idx, cs, lanes, js, (narrow or {}).get(g))
        if PREFETCH:
            _prefetch(mod, bld, base, inputs, idx, lanes)
    order = schedule(nodes, [root], set(live), smallest_first=True)
    em = Emitter(bld, nodes, val, lanes, narrowed(nodes, live))
    for i in order:
        nd = nodes[i]
        if nd.op == "input":
            opnd = inputs[nd.p[0]][0]
            _, _, cs, group = base[opnd]
            if opnd in bufs:
                v = _from_buffer(bld, bufs, opnd, inputs[nd.p[0]][1], lanes)
            else:
                v = _load(bld, rows[i], idx, cs, lanes)
            eb = v.type.element.width if isinstance(v.type, ir.VectorType) else v.type.width
            val[i] = (bld.trunc(v, ty(nd.w, lanes)) if nd.w < eb else
                      bld.zext(v, ty(nd.w, lanes)) if nd.w > eb else v)
        else:
            val[i] = em.emit(i)
    r = em.full(root)
    rw = nodes[root].w
    r = bld.zext(r, ty(64, lanes)) if rw < 64 else r
    bld.store(r, bld.bitcast(bld.gep(out, [idx]), ty(64, lanes).as_pointer()), align=8)
    groups = set("abcs") if check is True else set(check or ())
    ors = _check_loads(bld, base, inputs, idx, entry, loop, lanes, bits, groups) if checked else []
    nxt = bld.add(idx, ir.Constant(I64, lanes))
    idx.add_incoming(nxt, loop)
    bld.cbranch(bld.icmp_signed("<", nxt, n), loop, done)
    bld.position_at_end(done)
    if checked:
        chk, group_names = fn.args[10], "abcs"
        lasts = []
        for g, (phi, acc) in enumerate(ors):            # the phis first, at the top of the block
            if phi is not None:
                last = bld.phi(phi.type)
                last.add_incoming(ir.Constant(phi.type, None), entry)
                last.add_incoming(acc, loop)
                lasts.append((g, last))
        for g, last in lasts:
            v = bld.zext(last, ty(64, lanes)) if bits[group_names[g]] < 64 else last
            p = bld.gep(chk, [ir.Constant(I64, g * lanes)])
            bld.store(v, bld.bitcast(p, v.type.as_pointer()) if lanes > 1 else p, align=8)
    bld.ret_void()
    return mod


def _check_loads(bld, base, inputs, idx, entry, loop, lanes, bits, only):
    """The OR of every element of each operand group (a, b, c, scales) read for this vector of
    cases, accumulated over the loop: ``[(phi, next)]`` per group (None where the group is not
    read). Row-major cases (case stride K) are read as their whole rows, ``lanes`` x K contiguous
    elements (the same cache lines the lanes' loads touch); other strides as the loads read them.
    Every element of ``inputs`` is read, live or not, as the NumPy reading checks every input."""
    groups = {"a": ["a"], "b": ["b"], "c": ["c"], "s": ["sa", "sb"]}
    used = {o for o, _ in inputs.values()}
    acc = []
    for g, opnds in groups.items():
        reads = [o for o in opnds if o in used and g in only]
        if not reads:
            acc.append((None, None))
            continue
        vt = ty(bits[g], lanes) if lanes > 1 else ir.IntType(bits[g])
        phi = _phi_at_top(bld, loop, vt, entry)
        v = phi
        for o in reads:
            ptr, ld, cs, _ = base[o]
            ks = sorted(j for o2, j in inputs.values() if o2 == o)
            if cs > 1:                       # row-major: the cases' rows, lanes * cs elements
                start = bld.gep(ptr, [bld.mul(idx, ir.Constant(I64, cs))])
                for t in range(cs):
                    p = bld.gep(start, [ir.Constant(I64, t * lanes)]) if t else start
                    x = bld.load(bld.bitcast(p, vt.as_pointer()), align=bits[g] // 8) if lanes > 1 else bld.load(p)
                    v = bld.or_(v, x)
            else:
                for j in ks:
                    row = ptr if ld is None or j == 0 else bld.gep(ptr, [bld.mul(ld, ir.Constant(I64, j))])
                    v = bld.or_(v, _load(bld, row, idx, cs, lanes))
        phi.add_incoming(v, loop)
        acc.append((phi, v))
    return acc


def _phi_at_top(bld, block, t, entry):
    """A phi of type ``t`` at the top of ``block`` (0 from ``entry``)."""
    here = bld.block
    bld.position_at_start(block)
    phi = bld.phi(t)
    phi.add_incoming(ir.Constant(t, None), entry)
    bld.position_at_end(here)
    return phi


def _bool(bld: ir.IRBuilder, v, lanes: int):
    """An ``i1`` comparison result as a Boolean of :data:`BOOL_BITS` bits (0 or 1)."""
    return bld.zext(v, ty(0, lanes)) if BOOL_BITS > 1 else v


def broadcast(bld: ir.IRBuilder, v, t: ir.VectorType):
    """A scalar as a vector of type ``t``, every lane the same."""
    i32 = ir.IntType(32)
    one = bld.insert_element(ir.Constant(t, ir.Undefined), v, ir.Constant(i32, 0))
    return bld.shuffle_vector(one, ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(i32, t.count), [0] * t.count))


def _load(bld: ir.IRBuilder, row, idx, cs: int, lanes: int):
    """``lanes`` consecutive cases: case stride 1 (one vector load), 0 (one value for all), or
    ``cs`` elements (row-major cases: one scalar load per lane, assembled into a vector)."""
    et = row.type.pointee
    if cs == 1:
        p = bld.gep(row, [idx])
        return bld.load(bld.bitcast(p, ir.VectorType(et, lanes).as_pointer()), align=et.width // 8) if lanes > 1 else bld.load(p)
    if cs == 0:
        v = bld.load(row)
        if lanes == 1:
            return v
        return broadcast(bld, v, ir.VectorType(et, lanes))
    base = bld.gep(row, [bld.mul(idx, ir.Constant(I64, cs))])
    if lanes == 1:
        return bld.load(base)
    v = ir.Constant(ir.VectorType(et, lanes), ir.Undefined)
    for lane in range(lanes):
        x = bld.load(bld.gep(base, [ir.Constant(I64, lane * cs)]) if lane else base, align=et.width // 8)
        v = bld.insert_element(v, x, ir.Constant(ir.IntType(32), lane))
    return v


def _transpose(bld, entry_bld, ptr, idx, cs, lanes, js, narrow: int | None = None):
    """The ``lanes`` row-major cases' elements ``js`` (case stride ``cs``), transposed into a
    stack buffer of one vector per element, so that the body reads whole vectors (from L1)
    where and when it needs them instead of assembling them lane by lane. The rows are read as
    vectors of 512 bits and rearranged either by a network of log2(lanes) perfect shuffles
    (each interleaves the first half of the elements with the second: n two-vector shuffles a
    stage) or, per element, by one shuffle of all the rows (LLVM's lowering). Measured on Zen 5,
    2^19 cases on one core, 10^7 dot products per CPU second, per-element / network: Hopper
    fp16 K = 16 7.4 / 9.1 on 16 lanes, 10.4 / 8.0 on 32; e4m3 K = 32 4.8 / 7.2, 4.6 / 8.6;
    bf16 K = 16 8.4 / 9.2, 11.2 / 9.8; tf32 K = 8 9.2-13 / 14.3, 12.3 / 11.1 (lane by lane:
    6.5 for fp16 and 3.9 for e4m3 on 16 lanes). With the per-case kernel's schedule
    (:func:`schedule` ``smallest_first``) and narrowing, 32 lanes, interleaved runs: fp16 K = 16
    10.9-11.2 / 11.4-11.7, fp16 K = 32 2.2-2.6 / 3.6, bf16 K = 16 10.5 / 11.2. So the network
    runs except for elements of 4 bytes or more on 32 lanes, and where ``lanes`` or ``cs`` is not
    a power of 2.

    ``narrow``: elements held in wider integers than their values need (fp16 bits in uint64)
    are truncated to ``narrow`` bits as they are loaded, and transposed and buffered at that
    width: the same shuffles as for elements stored that narrow."""
    mt = ptr.type.pointee
    et = ir.IntType(narrow) if narrow and narrow < mt.width else mt
    vt = ir.VectorType(et, lanes)
    buf = entry_bld.alloca(vt, size=cs)
    p = bld.gep(ptr, [bld.mul(idx, ir.Constant(I64, cs))])
    total, w = lanes * cs, VECTOR_BITS // et.width
    n = total // w
    big = None
    i32 = ir.IntType(32)
    network = n >= 2 and _pow2(lanes) and _pow2(cs) and total % w == 0 and (lanes < 32 or et.width < 32)
    if et is not mt and not network:       # the rows loaded at once in their memory type, truncated
        big = bld.trunc(bld.load(bld.bitcast(p, ir.VectorType(mt, total).as_pointer()), align=mt.width // 8),
                        ir.VectorType(et, total))
    elif et is not mt:
        # the rows loaded as vectors of VECTOR_BITS in their memory type, each truncated, and
        # concatenated two by two into vectors of VECTOR_BITS of the narrow type
        wm = VECTOR_BITS // mt.width
        parts = [bld.trunc(bld.load(bld.bitcast(bld.gep(p, [ir.Constant(I64, t * wm)]),
                                                ir.VectorType(mt, wm).as_pointer()), align=mt.width // 8),
                           ir.VectorType(et, wm)) for t in range(-(-total // wm))]
        while parts[0].type.count < w:
            cnt = parts[0].type.count
            parts = [bld.shuffle_vector(parts[t], parts[t + 1], ir.Constant(ir.VectorType(i32, 2 * cnt),
                                                                              list(range(2 * cnt))))
                     for t in range(0, len(parts), 2)]
        big = parts
    if network:
        # log2(lanes) perfect shuffles (interleave the first half with the second) rotate an
        # element's index (case, element) to (element, case): n two-vector shuffles a stage
        wt = ir.VectorType(et, w)
        vecs = big if big is not None else [
            bld.load(bld.bitcast(bld.gep(p, [ir.Constant(I64, t * w)]), wt.as_pointer()), align=et.width // 8)
            for t in range(n)]
        lo = ir.Constant(ir.VectorType(i32, w), [m // 2 + (w if m % 2 else 0) for m in range(w)])
        hi = ir.Constant(ir.VectorType(i32, w), [w // 2 + m // 2 + (w if m % 2 else 0) for m in range(w)])
        for _ in range(lanes.bit_length() - 1):
            a, b = vecs[:n // 2], vecs[n // 2:]
            vecs = [v for t in range(n // 2) for v in (bld.shuffle_vector(a[t], b[t], lo),
                                                       bld.shuffle_vector(a[t], b[t], hi))]
        base = bld.bitcast(buf, wt.as_pointer())
        for t, v in enumerate(vecs):
            bld.store(v, bld.gep(base, [ir.Constant(I64, t)]), align=et.width // 8)
        return buf
    if big is None:
        big = bld.load(bld.bitcast(p, ir.VectorType(et, total).as_pointer()), align=et.width // 8)
    for j in js:
        mask = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [j + cs * lane for lane in range(lanes)])
        col = bld.shuffle_vector(big, ir.Constant(big.type, ir.Undefined), mask)
        bld.store(col, bld.gep(buf, [ir.Constant(I64, j)]), align=et.width // 8 * lanes)
    return buf


PREFETCH = 4
"""Vectors of cases ahead that the loop prefetches the operands it reads case by case (one
``prefetcht0`` per cache line); 0: none. The hardware prefetcher alone leaves the loop waiting on
memory for batches beyond the caches: measured on Zen 5, 2^20 cases on one core, 32 lanes,
10^7 dot products per CPU second without / with 8 ahead: Hopper fp16 K = 16 10.0 / 10.7, e4m3
K = 32 8.5-9.4 / 10.4-11.2; on a busy machine (load 5.6, interleaved runs) 2, 4, 8, 16 ahead:
fp16 12.6-12.8, 12.0-12.7, 11.0-11.1, 10.4-11.0; e4m3 11.3-11.4 (2), 11.3-11.4 (4),
10.6-10.9 (8): what is prefetched further ahead is evicted again before it is read."""


def _prefetch(mod, bld, base, inputs, idx, lanes):
    """Prefetch the elements operands ``a``, ``b``, ``c`` and the scales hold for the vector of
    cases :data:`PREFETCH` iterations ahead (case strides >= 1; a broadcast row stays cached)."""
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = _declare(mod, "llvm.prefetch.p0i8", ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
    used = {o for o, _ in inputs.values()}
    for opnd, (ptr, ld, cs, _) in base.items():
        if opnd not in used or cs < 1 or (cs == 1 and ld is not None):
            continue                      # a (K, N) array's rows: K streams, left to the hardware
        esz = ptr.type.pointee.width // 8
        ahead = bld.mul(bld.add(idx, ir.Constant(I64, PREFETCH * lanes)), ir.Constant(I64, cs * esz))
        start = bld.gep(bld.bitcast(ptr, i8p), [ahead])
        for off in range(0, lanes * cs * esz, 64):
            bld.call(fn, [bld.gep(start, [ir.Constant(I64, off)]) if off else start, ir.Constant(i32, 0),
                          ir.Constant(i32, 3), ir.Constant(i32, 1)])


VECTOR_BITS = 512
"""The vectors the rows are read in by :func:`_transpose` (an AVX-512 register)."""


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _from_buffer(bld, bufs, opnd, j, lanes):
    buf = bufs[opnd]
    return bld.load(bld.gep(buf, [ir.Constant(I64, j)]), align=buf.type.pointee.element.width // 8 * lanes)


def _shift(bld: ir.IRBuilder, op: str, x, amount, w: int, amount_node: Node, lanes: int):
    """SMT-LIB shift: amounts >= w give 0 (``ashr``: the sign bit everywhere)."""
    full = {"shl": lambda: const(w, 0, lanes), "lshr": lambda: const(w, 0, lanes),
            "ashr": lambda: bld.ashr(x, const(w, w - 1, lanes))}[op]
    do = {"shl": bld.shl, "lshr": bld.lshr, "ashr": bld.ashr}[op]
    if amount_node.op == "const":
        return full() if amount_node.p[0] >= w else do(x, amount)
    big = bld.icmp_unsigned(">=", amount, const(w, w, lanes))
    return bld.select(big, full(), do(x, amount))
