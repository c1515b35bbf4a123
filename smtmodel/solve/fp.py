"""FP-theory proof sessions: one small API over z3 and cvc5 for asserting core formulas and reading models.

A session owns a backend of the semantic core (``session.B``), so formulas are built with the
same operation code the twin runs. It also offers the SMT-LIB floating-point theory terms used
to *prove* the IEEE parts equal to the standard (``fp_*`` methods), and an SMT-LIB2 dump.
"""

from __future__ import annotations

import time

from ..bv import BV, Bool
from .result import Result, SolverError

_Z3_RM = {"RNE": "RNE", "RNA": "RNA", "RZ": "RTZ", "RU": "RTP", "RD": "RTN"}
_CVC5_RM = {"RNE": "ROUND_NEAREST_TIES_TO_EVEN", "RNA": "ROUND_NEAREST_TIES_TO_AWAY",
            "RZ": "ROUND_TOWARD_ZERO", "RU": "ROUND_TOWARD_POSITIVE", "RD": "ROUND_TOWARD_NEGATIVE"}


def make_session(solver: str = "z3", timeout: float | None = None) -> "Session":
    """A session over the SMT-LIB QF_BVFP theories (the engines with floating point: z3, cvc5)."""
    if solver not in FP_SESSIONS:
        raise SolverError(f"unknown solver {solver!r}; one of {', '.join(FP_SESSIONS)}")
    return FP_SESSIONS[solver](timeout)


class Session:
    name = "?"

    def var(self, name: str, width: int) -> BV:
        return self.B.var(name, width)

    def check(self) -> Result: ...
    def add(self, cond: Bool) -> None: ...
    def value(self, x: BV) -> int: ...
    def smtlib(self) -> str: ...


class Z3Session(Session):
    name = "z3"

    def __init__(self, timeout: float | None = None):
        import z3

        from ..bv.z3_backend import Z3Backend

        self.z3 = z3
        self.B = Z3Backend()
        self.s = z3.Solver()
        if timeout:
            self.s.set("timeout", int(timeout * 1000))

    def add(self, cond: Bool) -> None:
        self.s.add(cond.v if isinstance(cond, Bool) else cond)

    def push(self): self.s.push()
    def pop(self): self.s.pop()

    def check(self) -> Result:
        """Decide the assertions; an unsat answer is read from / kept in the proof cache (keyed
        by the SMT-LIB2 text z3 prints for them)."""
        from .result import cached_check
        # printed from a copy in a context of its own: printing creates terms, and z3's search
        # follows term ids, so printing in this context would change how z3 solves
        return cached_check("z3", lambda: self.s.translate(self.z3.Context()).to_smt2(), self._check)

    def check_blasted(self, timeout: float | None = None) -> Result:
        """Decide the assertions by z3's own reduction of the floating-point terms to bitvectors
        (tactics ``simplify; fpa2bv; simplify``, the translation z3's FP solver starts with) read
        as QF_BV by Bitwuzla. On the fp32 adder lemma (queries.bounds lemma D) this takes about a
        third of z3's time (11 s against 35 s, quiet machine). Unsat answers go through the proof
        cache (keyed by the QF_BV text, solver "z3 fpa2bv + bitwuzla"); a sat answer is decided
        again by :meth:`check` so that :meth:`value` has z3's model to read."""
        from .bitwuzla import bitwuzla_check
        from .result import Unsat, cached_check

        name = "z3 fpa2bv + bitwuzla"
        t0 = time.perf_counter()
        z3 = self.z3
        ctx = z3.Context()
        g = z3.Goal(ctx=ctx)
        g.add([a.translate(ctx) for a in self.s.assertions()])
        (sub,) = z3.Then("simplify", "fpa2bv", "simplify", ctx=ctx)(g)
        if any(z3.is_false(f) for f in sub):
            return Unsat(time.perf_counter() - t0, name)
        s = z3.Solver(ctx=ctx)
        s.add(sub.as_expr())
        text = "(set-logic QF_BV)\n" + s.to_smt2()

        def run() -> Result:
            status, reason, _ = bitwuzla_check([], timeout or 1e6, text)
            dt = time.perf_counter() - t0
            if status == "sat":
                res = self.check()
                res.solver = f"z3 (after {name} found a counterexample)"
                return res
            return Result(status, None, reason, dt, name)
        return cached_check(name, text, run)

    def _check(self) -> Result:
        t = time.perf_counter()
        r = self.s.check()
        dt = time.perf_counter() - t
        status = str(r)
        reason = self.s.reason_unknown() if status == "unknown" else ""
        if status == "sat":
            self._model = self.s.model()
        return Result(status, None, reason, dt, "z3")

    def value(self, x: BV) -> int:
        return self._model.eval(x.v, model_completion=True).as_long()

    def smtlib(self) -> str:
        return self.s.to_smt2()

    def text(self) -> str:
        """The assertions as s-expressions (z3's term printer): the same formula prints the same
        text whatever else the context holds (``to_smt2`` names shared subterms by how often the
        whole context refers to them)."""
        return "\n".join(a.sexpr() for a in self.s.assertions())

    # ---- SMT-LIB floating point ---------------------------------------------------------
    def fp_sort(self, e: int, s: int):
        return self.z3.FPSort(e, s)

    def fp_from_bits(self, bits: BV, e: int, s: int):
        return self.z3.fpBVToFP(bits.v, self.fp_sort(e, s))

    def fp_to_fp(self, rm: str, x, e: int, s: int):
        return self.z3.fpToFP(getattr(self.z3, _Z3_RM[rm])(), x, self.fp_sort(e, s))

    def fp_add(self, rm, x, y):
        return self.z3.fpAdd(getattr(self.z3, _Z3_RM[rm])(), x, y)

    def fp_mul(self, rm, x, y):
        return self.z3.fpMul(getattr(self.z3, _Z3_RM[rm])(), x, y)

    def fp_fma(self, rm, x, y, z):
        return self.z3.fpFMA(getattr(self.z3, _Z3_RM[rm])(), x, y, z)

    def fp_same(self, x, y) -> Bool:
        """SMT-LIB ``=`` on floats: identity (NaN = NaN, +0 != -0)."""
        return Bool(self.B, x == y)

    def fp_is_nan(self, x) -> Bool:
        return Bool(self.B, self.z3.fpIsNaN(x))

    def fp_is_inf(self, x) -> Bool:
        return Bool(self.B, self.z3.fpIsInf(x))


