"""The closed loop (seed 000 §3's feature probing and seed 001 Algorithm 1, automated): design a
batch of probes that splits the live hypotheses best in the worst case, run it on the device in
one launch, keep the hypotheses that reproduce every answer, repeat until the pool cannot split
the survivors; then split the class or prove it (:mod:`.split`: identical traced terms, the twin
search's probes aimed at the class, launched; the SMT solvers where asked); finally verify on
>= 10^5 cases and say what the answers determine: "identified" (one point, or every point proved
to compute alike) or "narrowed" (the behaviours left). Where nothing fits, :func:`identify` can go
on in a second space (the open ranges) with the answers so far.

Cost: a large space is never materialised. Before the first answer the design sees a sample of
the space (with every catalog model in it); after it, the whole space is streamed once, whole
groups at a time, each point checked against the answers in stages (most wrong points fail on
the first answer), and only the survivors are kept (as indices). Later rounds evaluate the
survivors only."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from smtmodel.catalog import all_models
from smtmodel.catalog.spaces import Space
from smtmodel.workers import default_jobs as cpus
from smtmodel.workers import process_map

from smtmodel import solve as _solve

from ..distinguish import distinguish
from .cases import Cases
from .design import choose, pad, partition
from .devices import Timed
from .errors import IdentifyError, NeedAnswers
from .batched import evaluate, first_mismatches, stream_order
from .hypotheses import model_of, outputs, try_outputs
from .journal import NoJournal


@dataclass
class Settings:
    k: int
    seed: int = 0
    max_launches: int = 6
    batch: int = 256              # probes per launch
    sample: int = 256             # points of the space the first design sees
    design_cap: int = 384         # live points a design evaluates at most
    design_budget: int = 1 << 18  # (point, probe) readings a design makes at most: a larger pool is subsampled
    pool_structured: int = 2      # rounds of the structured probe kinds per pool
    pool_random: int = 1024
    verify: int = 100_000
    solver: str = "portfolio"
    solver_timeout: float = 10.0
    solver_pairs: int = 16        # SMT questions per stage at most (0: none; identical terms and the twin search always run)
    solver_budget: float = 60.0   # seconds the SMT questions of a run may take in all (0: none)
    container_bits: bool = True   # TF32 probes with low container bits set (not for vector files)
    jobs: int = 0                 # processes streaming a large space (0: default_jobs(); slices of stream_slice points)
    stream_slice: int = 1 << 16
    progress: object = None       # callable(str) or None


ENDINGS = {
    "launches": "the launches are spent (--max-launches)",
    "captured": "undecidable by the captured data: every captured input gives each pair left the same output",
    "no solver": "no SMT solver on this machine: the solver stage was skipped",
    "solver off": "the solver was not asked (--solver-pairs 0 or --solver-budget 0)",
    "solver budget": "the solver's time (--solver-budget) is spent",
    "solver unknown": "the solver gave no answer within --timeout",
}
"""Why a class of several behaviours stays whole ("narrowed"): the run names one of these."""


class Killed:
    """Per point of a space, the index of the first answer it got wrong (a NumPy array: an open
    space has 10^6 points); a dict's get/items/len over the points ruled out."""

    def __init__(self, size: int):
        self.first = np.full(size, -1, np.int64 if size < 1 << 20 else np.int32)

    def update(self, idx, first) -> None:
        self.first[np.asarray(idx, np.int64)] = np.asarray(first)

    def __setitem__(self, i, n):
        self.first[i] = n

    def get(self, i, default=None):
        n = int(self.first[i]) if i is not None and 0 <= i < len(self.first) else -1
        return default if n < 0 else n

    def __contains__(self, i):
        return self.get(i) is not None

    def __getitem__(self, i):
        n = self.get(i)
        if n is None:
            raise KeyError(i)
        return n

    def points(self) -> np.ndarray:
        return np.flatnonzero(self.first >= 0)

    def items(self):
        idx = self.points()
        return zip(idx.tolist(), self.first[idx].tolist())

    def __len__(self):
        return int((self.first >= 0).sum())

    def __bool__(self):
        return bool(len(self))


