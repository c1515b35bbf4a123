"""cvc5 on QF_BV with eager bit-blasting (``bitblast=eager``: 2-3x faster than its default on
this project's formulas)."""

from __future__ import annotations

import time

from .result import Engine, Result, Sat, Unknown, Unsat, ms


class Cvc5Engine(Engine):
    name = "cvc5"

    def __init__(self):
        from ..bv.cvc5_backend import Cvc5Backend
        self.B = Cvc5Backend()

    def check(self, assertions: list, variables: dict, timeout: float) -> Result:
        import cvc5
        t0 = time.perf_counter()
        s = cvc5.Solver(self.B.tm)
        s.setOption("produce-models", "true")
        s.setLogic("QF_BV")
        s.setOption("bitblast", "eager")
        s.setOption("tlimit-per", str(ms(timeout)))
        for t in assertions:
            s.assertFormula(t.v)
        r = s.checkSat()
        dt = time.perf_counter() - t0
        if r.isSat():
            return Sat({n: int(s.getValue(x.v).getBitVectorValue(10)) for n, x in variables.items()}, dt, self.name)
        if r.isUnsat():
            return Unsat(dt, self.name)
        expl = str(r.getUnknownExplanation())
        return Unknown("timeout" if "TIME" in expl.upper() else expl, dt, self.name)
