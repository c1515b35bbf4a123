"""Bitwuzla reading the SMT-LIB2 text that z3 prints for the same core terms (built on the z3
backend); values of non-variable terms are read back by evaluating them with z3 on Bitwuzla's
model of the declared constants."""

from __future__ import annotations

import time

from .result import Engine, Result, Sat, Unknown, Unsat, cached_check, ms


def smt2_text(terms: list, comment: str = "", apart: bool = False) -> str:
    """SMT-LIB2 text (declarations, assertions, check-sat) of z3-backend core predicates.

    ``apart``: print a copy translated into a context of its own, leaving the terms' context
    untouched (printing creates terms, and z3's later search on that context follows term ids:
    the proof cache prints before z3 solves, and must not change how z3 solves)."""
    import z3

    if apart:
        ctx = z3.Context()
        s = z3.Solver(ctx=ctx)
        s.add([t.v.translate(ctx) for t in terms])
    else:
        s = z3.Solver()
        s.add([t.v for t in terms])
    head = "".join(f"; {line}\n" for line in comment.splitlines()) if comment else ""
    return head + "(set-logic QF_BV)\n" + s.to_smt2()


def bitwuzla_check(terms: list, timeout: float, text: str | None = None) -> tuple[str, str, dict | None]:
    """Bitwuzla on the SMT-LIB2 text of z3-backend core predicates (``text``: that text, when
    already printed).

    Returns (status, reason, model) with model = {declared symbol: (value, width)} when sat."""
    import bitwuzla as bw

    opts = bw.Options()
    opts.set(bw.Option.PRODUCE_MODELS, True)
    opts.set(bw.Option.TIME_LIMIT_PER, ms(timeout))
    parser = bw.Parser(bw.TermManager(), opts)
    parser.parse(smt2_text(terms) if text is None else text, True, False)
    slv = parser.bitwuzla()
    r = str(slv.check_sat())
    if r == "sat":
        return "sat", "", {t.symbol(): (int(slv.get_value(t).value(2), 2), t.sort().bv_size())
                           for t in parser.get_declared_funs()}
    if r == "unsat":
        return "unsat", "", None
    return "unknown", "timeout", None


class BitwuzlaEngine(Engine):
    name = "bitwuzla"

    def __init__(self):
        import bitwuzla  # noqa: F401  (fail early where it is not installed)

        from ..bv.z3_backend import Z3Backend
        self.B = Z3Backend()

    def check(self, assertions: list, variables: dict, timeout: float) -> Result:
        """Decide the assertions; an unsat answer is read from / kept in the proof cache
        (keyed by the SMT-LIB2 text Bitwuzla reads)."""
        t0 = time.perf_counter()
        text = smt2_text(assertions)

        def run():
            status, reason, model = bitwuzla_check(assertions, timeout, text)
            dt = time.perf_counter() - t0
            if status == "sat":
                return Sat({n: _value(x.v, model) for n, x in variables.items()}, dt, self.name)
            if status == "unsat":
                return Unsat(dt, self.name)
            return Unknown(reason, dt, self.name)
        return cached_check(self.name, text, run)


def _value(term, model: dict) -> int:
    """The value of a z3 term under Bitwuzla's model (an absent constant is unconstrained: 0)."""
    import z3

    if z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        return model.get(term.decl().name(), (0, 0))[0]
    subs = [(z3.BitVec(name, w), z3.BitVecVal(v, w)) for name, (v, w) in model.items()]
    return (z3.simplify(z3.substitute(term, *subs)) if subs else z3.simplify(term)).as_long()