@dataclass
class Outcome:
    status: str                   # identified | narrowed | no-fit | pending | max-launches
    space: Space
    live: list = field(default_factory=list)
    winner: int | None = None
    launches: int = 0             # design and solver launches
    verify_launches: int = 0
    probes: int = 0
    seconds: float = 0.0
    rounds: list = field(default_factory=list)     # (purpose, probes, live after)
    proofs: dict = field(default_factory=dict)     # point -> "equivalent" | "unknown: ..." (vs the winner)
    killed: object = None                          # Killed: point -> index of the first answer it got wrong
    obs: Cases | None = None
    answers: np.ndarray | None = None
    classes: list = field(default_factory=list)    # pending: groups of live points the pool tells apart
    verified: int = 0
    counterexample: dict | None = None
    message: str = ""
    pending: NeedAnswers | None = None
    catalog: dict = field(default_factory=dict)    # point -> catalog model ids
    nearest: list = field(default_factory=list)    # no-fit: the points with fewest wrong answers, and what
    class_status: str = ""                         # several points left: proved equivalent, or not split
    behaviours: list = field(default_factory=list)  # the class in groups proved to compute alike (winner's first)
    solver_log: list = field(default_factory=list)  # SMT questions: {a, b, status, reason, seconds}
    fallback: dict | None = None                   # the space that fitted nothing before this one (auto)
    verify_note: str = ""                          # a verification on other cases than the 10^5 (a capture's)
    sampled: bool = False                          # pending before any answer: classes are of a sample
    ending: str = ""                               # why a class stays whole (ENDINGS), or "proved alike"
    pairs: list = field(default_factory=list)      # behaviours left: per pair, the captured check and a deciding input
    solver_note: str = ""                          # the solver stage skipped or cut short, and why

    def spec(self, i: int) -> str:
        return self.space.spec(i)

    @property
    def determined(self) -> bool:
        """Whether the answers determine the unit's function: one point left, or every point
        proved to compute alike (identical terms or the solver)."""
        return bool(self.live) and len(self.behaviours or [self.live]) == 1


def catalog_points(space: Space) -> dict:
    """Points of the space that are catalog models (or rivals): point -> their ids (models with
    equal parameters, e.g. Turing's and Ampere's fp16 T-FDPA, share a point)."""
    out = {}
    for m in all_models():
        if (m.scale_fmt, m.scale_block) != (space.base.scale_fmt, space.base.scale_block) \
                or (m.in_key, m.out_fmt) != (space.in_fmt, space.out_fmt):
            continue
        i = space.locate(m)
        if i is not None:
            out.setdefault(i, []).append(m.id)
    return out


