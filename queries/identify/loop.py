"""The closed loop (seed 000 §3's feature probing and seed 001 Algorithm 1, automated): design a
batch of probes that splits the live hypotheses best in the worst case, run it on the device in
one launch, keep the hypotheses that reproduce every answer, repeat until the pool cannot split
the survivors; then ask the solver (:func:`queries.distinguish.distinguish`, the twin search
first) for an input that does, or for a proof that none exists; finally verify on >= 10^5 cases.

Cost: a large space is never materialised. Before the first answer the design sees a sample of
the space (with every catalog model in it); after it, the whole space is streamed once, each point
checked against the answers in stages (most wrong points fail on the first 32 cases), and only
the survivors are kept (as indices). Later rounds evaluate the survivors only.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from smtmodel.catalog import all_models
from smtmodel.catalog.spaces import Space

from ..distinguish import distinguish
from .cases import Cases
from .design import choose, pad, partition
from .devices import Timed
from .errors import IdentifyError, NeedAnswers
from .batched import evaluate, first_mismatches
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
    solver_pairs: int = 6         # solver questions per stage
    container_bits: bool = True   # TF32 probes with low container bits set (not for vector files)
    jobs: int = 1                 # processes streaming a large space (slices of stream_slice points)
    stream_slice: int = 1 << 16
    progress: object = None       # callable(str) or None


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
    status: str                   # identified | no-fit | pending | max-launches
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

    def spec(self, i: int) -> str:
        return self.space.spec(i)


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
    def __init__(self, space: Space, device, settings: Settings, journal=None):
        self.space, self.s = space, settings
        self.device = Timed(device)
        self.journal = journal or NoJournal()
        self.rng = np.random.default_rng(settings.seed)
        k = settings.k
        base = space.base
        self.obs, self.ans = Cases.empty(k, k // base.scale_block if base.scale_fmt else None), np.zeros(0, np.uint64)
        self.out = Outcome("identified", space, catalog=catalog_points(space), killed=Killed(space.size))
        self.seen: dict = {}          # probe bytes -> the device's answer (a device must answer alike)

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
        """Every point of the space checked against every answer so far, a slice of the space at
        a time, groups of points one twin evaluation each (:mod:`.batched`)."""
        live, t0 = [], time.perf_counter()
        size, step = self.space.size, self.s.stream_slice
        slices = [(lo, min(size, lo + step)) for lo in range(0, size, step)]
        if self.s.jobs > 1 and len(slices) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            ex = ProcessPoolExecutor(self.s.jobs, mp_context=multiprocessing.get_context("spawn"))
            results = ex.map(_stream_slice, [(self.space, lo, hi, self.obs, self.ans) for lo, hi in slices])
        else:
            ex = None
            results = (_stream_slice((self.space, lo, hi, self.obs, self.ans)) for lo, hi in slices)
        try:
            for (lo, hi), fm in zip(slices, results):
                idx = np.arange(lo, hi)
                live.extend(int(i) for i in idx[fm < 0])
                self.out.killed.update(idx[fm >= 0], fm[fm >= 0])
                self.say(f"  checked {hi}/{size} hypotheses, {len(live)} fit "
                         f"({time.perf_counter() - t0:.0f} s)")
        finally:
            if ex is not None:
                ex.shutdown(cancel_futures=True)
        return live

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

    def _solver_stage(self, live: list[int]) -> Cases | None:
        """Ask the solver to split the representative from the other survivors; proofs of
        equivalence and timeouts are recorded; distinguishing inputs are returned as probes."""
        rep = self.preferred(live)
        asked, found = 0, []
        for i in live:
            if i == rep or i in self.out.proofs or asked >= self.s.solver_pairs:
                continue
            asked += 1
            a, b = self.space.spec(rep), self.space.spec(i)
            self.say(f"  solver: {a} vs {b} ...")
            res = distinguish(a, b, k=self.s.k, solver=self.s.solver, timeout=self.s.solver_timeout)
            if res.status == "sat":
                v = res.vectors[0]
                sc = (np.array([v.a_scale], np.uint64), np.array([v.b_scale], np.uint64)) if v.a_scale else ()
                found.append(Cases(np.array([v.a], np.uint64), np.array([v.b], np.uint64), np.array([v.c], np.uint64),
                                   *sc))
            elif res.status == "unsat":
                self.out.proofs[i] = f"equivalent at k={self.s.k} (unsat, {res.solver})"
            else:
                self.out.proofs[i] = f"not split: solver {res.status} ({res.reason})"
        if not found:
            return None
        out = found[0]
        for c in found[1:]:
            out = out + c
        return out

    # ---- the loop ------------------------------------------------------------------------
    def run(self) -> Outcome:
        t0 = time.perf_counter()
        out, s = self.out, self.s
        prior = getattr(self.device.device, "prior", lambda: None)()
        if prior is not None:
            cases, d = prior
            if cases.k != s.k:
                raise IdentifyError(f"the capture has k={cases.k}, this run k={s.k}")
            self._consistent(cases, np.asarray(d, np.uint64))
            self._observe(cases, d)
            self.say(f"capture: {len(cases)} answered cases")
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
                purpose = "solver"
                rec = self.journal.peek()      # solvers race: on resume, replay their inputs as recorded
                if rec is not None and rec.get("purpose") == "solver" and rec.get("cases"):
                    batch = Cases.from_json(rec["cases"], self.space.base.in_key, self.space.base.c_fmt,
                                            self.space.base.scale_fmt)
                else:
                    batch = self._solver_stage(live)
                if batch is None:
                    break
            if out.launches >= s.max_launches:
                out.status, out.message = "max-launches", f"stopped after --max-launches {s.max_launches}"
                out.classes = self._classes(cand, mat)
                break
            self.say(f"round {rnd}: {len(live) if live is not None else self.space.size} live, "
                     f"launch {out.launches + 1} with {len(batch)} probes ({purpose})")
            try:
                d = self._launch(purpose, batch)
            except NeedAnswers as exc:
                out.status, out.pending, out.message = "pending", exc, str(exc)
                out.classes = self._classes(cand, mat)
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
                out.class_status = self._class_status()
        elif out.live:
            out.winner = self.preferred(out.live)
        out.seconds = time.perf_counter() - t0
        return out

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
        """Whether the points left were proved equivalent to the winner or just not split."""
        out = self.out
        others = [i for i in out.live if i != out.winner]
        if not others:
            return "one point"
        proved = [i for i in others if out.proofs.get(i, "").startswith("equivalent")]
        if len(proved) == len(others):
            return f"{len(out.live)} points, every one proved equivalent to the winner by the solver at k={self.s.k}"
        return (f"{len(out.live)} points: {len(proved)} proved equivalent by the solver, {len(others) - len(proved)} "
                f"not split by the pool of probes (not proved equivalent)")

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
        """(point, outputs on ``cases``) for the winner, then every other point of the class, read
        in batches (one evaluation per group of run-time parameters): a class the pool did not
        split can hold the device's point anywhere, not only among its first members."""
        out = self.out
        order = ([out.winner] + [i for i in out.live if i != out.winner])[:self.VERIFY_MAX]
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
        cases = verification_cases(self.space.base, s.k, s.verify, s.seed)
        self.say(f"verifying on {len(cases)} random and adversarial cases")
        try:
            d = self._launch("verify", cases, regen={"seed": s.seed, "n": s.verify})
        except NeedAnswers as exc:
            out.status, out.pending, out.message = "pending", exc, f"verification: {exc}"
            return
        out.verify_launches += 1
        fits, near, wrong = [], [], set()
        terms = None
        for i, got in self._class_outputs(cases):
            bad = np.flatnonzero(got != d)
            if not bad.size:
                fits.append(i)
                break
            wrong.add(i)
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
    """First wrong answers of the points lo..hi-1 (a worker's share of the stream)."""
    space, lo, hi, obs, ans = job
    return first_mismatches(space, np.arange(lo, hi), obs, ans)


def identify(space: Space, device, settings: Settings, journal=None) -> Outcome:
    """Run the loop; see :class:`Identify`."""
    if space.size == 0:
        raise IdentifyError("the space is empty")
    return Identify(space, device, settings, journal).run()


def stderr_progress(force: bool = False):
    """A progress printer for stderr (None, i.e. quiet, when stderr is not a terminal)."""
    if not (force or sys.stderr.isatty()):
        return None
    return lambda text: print(text, file=sys.stderr, flush=True)