class Cvc5Session(Session):
    name = "cvc5"

    def __init__(self, timeout: float | None = None):
        import cvc5

        from ..bv.cvc5_backend import Cvc5Backend

        self.cvc5 = cvc5
        self.B = Cvc5Backend()
        self.tm = self.B.tm
        self.s = cvc5.Solver(self.tm)
        self.s.setOption("produce-models", "true")
        self.s.setLogic("QF_BVFP")
        self.s.setOption("fp-exp", "true")  # float sorts other than Float32/Float64
        if timeout:
            self.s.setOption("tlimit-per", str(int(timeout * 1000)))
        self.assertions: list = []

    def add(self, cond: Bool) -> None:
        t = cond.v if isinstance(cond, Bool) else cond
        self.assertions.append(t)
        self.s.assertFormula(t)

    def push(self): self.s.push()
    def pop(self): self.s.pop()

    def check(self) -> Result:
        t = time.perf_counter()
        r = self.s.checkSat()
        dt = time.perf_counter() - t
        if r.isSat():
            return Result("sat", None, "", dt, "cvc5")
        if r.isUnsat():
            return Result("unsat", None, "", dt, "cvc5")
        return Result("unknown", None, str(r.getUnknownExplanation()), dt, "cvc5")

    def value(self, x: BV) -> int:
        v = self.s.getValue(x.v)
        return int(v.getBitVectorValue(10))

    def smtlib(self) -> str:
        lines = ["(set-logic QF_BVFP)"]
        seen = set()
        for a in self.assertions:
            for name, sort in _free_consts(a):
                if name not in seen:
                    seen.add(name)
                    lines.append(f"(declare-const {name} {sort})")
        lines += [f"(assert {a})" for a in self.assertions]
        lines.append("(check-sat)")
        return "\n".join(lines) + "\n"

    # ---- SMT-LIB floating point ---------------------------------------------------------
    def _rm(self, rm):
        return self.tm.mkRoundingMode(getattr(self.cvc5.RoundingMode, _CVC5_RM[rm]))

    def fp_from_bits(self, bits: BV, e: int, s: int):
        op = self.tm.mkOp(self.cvc5.Kind.FLOATINGPOINT_TO_FP_FROM_IEEE_BV, e, s)
        return self.tm.mkTerm(op, bits.v)

    def fp_to_fp(self, rm: str, x, e: int, s: int):
        op = self.tm.mkOp(self.cvc5.Kind.FLOATINGPOINT_TO_FP_FROM_FP, e, s)
        return self.tm.mkTerm(op, self._rm(rm), x)

    def fp_add(self, rm, x, y):
        return self.tm.mkTerm(self.cvc5.Kind.FLOATINGPOINT_ADD, self._rm(rm), x, y)

    def fp_mul(self, rm, x, y):
        return self.tm.mkTerm(self.cvc5.Kind.FLOATINGPOINT_MULT, self._rm(rm), x, y)

    def fp_fma(self, rm, x, y, z):
        return self.tm.mkTerm(self.cvc5.Kind.FLOATINGPOINT_FMA, self._rm(rm), x, y, z)

    def fp_same(self, x, y) -> Bool:
        return Bool(self.B, self.tm.mkTerm(self.cvc5.Kind.EQUAL, x, y))

    def fp_is_nan(self, x) -> Bool:
        return Bool(self.B, self.tm.mkTerm(self.cvc5.Kind.FLOATINGPOINT_IS_NAN, x))

    def fp_is_inf(self, x) -> Bool:
        return Bool(self.B, self.tm.mkTerm(self.cvc5.Kind.FLOATINGPOINT_IS_INF, x))


def _free_consts(term):
    """(name, sort) of the free constants of a cvc5 term, in first-seen order."""
    import cvc5

    out, stack, seen = [], [term], set()
    while stack:
        t = stack.pop()
        if t.getId() in seen:
            continue
        seen.add(t.getId())
        if t.getKind() == cvc5.Kind.CONSTANT:
            out.append((str(t), str(t.getSort())))
        stack.extend(t[i] for i in range(t.getNumChildren()))
    return out


FP_SESSIONS = {"z3": Z3Session, "cvc5": Cvc5Session}
