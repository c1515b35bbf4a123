"""Table 9 as campaign tasks: :func:`lemma_task` proves one signature group of equal models,
:func:`lemma_batch_task` the groups that share one lemma-B formula (:func:`round_key`), so that a
worker proves the shared lemma once; :func:`lemma_plan` groups the models so (``mmaprobe bound
all``) and reads the tasks' results back as one row per group."""

from __future__ import annotations

from dataclasses import dataclass

from smtmodel.catalog import get_model
from smtmodel.model import Model

from .formula import by_signature
from .lemmas import round_key
from .report import lemma_table


def lemma_task(model_ids: list[str], solver: str, timeout: float, refute: bool) -> dict:
    """Table 9 for one signature group of equal models (a campaign task): its row and log line."""
    lines = []
    (row,) = lemma_table([get_model(m) for m in model_ids], solver, timeout, refute=refute, log=lines.append)
    return {"status": "done", "row": row, "line": "\n".join(lines)}


def lemma_batch_task(groups: list[list[str]], solver: str, timeout: float, refute: bool) -> dict:
    """Table 9 for signature groups that share lemma B (a campaign task of ``bound all``): their
    rows by first model id, and the log lines; the shared lemma is proved once."""
    lines, rows = [], {}
    for ids in groups:
        (row,) = lemma_table([get_model(m) for m in ids], solver, timeout, refute=refute, log=lines.append,
                             wide=len(groups) > 1)
        rows[ids[0]] = row
    return {"status": "done", "rows": rows, "line": "\n".join(lines)}


@dataclass
class LemmaPlan:
    """The models of a Table 9 run as tasks: ``groups``, the signature groups of equal models (one
    row each); ``batches``, the groups that share one lemma-B formula (one task each)."""

    groups: list[list[Model]]
    batches: list[list[list[Model]]]

    def tasks(self) -> list[tuple[str, list[list[str]]]]:
        """Per batch: its task key (the first model's id) and the model ids of its groups, the
        first argument of :func:`lemma_batch_task`."""
        return [(b[0][0].id, [[m.id for m in ms] for ms in b]) for b in self.batches]

    def rows(self, results: dict) -> tuple[list[dict], bool]:
        """One row per group from the tasks' ``results`` (by task key), and whether every task was
        done; an undone task's groups get a row with its status and reason."""
        first = {ms[0].id: b[0][0].id for b in self.batches for ms in b}
        out, complete = [], True
        for ms in self.groups:
            r = results[first[ms[0].id]]
            if r.get("status") == "done":
                out.append(r["rows"][ms[0].id])
            else:
                out.append({"model": ms[0].id, "same_as": [m.id for m in ms[1:]], "status": r["status"],
                            "reason": r.get("reason", "")})
                complete = False
        return out, complete


def lemma_plan(models) -> LemmaPlan:
    """``models`` grouped by signature, and the groups batched by their lemma-B formula."""
    groups = by_signature(models)
    batches: dict = {}
    for ms in groups:
        batches.setdefault(round_key(ms[0]), []).append(ms)
    return LemmaPlan(groups, list(batches.values()))