class Identify:
    """One run of the loop over one space. ``prior`` (cases, answers) replaces the device's own
    prior answers (a capture's): the answers an earlier run over another space got (the automatic
    fall-back to the open space), whose ``launched`` (launches, probes, verification launches) count
    towards this run's; ``verified`` holds that run's verification answers by (seed, n), so the
    same cases are not launched twice."""

    def __init__(self, space: Space, device, settings: Settings, journal=None, *, prior=None,
                 launched=(0, 0, 0), verified=None):
        self.space, self.s = space, settings
        self.device = Timed(device)
        self.journal = journal or NoJournal()
        self.rng = np.random.default_rng(settings.seed)
        k = settings.k
        base = space.base
        self.obs, self.ans = Cases.empty(k, base.scale_count(k) if base.scale_fmt else None), np.zeros(0, np.uint64)
        self.out = Outcome("identified", space, catalog=catalog_points(space), killed=Killed(space.size))
        self.out.launches, self.out.probes, self.out.verify_launches = launched
        self.seen: dict = {}          # probe bytes -> the device's answer (a device must answer alike)
        self.prior = prior
        self.verified_answers: dict = dict(verified or {})    # (seed, n) -> (cases, answers)
        self.behaviours = None        # split.Behaviours, made when a class first needs it
        self.asked: dict = {}         # (spec a, spec b) -> the solver's QueryResult
        self.solver_spent = 0.0       # seconds of SMT questions so far (Settings.solver_budget)
        self.proved_pairs: list = []  # (point, point) the solver proved alike
        self.unlaunched = None        # probes that split the class but were not launched (Cases)
        self.stop = ""                # ENDINGS key: launches spent, or a capture without the answers

    # ---- progress ------------------------------------------------------------------------
    def say(self, text: str) -> None:
        if self.s.progress:
            self.s.progress(text)

    # ---- answers -------------------------------------------------------------------------
    def _observe(self, cases: Cases, d: np.ndarray) -> int:
        start = len(self.obs)
        self.obs = self.obs + cases
        self.ans = np.concatenate([self.ans, d])
        return start

    def _launch(self, purpose: str, cases: Cases, regen=None) -> np.ndarray:
        d, new = self.journal.launch(self.device, purpose, cases, regen=regen)
        self._consistent(cases, np.asarray(d, np.uint64))
        return d

    def _consistent(self, cases: Cases, d: np.ndarray) -> None:
        """The same probe answered twice with different bits: the device is not deterministic
        (hardware is only if something is wrong); the journal keeps both answers."""
        m = self.space.base
        from smtmodel.formats import get_format
        fo = get_format(m.out_fmt)
        for j, key in enumerate(cases.keys()):
            prev = self.seen.setdefault(key, int(d[j]))
            if prev != int(d[j]):
                row = cases.case_dict(j, m.in_fmt, m.c_fmt, m.scale_fmt)
                nz = [f"a{i}={x}*b{i}={y}" for i, (x, y) in enumerate(zip(row["a"], row["b"]))
                      if int(x, 16) and int(y, 16)][:4]
                raise IdentifyError(f"the device answered the same probe twice with different bits "
                                    f"({fo.hex(prev)}, then {fo.hex(int(d[j]))}) on c={row['c']} {' '.join(nz)}: "
                                    f"a unit is deterministic unless something is wrong; the answers are kept")

    # ---- pruning -------------------------------------------------------------------------
    def _stream(self) -> list[int]:
        """Every point of the space checked against every answer so far, whole groups of points
        at a time (:func:`.batched.stream_order`), one twin evaluation per group and stage
        (:mod:`.batched`)."""
        live, t0 = [], time.perf_counter()
        size, done = self.space.size, 0
        slices = list(stream_order(self.space, self.s.stream_slice))
        jobs = self.s.jobs if self.s.jobs > 0 else default_jobs() if size > AUTO_JOBS_MIN else 1
        results = process_map(_stream_slice, [(self.space, idx, self.obs, self.ans) for idx in slices], jobs)
        try:
            for idx, fm in zip(slices, results):
                live.extend(int(i) for i in idx[fm < 0])
                self.out.killed.update(idx[fm >= 0], fm[fm >= 0])
                done += len(idx)
                self.say(f"  checked {done}/{size} hypotheses, {len(live)} fit "
                         f"({time.perf_counter() - t0:.0f} s)")
        finally:
            results.close()
        return sorted(live)

    def _prune(self, live: list[int], start: int) -> list[int]:
        cases, ans = self.obs.take(np.arange(start, len(self.obs))), self.ans[start:]
        idx = np.asarray(live, np.int64)
        fm = first_mismatches(self.space, idx, cases, ans)
        self.out.killed.update(idx[fm >= 0], fm[fm >= 0] + start)
        return [int(i) for i in idx[fm < 0]]

    # ---- choices -------------------------------------------------------------------------
    def preferred(self, live: list[int]) -> int:
        """The representative of a class: a catalog model where the class holds one, else the
        first point."""
        from smtmodel.catalog import get_model
        cat = [i for i in live if any(get_model(x).kind == "catalog" for x in self.out.catalog.get(i, ()))]
        cat = cat or [i for i in live if i in self.out.catalog]
        return (cat or sorted(live))[0]

    def _candidates(self, live):
        if live is None:
            return self.space.sample(self.s.sample, self.s.seed, include=tuple(sorted(self.out.catalog)))
        if len(live) <= self.s.design_cap:
            return list(live)
        cat = [i for i in live if i in self.out.catalog]
        rest = [i for i in live if i not in self.out.catalog]
        pick = self.rng.choice(len(rest), self.s.design_cap - min(len(cat), self.s.design_cap // 2), replace=False)
        return cat[:self.s.design_cap // 2] + [rest[j] for j in sorted(pick)]

    # ---- a class the pool leaves whole (queries.identify.split) ---------------------------
    def _groups(self, live: list[int]) -> list[list[int]]:
        """``live`` in behaviours (identical terms; merged where the solver proved two alike),
        the preferred point's behaviour first."""
        from .split import Behaviours
        if self.behaviours is None:
            self.behaviours = Behaviours(self.space, self.s.k)
        rep = self.preferred(live)
        groups = self.behaviours.groups([rep] + [i for i in live if i != rep])
        if self.proved_pairs:         # the solver's unsat answers join behaviours (transitively)
            where = {i: n for n, g in enumerate(groups) for i in g}
            parent = list(range(len(groups)))

            def root(n):
                while parent[n] != n:
                    n = parent[n]
                return n
            for a, b in self.proved_pairs:
                if a in where and b in where:
                    ra, rb = root(where[a]), root(where[b])
                    if ra != rb:
                        parent[max(ra, rb)] = min(ra, rb)
            merged: dict = {}
            for n, g in enumerate(groups):
                merged.setdefault(root(n), []).extend(g)
            groups = list(merged.values())
        return groups

    def _split(self, live: list[int], rnd: int):
        """(purpose, probes) that split the class, or (None, None): the twin search between its
        behaviours first (one member each, probes aimed at the class, designed like a round),
        then the SMT solvers where ``solver_pairs`` asks for them."""
        from .split import twin_pool
        s = self.s
        groups = self._groups(live)
        if len(groups) > 1:
            reps = [g[0] for g in groups]
            if len(reps) > s.design_cap:
                reps = reps[:1] + [reps[1:][j] for j in sorted(self.rng.choice(len(reps) - 1, s.design_cap - 1,
                                                                                 replace=False))]
            pool = twin_pool(self.space, reps, s.k, s.seed * 1000 + rnd)
            per = max(512, s.design_budget // max(1, len(reps)))
            if len(pool) > per:
                pool = pool.take(np.sort(self.rng.choice(len(pool), per, replace=False)))
            mat, ok = evaluate(self.space, np.asarray(reps, np.int64), pool)
            chosen = choose(mat[ok], s.batch)
            self.say(f"  twin search between {len(groups)} behaviours of {len(live)} points: "
                     f"{len(chosen)} splitting probe(s) in {len(pool)}")
            if chosen:
                return "twin", pool.take(pad(mat[ok], chosen, s.batch))
        rec = self.journal.peek()      # solvers race: on resume, replay their inputs as recorded
        if rec is not None and rec.get("purpose") == "solver" and rec.get("cases"):
            return "solver", Cases.from_json(rec["cases"], self.space.base.in_key, self.space.base.c_fmt,
                                             self.space.base.scale_fmt)
        if len(groups) > 1 and s.solver_pairs > 0:
            batch = self._solver_stage([g[0] for g in groups])
            if batch is not None:
                return "solver", batch
        return None, None

    def _solver_ready(self) -> bool:
        """Whether an SMT question may be asked now; if not, why is noted (:data:`ENDINGS`)."""
        s = self.s
        if s.solver_pairs <= 0 or s.solver_budget <= 0:
            self.out.solver_note = self.out.solver_note or "solver off"
            return False
        have = _solve.available_solvers()
        if not have or (s.solver != "portfolio" and s.solver not in have):
            self.out.solver_note = "no solver"
            return False
        if s.solver_budget - self.solver_spent < 0.5:
            self.out.solver_note = "solver budget"
            return False
        return True

    def _ask(self, a: int, b: int):
        """The solver on points ``a`` and ``b`` at this k, within what is left of the budget (each
        pair once per run): the QueryResult, or None where no question may be asked. An unsat
        answer joins their behaviours; a timeout is recorded in ``proofs``."""
        key = (self.space.spec(a), self.space.spec(b))
        if key in self.asked:
            return self.asked[key]
        if not self._solver_ready():
            return None
        timeout = min(self.s.solver_timeout, self.s.solver_budget - self.solver_spent)
        self.say(f"  solver: {key[0]} vs {key[1]} ({timeout:.0f} s at most) ...")
        t0 = time.perf_counter()
        res = distinguish(*key, k=self.s.k, solver=self.s.solver, timeout=timeout)
        took = time.perf_counter() - t0
        self.solver_spent += took
        self.asked[key] = res
        self.out.solver_log.append({"a": key[0], "b": key[1], "status": res.status, "reason": res.reason or "",
                                    "solver": res.solver, "seconds": round(took, 2)})
        if res.status == "unsat":
            self.proved_pairs.append((a, b))
            self.out.proofs.setdefault(b, f"equivalent at k={self.s.k} (unsat, {res.solver})")
        elif res.status != "sat":
            self.out.proofs.setdefault(b, f"not split: solver {res.status} ({res.reason})")
        return res

    @staticmethod
    def _vector_cases(res) -> Cases:
        v = res.vectors[0]
        sc = (np.array([v.a_scale], np.uint64), np.array([v.b_scale], np.uint64)) if v.a_scale else ()
        return Cases(np.array([v.a], np.uint64), np.array([v.b], np.uint64), np.array([v.c], np.uint64), *sc)

    def _solver_stage(self, reps: list[int]) -> Cases | None:
        """Ask the solver to split the first behaviour's member from the others' (``reps``, one
        member per behaviour): at most ``solver_pairs`` questions a stage, within
        ``solver_budget`` seconds a run; proofs of equivalence and timeouts are recorded (and
        said); distinguishing inputs are returned as probes."""
        rep = reps[0]
        asked, found = 0, []
        for i in reps[1:]:
            if asked >= self.s.solver_pairs:
                break
            if (self.space.spec(rep), self.space.spec(i)) in self.asked:
                continue
            res = self._ask(rep, i)
            if res is None:
                break
            asked += 1
            if res.status == "sat":
                found.append(self._vector_cases(res))
        if not found:
            return None
        out = found[0]
        for c in found[1:]:
            out = out + c
        return out

    PAIR_REPS = 24
    """Behaviours whose pairs :meth:`_pairs` reports at most (one member each: 276 pairs)."""

    def _read(self, points: list[int], cases: Cases) -> np.ndarray:
        """Outputs of ``points`` on ``cases`` (batched; point by point where a group cannot be)."""
        d, ok = evaluate(self.space, np.asarray(points, np.int64), cases)
        for r in np.flatnonzero(~ok):
            d[r] = outputs(model_of(self.space.spec(points[r])), cases)
        return d

    def _pairs(self, groups: list[list[int]]) -> None:
        """Per pair of behaviours left (one member each): how many answered cases give both the
        same output (all of them, or the pair would not be live: shown, not assumed), and an
        input that decides between them: from the probes that were not launched, the probe pool
        and the twin search's pool (the one with fewest non-zero products), else the solver's
        (within its budget). A pair the solver proves alike joins one behaviour."""
        from .split import twin_pool
        reps = [g[0] for g in groups][:self.PAIR_REPS]
        if len(reps) < 2:
            return
        parts = [self._pool(997), twin_pool(self.space, reps, self.s.k, self.s.seed * 1000 + 997)]
        if self.unlaunched is not None and len(self.unlaunched):
            parts.insert(0, self.unlaunched)
        pool = Cases.join_unique(parts)
        mat = self._read(reps, pool)
        seen = self._read(reps, self.obs) if len(self.obs) else np.zeros((len(reps), 0), np.uint64)
        terms = pool.nonzero_terms()
        m = self.space.base
        from smtmodel.formats import get_format
        fo = get_format(m.out_fmt)
        rows = []
        for x, y in ((x, y) for x in range(len(reps)) for y in range(x + 1, len(reps))):
            a, b = reps[x], reps[y]
            row = {"a": self.space.spec(a), "b": self.space.spec(b), "answers": int(len(self.obs)),
                   "same": int((seen[x] == seen[y]).sum())}
            diff = np.flatnonzero(mat[x] != mat[y])
            if diff.size:
                j = int(diff[np.argmin(terms[diff])])
                case = pool.case_dict(j, m.in_key, m.c_fmt, m.scale_fmt)
                case["expect"] = {row["a"]: fo.hex(int(mat[x, j])), row["b"]: fo.hex(int(mat[y, j]))}
                row.update(status="deciding input", how="probe pool", case=case)
            else:
                res = self._ask(a, b)
                if res is None:
                    row.update(status="no deciding input", how=ENDINGS.get(self.out.solver_note, "not asked"))
                elif res.status == "sat":
                    c = self._vector_cases(res)
                    da, db = (outputs(model_of(row[s]), c)[0] for s in ("a", "b"))
                    case = c.case_dict(0, m.in_key, m.c_fmt, m.scale_fmt)
                    case["expect"] = {row["a"]: fo.hex(int(da)), row["b"]: fo.hex(int(db))}
                    row.update(status="deciding input", how=f"solver ({res.solver})", case=case)
                elif res.status == "unsat":
                    row.update(status="proved alike", how=f"solver ({res.solver}) at k={self.s.k}")
                else:
                    row.update(status="no deciding input", how=f"solver {res.status} ({res.reason})")
            rows.append(row)
        self.out.pairs = rows

    def _settle(self) -> None:
        """The end of a run that fits: the class in behaviours; "identified" where the answers
        determine the function (one point, or every point proved alike), else "narrowed"."""
        out = self.out
        groups = self._groups(out.live) if len(out.live) > 1 else [list(out.live)]
        # the verification may have moved the winner: its behaviour first
        groups.sort(key=lambda g: out.winner not in g)
        out.behaviours = groups
        if len(groups) > 1 and (self.stop or self.s.solver_pairs > 0):
            self._pairs(groups)       # may prove pairs alike: regroup
            groups = self._groups(out.live)
            groups.sort(key=lambda g: out.winner not in g)
            out.behaviours = groups
        if len(groups) > 1:
            out.ending = self.stop or out.solver_note or ("solver unknown" if out.solver_log else "solver off")
        elif len(out.live) > 1 and self.proved_pairs:
            out.ending = "proved alike"
        how = "identical terms" if self.behaviours is not None else ""
        for i in groups[0]:
            if i != out.winner and not out.proofs.get(i, "").startswith("equivalent"):
                same = self.behaviours is not None and self.behaviours.node.get(i) is not None and \
                    self.behaviours.node.get(i) == self.behaviours.node.get(out.winner)
                out.proofs[i] = (f"equivalent at k={self.s.k} ({how}: one traced function)" if same else
                                 f"equivalent at k={self.s.k} (the solver, through a chain of proved pairs)")
        for g in groups[1:]:
            for i in g:
                out.proofs.setdefault(i, "not split by the probes or the twin search; " +
                                      ENDINGS.get(out.ending, out.ending))
        if len(groups) > 1:
            out.status = "narrowed"
        out.class_status = self._class_status()

    # ---- the loop ------------------------------------------------------------------------
    def run(self) -> Outcome:
        t0 = time.perf_counter()
        out, s = self.out, self.s
        prior = self.prior if self.prior is not None else getattr(self.device.device, "prior", lambda: None)()
        if prior is not None and len(prior[0]):
            cases, d = prior
            if cases.k != s.k:
                raise IdentifyError(f"the capture has k={cases.k}, this run k={s.k}")
            self._consistent(cases, np.asarray(d, np.uint64))
            self._observe(cases, d)
            self.say(f"{'answers so far' if self.prior is not None else 'capture'}: {len(cases)} answered cases")
        live = None
        rnd = 0
        while True:
            if live is None and len(self.obs):
                live = self._stream()
                out.rounds.append(("stream", 0, len(live)))
                self.say(f"{len(live)} of {self.space.size} hypotheses fit the {len(self.obs)} answers")
            if live is not None and len(live) <= 1:
                break
            rnd += 1
            cand = self._candidates(live)
            pool = self._pool(rnd)
            per = max(512, s.design_budget // max(1, len(cand)))
            if len(pool) > per:
                pool = pool.take(np.sort(self.rng.choice(len(pool), per, replace=False)))
            mat, ok = evaluate(self.space, np.asarray(cand, np.int64), pool)
            mat = mat[ok]
            cand = [c for c, o in zip(cand, ok) if o]
            chosen = choose(mat, s.batch)
            purpose = "design"
            if chosen:
                batch = pool.take(pad(mat, chosen, s.batch))
            elif live is None:
                batch = pool.take(np.arange(min(s.batch, len(pool))))
            else:
                purpose, batch = self._split(live, rnd)
                if batch is None:
                    break
            if out.launches >= s.max_launches and purpose != "design":
                # the pool cannot split the class and the launches are spent: what is left is narrowed
                # (verified, and each pair given the input that would decide it)
                self.unlaunched, self.stop = batch, "launches"
                self.say(f"  the launches are spent (--max-launches {s.max_launches}): {len(batch)} {purpose} "
                         f"probe(s) that split the class are not launched")
                break
            if out.launches >= s.max_launches:
                out.status, out.message = "max-launches", f"stopped after --max-launches {s.max_launches}"
                out.classes, out.sampled = self._classes(cand, mat), live is None
                break
            self.say(f"round {rnd}: {len(live) if live is not None else self.space.size} live, "
                     f"launch {out.launches + 1} with {len(batch)} probes ({purpose})")
            try:
                d = self._launch(purpose, batch)
            except NeedAnswers as exc:
                if live is not None and self._captured():
                    # a capture cannot answer what identify asks next: what it leaves is narrowed
                    # (undecidable by the captured data), each pair with its deciding input
                    self.unlaunched, self.stop, out.pending = batch, "captured", exc
                    self.say(f"  the capture does not answer the {exc.count} {purpose} probe(s) that would split "
                             f"the {len(live)} points left: narrowed by the captured data")
                    break
                out.status, out.pending, out.message = "pending", exc, str(exc)
                out.classes, out.sampled = self._classes(cand, mat), live is None
                if purpose != "design":       # the pool left them whole: their behaviours instead
                    out.classes = sorted(self._groups(live), key=len, reverse=True)
                break
            out.launches += 1
            out.probes += len(batch)
            start = self._observe(batch, d)
            if live is not None:
                live = self._prune(live, start)
                out.rounds.append((purpose, len(batch), len(live)))
        out.live = live if live is not None else []
        out.obs, out.answers = self.obs, self.ans
        if out.status == "identified":
            if not out.live:
                out.status = "no-fit"
                out.message = "no hypothesis in the space fits the device's answers"
                out.counterexample = self._closest_counterexample()
                out.nearest = self._nearest()
            else:
                out.winner = self.preferred(out.live)
                if s.verify:
                    self._verify()
                if out.status == "identified":
                    self._settle()
        elif out.live:
            out.winner = self.preferred(out.live)
        out.seconds = time.perf_counter() - t0
        return out

    def _captured(self) -> bool:
        """The device is a capture (answers known before any launch), as opposed to a file of probes
        a user answers launch by launch."""
        prior = getattr(self.device.device, "prior", lambda: None)()
        return prior is not None and len(prior[0]) > 0

    def _pool(self, rnd: int) -> Cases:
        from .pool import probe_pool
        return probe_pool(self.space.base, self.s.k, self.s.seed * 1000 + rnd, self.s.pool_structured,
                          self.s.pool_random, self.s.container_bits)

    def _classes(self, cand, mat) -> list:
        if not len(cand):
            return []
        lab = partition(mat)
        groups: dict = {}
        for i, g in zip(cand, lab):
            groups.setdefault(int(g), []).append(i)
        return sorted(groups.values(), key=len, reverse=True)

    # ---- honesty -------------------------------------------------------------------------
    def _case(self, cases: Cases, i: int, d_dev, d_model) -> dict:
        m = self.space.base
        from smtmodel.formats import get_format
        fo = get_format(m.out_fmt)
        row = cases.case_dict(i, m.in_key, m.c_fmt, m.scale_fmt)
        row.update(device=fo.hex(int(d_dev)), model=fo.hex(int(d_model)))
        return row

    def _closest_counterexample(self) -> dict | None:
        """The hypothesis that fitted longest, and the (smallest) answer it got wrong."""
        pts = self.out.killed.points()
        if not len(pts):
            return None
        first = self.out.killed.first[pts]
        i = int(pts[np.lexsort((pts, -first))[0]])
        n = int(self.out.killed.first[i])
        if n >= len(self.obs):
            return None
        spec = self.space.spec(i)
        d = try_outputs(spec, self.obs.take([n]))
        row = self._case(self.obs, n, self.ans[n], d[0] if d is not None else 0)
        row["hypothesis"] = spec
        return row

    def _class_status(self) -> str:
        """Whether the points left were proved to compute like the winner (by identical terms or
        the solver) or just not split."""
        out = self.out
        others = [i for i in out.live if i != out.winner]
        if not others:
            return "one point"
        proved = [i for i in others if out.proofs.get(i, "").startswith("equivalent")]
        terms = sum("identical terms" in out.proofs[i] for i in proved)
        how = ", ".join(x for x in (f"{terms} by identical terms" if terms else "",
                                    f"{len(proved) - terms} by the solver" if len(proved) > terms else "") if x)
        if len(proved) == len(others):
            return f"{len(out.live)} points, every one proved to compute like the winner at k={self.s.k} ({how})"
        asked_b = {r["b"] for r in out.solver_log if r["status"] not in ("sat", "unsat")}
        asked = [i for i in others if self.space.spec(i) in asked_b]
        n_beh = len(out.behaviours) if out.behaviours else 0
        return (f"{len(out.live)} points" + (f" in {n_beh} behaviours" if n_beh else "") +
                f": {len(proved)} proved to compute like the winner" + (f" ({how})" if proved else "") +
                f", {len(others) - len(proved)} not split by the probes or the twin search and not proved alike"
                + (f" ({len(asked)} asked of the solver without an answer)" if asked else "")
                + (f"; {ENDINGS.get(out.ending, out.ending)}" if out.ending else ""))

    def _nearest(self, n: int = 5, look: int = 256) -> list[dict]:
        """No fit: the points with the fewest wrong answers (among the ``look`` that fitted
        longest), each with its count, family and its smallest wrong answer."""
        out = self.out
        pts = out.killed.points()
        if not len(pts) or not len(self.obs):
            return []
        top = pts[np.argsort(-out.killed.first[pts], kind="stable")[:look]]
        d, ok = evaluate(self.space, top, self.obs)
        wrong = d != self.ans[None, :]
        counts = np.where(ok, wrong.sum(axis=1), len(self.obs) + 1)
        rows = []
        terms = self.obs.nonzero_terms()
        for r in np.lexsort((top, counts))[:n]:
            if not ok[r]:
                continue
            bad = np.flatnonzero(wrong[r])
            j = int(bad[np.argmin(terms[bad])])
            spec = self.space.spec(int(top[r]))
            row = {"hypothesis": spec, "wrong": int(counts[r]), "of": len(self.obs),
                   "family": spec.split("op=")[1].split(",")[0] if "op=" in spec else spec,
                   "example": self._case(self.obs, j, self.ans[j], d[r, j])}
            rows.append(row)
        return rows

    VERIFY_CHUNK = 64
    VERIFY_MAX = 4096      # class members read by a failing verification, at most

    def _class_outputs(self, cases):
        """(point, outputs on ``cases``) for the winner, then one member of every other behaviour
        of the class (:meth:`_groups`: members with identical terms compute alike, so one stands
        for all), read in batches (one evaluation, or one compiled kernel, per group of run-time
        parameters): a class the pool did not split can hold the device's point anywhere, not only
        among its first members."""
        out = self.out
        self._behaviour_of = {}
        if len(out.live) > 1:
            for g in self._groups(out.live):
                for i in g:
                    self._behaviour_of[i] = g
        first = self._behaviour_of.get(out.winner, [out.winner])
        reps = [g[0] for g in {id(g): g for g in self._behaviour_of.values()}.values() if g is not first]
        order = ([out.winner] + reps)[:self.VERIFY_MAX]
        yield order[0], outputs(model_of(self.space.spec(order[0])), cases)
        rest = order[1:]
        for s in range(0, len(rest), self.VERIFY_CHUNK):
            chunk = np.asarray(rest[s:s + self.VERIFY_CHUNK])
            d, ok = evaluate(self.space, chunk, cases)
            for r, i in enumerate(chunk):
                yield int(i), d[r] if ok[r] else outputs(model_of(self.space.spec(int(i))), cases)

    def _verify(self) -> None:
        out, s = self.out, self.s
        from .pool import verification_cases
        known = self.verified_answers.get((s.seed, s.verify))
        if known is not None:             # an earlier space's run launched these very cases
            cases, d = known
            self.say(f"verifying on the {len(cases)} verification answers already in")
        else:
            cases = verification_cases(self.space.base, s.k, s.verify, s.seed)
            self.say(f"verifying on {len(cases)} random and adversarial cases")
            try:
                d = self._launch("verify", cases, regen={"seed": s.seed, "n": s.verify})
            except NeedAnswers as exc:
                prior = getattr(self.device.device, "prior", lambda: None)()
                if prior is not None and len(prior[0]):
                    # a capture: its answered cases (random, not designed by this run) are the
                    # verification every survivor passed; the 10^5 cases wait in the next file
                    out.verified = len(prior[0])
                    out.verify_note = (f"on the file's {len(prior[0])} captured answers (not designed by identify; "
                                       f"every survivor reproduces them); the {exc.count} verification probes are "
                                       f"in {exc.path}: answer them and --resume to verify on them too")
                    out.pending = exc
                    return
                out.status, out.pending, out.message = "pending", exc, f"verification: {exc}"
                return
            out.verify_launches += 1
            self.verified_answers[(s.seed, s.verify)] = (cases, d)
        fits, near, wrong = [], [], set()
        terms = None
        for i, got in self._class_outputs(cases):
            bad = np.flatnonzero(got != d)
            if not bad.size:
                fits.append(i)
                break
            wrong.update(self._behaviour_of.get(i, [i]))      # its whole behaviour computes alike
            if i == out.winner:
                worst = (bad, got)
            terms = cases.nonzero_terms() if terms is None else terms
            j = int(bad[np.argmin(terms[bad])])
            spec = self.space.spec(i)
            near.append({"hypothesis": spec, "wrong": int(bad.size), "of": len(cases),
                         "family": spec.split("op=")[1].split(",")[0] if "op=" in spec else spec,
                         "example": self._case(cases, j, d[j], got[j])})
        if fits:
            # the first member that fits wins; the members the verification refuted leave the class
            out.live = [i for i in out.live if i not in wrong]
            out.winner = fits[0]
            out.verified = len(cases)
            return
        out.nearest = sorted(near, key=lambda r: r["wrong"])[:5]
        bad, got = worst
        j = int(bad[np.argmin(cases.take(bad).nonzero_terms())])
        out.counterexample = self._case(cases, j, d[j], got[j])
        out.counterexample["hypothesis"] = self.space.spec(out.winner)
        out.status = "no-fit"
        out.message = (f"no hypothesis in the space fits: the survivor {self.space.spec(out.winner)} "
                       f"gets {bad.size} of {len(cases)} verification cases wrong")


def _stream_slice(job) -> np.ndarray:
    """First wrong answers of the points ``idx`` (a worker's share of the stream)."""
    space, idx, obs, ans = job
    return first_mismatches(space, idx, obs, ans)


AUTO_JOBS_MIN = 1 << 18
"""Points from which a space is streamed in :func:`default_jobs` processes when the caller does not
say how many (``jobs=0``): below, starting the workers costs more than they save."""


def default_jobs() -> int:
    """Processes streaming a large space when the caller does not say (``jobs=0``): the CPUs this
    process may run on (:func:`smtmodel.workers.default_jobs`), at most 4 (each worker imports the
    twin once, ~1-2 CPU s)."""
    return min(4, cpus())


def identify(space: Space, device, settings: Settings, journal=None, fallback: Space | None = None) -> Outcome:
    """Run the loop; see :class:`Identify`. ``fallback``: where nothing in ``space`` fits, the
    run goes on in this space (the open ranges), with every answer so far and the same journal;
    the outcome says so (``fallback``) and counts the launches of both."""
    if space.size == 0:
        raise IdentifyError("the space is empty")
    first = Identify(space, device, settings, journal)
    out = first.run()
    if out.status != "no-fit" or fallback is None:
        return out
    if settings.progress:
        settings.progress(f"no hypothesis of {space.describe()} fits: {out.message}; going on in the open "
                          f"space ({fallback.size} hypotheses)")
    second = Identify(fallback, device, settings, journal, prior=(first.obs, first.ans),
                      launched=(out.launches, out.probes, out.verify_launches), verified=first.verified_answers)
    out2 = second.run()
    out2.fallback = {"space": space.describe(), "size": space.size, "message": out.message,
                     "launches": out.launches, "probes": out.probes, "seconds": round(out.seconds, 3),
                     "nearest": out.nearest[:3]}
    out2.seconds += out.seconds
    return out2


def stderr_progress(force: bool = False):
    """A progress printer for stderr (None, i.e. quiet, when stderr is not a terminal)."""
    if not (force or sys.stderr.isatty()):
        return None
    return lambda text: print(text, file=sys.stderr, flush=True)
