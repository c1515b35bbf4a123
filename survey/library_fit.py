"""The survey's library analysis: each captured call judged by (model, dataflow), on its recorded
block and on the digest of its whole D (docs/survey.md, "Library analysis").

Per call, three steps, cheap before expensive:

1. **the prediction**, made from the call's shape alone before the capture is read: the dispatch
   the project has for the GPU (:func:`prediction`; on the H100 the torch ``cublasGemmEx`` rule
   :mod:`smtmodel.dataflow.hopper_gemmex` for fp16/bf16, the borrowed cuBLASLt FP8 table for
   ``_scaled_mm``), judged on the block and the whole-D digest;
2. **the search**, where the prediction fails: every (model, dataflow) of the GPU's
   architecture over the named profiles, and the catalog model under split-K variants of them
   (S, k-tile width, serial or pairwise combine: :func:`variants`), each judged on the block;
3. the **digest** of the whole D for the block's fits (the block can hide what the whole D
   shows: a split that only other output tiles take).

A call that nothing fits is a finding: the result names what was searched and what a capture
would decide. A batch sweep is judged per M (the prediction per M first), and the M where the
prediction changes the dataflow are compared with the M where row 0's bits change.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from hw_runner.kernels import arch_num
from smtmodel.dataflow import PROFILES, DataflowError
from smtmodel.dataflow.dispatch import DispatchError
from smtmodel.model import ModelError

from .library import LibGemm, digest, predict

SPLITS = tuple(range(2, 17))
"""The split counts the search tries (the captured torch calls use 1 to 3, cuBLASLt FP8 up to 6)."""
TILES = (64, 128)
"""k-tile widths the split search tries (nvjet fp16/bf16: 64; cuBLASLt FP8 on Hopper: 128)."""
DIGEST_FITS = 4
"""At most this many of the block's fits are judged on the whole-D digest."""


def _whole(model, df, g: LibGemm, a, b, c, M: int) -> np.ndarray:
    return predict(model, df, replace(g, rows=M, cols=0), a, b, c, M)


def _out(df, g: LibGemm):
    return (replace(df, out=g.out_fmt) if (df.out == "model" and g.out_fmt != "fp32") else df).validate()


# ---- 1. the prediction ------------------------------------------------------------------------

def prediction(g: LibGemm, arch: str, M: int | None = None, workspace: int | None = None) -> dict:
    """What the project's dispatch for ``arch`` says the call computes: {source, model, dataflow,
    basis, kernel_class, splitk} or {source, reason} where it has no answer (said, never guessed).
    ``workspace``: the cuBLAS workspace in bytes (None: torch's default)."""
    from smtmodel.catalog import get_model
    M = M or g.M
    if arch_num(arch) != 90:
        return {"source": None, "reason": f"no dispatch table or rule for {arch}"}
    if g.op in ("matmul", "addmm"):
        from smtmodel.dataflow import hopper_gemmex as rule
        fin = "tf32" if (g.in_fmt == "fp32" and g.tf32) else g.in_fmt
        try:
            p = rule.predict(M, g.N, g.K, fin, g.out_fmt, workspace=workspace or rule.WORKSPACE)
        except DispatchError as e:
            return {"source": rule.NAME, "reason": str(e)}
        return {"source": rule.NAME, "model": get_model(p.model), "dataflow": p.dataflow, "basis": p.basis,
                "kernel_class": p.kernel_class, "splitk": p.splitk, "validated": p.validated}
    if g.op == "scaled_mm":
        from smtmodel.dataflow.tables import get_table
        name = "cublaslt-h100pcie-fp8"
        t = get_table(name)
        try:
            d = t.lookup(M, g.N, g.K, g.in_fmt, g.in_fmt, g.out_fmt, bool(g.fast_accum))
        except DispatchError as e:
            return {"source": name, "reason": str(e)}
        return {"source": name, "model": get_model(t.model_id(g.in_fmt, g.in_fmt)), "dataflow": d.dataflow,
                "basis": f"borrowed: {t.device}", "kernel_class": d.kernel_text(), "splitk": d.splitk,
                "validated": True}
    return {"source": None, "reason": f"no dispatch for {g.op}"}


def judge(model, df, g: LibGemm, a, b, c, block: np.ndarray, want_digest: str | None, M: int | None = None,
          digests: bool = True) -> dict:
    """{block: bool, digest: bool | None (not judged)} of one (model, dataflow)."""
    M = M or g.M
    try:
        got = predict(model, df, g, a, b, c, M)
    except (ModelError, DataflowError) as e:
        return {"block": False, "digest": None, "error": str(e)}
    ok = got.shape == block.shape and bool(np.array_equal(got, block))
    dg = None
    if ok and digests and want_digest:
        dg = digest(_whole(model, df, g, a, b, c, M)) == want_digest.split(";")[0]
    return {"block": ok, "digest": dg}


# ---- 2. the search ------------------------------------------------------------------------------

def candidates(g: LibGemm, arch: str) -> tuple[list, list]:
    """(models, dataflows) of the plain search: the architecture's catalog models and rivals of
    the call's formats, and the named profiles that apply (output format set to the call's)."""
    from smtmodel.catalog import all_models
    sm = arch_num(arch)
    fin = "tf32" if (g.in_fmt == "fp32" and g.tf32) else g.in_fmt
    models = [m for m in all_models() if m.sm == sm and m.in_key == fin and m.c_fmt == "fp32"
              and m.out_fmt == "fp32" and not m.scale_fmt]
    dfs = []
    for p in PROFILES.values():
        if p.alpha_from_scales != (g.op == "scaled_mm") or p.scale_a != "tensor" or p.scale_b != "tensor" \
                or p.combine_op != "fadd":
            continue
        try:
            dfs.append(_out(p, g))
        except DataflowError:
            continue
    return models, dfs


def variants(g: LibGemm, dfs: list) -> list:
    """Split-K variants of the unsplit profiles: S in :data:`SPLITS`, contiguous k-tiles of each
    width in :data:`TILES` (the profile's own for FP8), serial and pairwise combines."""
    out = []
    for df in dfs:
        if df.slices != 1 or df.c_entry != "epilogue" or df.combine != "serial":
            continue
        tiles = (df.tile,) if df.tile else TILES
        for t in tiles:
            for S in SPLITS:
                for comb in ("serial", "pairwise"):
                    try:
                        out.append(replace(df, tile=t, slices=S, combine=comb, assign="contiguous").validate())
                    except DataflowError:
                        continue
    return out


def block_problem(g: LibGemm, fin: str, a, b, c, M: int, rows: int, cols: int):
    """The recorded block as a GEMM of its own (an element reads only its row of A and column of
    B): a :class:`queries.gemm.spec.Problem` of the block's rows of A, columns of B and C (C as
    its exact fp32 value), with the call's alpha, beta and per-tensor scales."""
    from queries.gemm.spec import Problem
    from queries.gemm.structure import Structured
    from smtmodel.gemm import to_bits
    from .library import _values, fp32_round
    aa, bb = np.asarray(a[:rows], np.uint64), np.asarray(b[:, :cols], np.uint64)
    cc = None
    if g.op in ("addmm", "gemmex", "seed003") and c is not None:
        cc = np.asarray(c[:rows, :cols], np.uint64)
        if g.c_fmt != "fp32":
            cc = to_bits(_values(cc, g.c_fmt), "fp32")
    r, q = np.arange(rows), np.arange(cols)
    s = Structured(aa, r, bb, q, cc, None if cc is None else r, None if cc is None else q)
    params = {}
    if g.op == "scaled_mm":
        params = {"scale_a_bits": to_bits(np.array(fp32_round(g.scale_a)), "fp32"),
                  "scale_b_bits": to_bits(np.array(fp32_round(g.scale_b)), "fp32")}
    alpha, beta = (g.alpha, g.beta) if g.op in ("addmm", "gemmex", "seed003") else (1.0, 0.0)
    return Problem(s, fin, "fp32", alpha, beta, source=f"{g.name} block", params=params)


def search(g: LibGemm, arch: str, a, b, c, block: np.ndarray, want_digest: str | None, M: int | None = None,
           digests: bool = True) -> dict:
    """The block explained (:func:`queries.gemm.explain.explain_gemm`) by every (model, dataflow)
    of the plain space, then, where none fits, by the catalog model under the split-K variants;
    the first :data:`DIGEST_FITS` fits also judged on the whole-D digest."""
    from queries.gemm.explain import Observation, explain_gemm
    M = M or g.M
    models, dfs = candidates(g, arch)
    own = [m for m in models if m.kind == "catalog"]
    split = variants(g, dfs)
    fin = "tf32" if (g.in_fmt == "fp32" and g.tf32) else g.in_fmt
    problem = block_problem(g, fin, a, b, c, M, *block.shape)
    obs = [Observation("gpu", matrix=block, text="the recorded block")]
    fits, n = [], 0
    for ms, space in ((models, dfs), (own[:1], split)):
        if fits or not ms or not space:
            continue                       # the split variants only where no plain pair fits
        res = explain_gemm(problem, obs, models=ms, dataflows=space, backend="auto")
        n += res.space["hypotheses"]
        fits = [{"model": f["model"], "kind": f["kind"], "dataflow": f["dataflow"], "digest": None}
                for f in res.devices[0]["fits"] + res.devices[0]["fits_other_archs"]]
    for f in fits[:DIGEST_FITS] if digests and want_digest else []:
        from smtmodel.catalog import get_model
        from smtmodel.dataflow import parse_dataflow
        f["digest"] = digest(_whole(get_model(f["model"]), parse_dataflow(f["dataflow"]), g, a, b, c,
                                    M)) == want_digest.split(";")[0]
    searched = (f"{len(models)} model(s) x {len(dfs)} profile(s), then (where none fits) "
                f"{own[0].id if own else 'no catalog model'} under {len(split)} split-K variants "
                f"(S {SPLITS[0]}..{SPLITS[-1]}, k-tiles {'/'.join(map(str, TILES))} or the profile's, serial and "
                "pairwise combines), each explained on the block (queries.gemm.explain)")
    return {"tried": n, "fits": fits, "searched": searched}


DECIDE = ("a capture at K = one k-tile (no split possible) with inputs exact in the instruction's format "
          "separates the instruction's chain from the library's split and operand conversion; a K sweep "
          "(64, 128, ..., 4096) at that shape shows where the library starts to split")


# ---- 3. per call ------------------------------------------------------------------------------------

def analyse(g: LibGemm, arch: str, arrays: dict, a, b, c, digests_rec: dict | None = None,
            digests: bool = True, points: dict | None = None) -> dict:
    """The judgement of one captured call (module docstring). ``digests_rec``: the capture's
    {M: digest} (a dry run's placeholders count as none); ``digests``: judge whole-D digests
    (False: blocks only, said in the result); ``points``: the capture's per-M records (kernel
    names, held-out flags, variants)."""
    t0 = time.perf_counter()
    digests_rec = {k: v for k, v in (digests_rec or {}).items() if v and not str(v).startswith("(")}
    points = points or {}
    if g.ms:
        out = _sweep(g, arch, arrays, a, b, c, digests_rec, digests, points)
    elif g.op == "seed003":
        out = _seed003(g, arch, arrays)
    else:
        out = _call(g, arch, np.asarray(arrays[g.name], np.uint64), a, b, c, digests_rec.get(str(g.M)), g.M, digests,
                    points.get(str(g.M)))
    return out | {"digests_judged": digests, "seconds": round(time.perf_counter() - t0, 3)}


def kernels_split(names) -> bool | None:
    """Whether recorded kernel names show a split-K launch (a name with ``splitK``, any spelling,
    or a reduction kernel); None where no name was recorded."""
    if not names:
        return None
    flat = [n.lower().replace("-", "").replace("_", "") for n in names]
    return any("splitk" in n or "reduce" in n for n in flat)


def _variants(g, arch, M, point, pred) -> dict:
    """Per recorded variant: whether the prediction under its setting (the small workspace; the
    reduced-precision reduction off: the same dataflow) keeps the default's digest, against what
    the capture says."""
    from .torch_lib import WORKSPACE_SMALL, workspace_bytes
    out = {}
    for v, rv in (point or {}).get("variants", {}).items():
        ws = workspace_bytes(WORKSPACE_SMALL) if v.startswith("workspace") else None
        pv = prediction(g, arch, M, ws)
        same = None if "dataflow" not in pv or "dataflow" not in pred else pv["dataflow"] == pred["dataflow"]
        out[v] = {"predicted_same": same, "observed_same": rv.get("same_digest"),
                  "agrees": None if same is None or rv.get("same_digest") is None else same == rv["same_digest"]}
    return out


def _call(g, arch, block, a, b, c, want_digest, M, digests, point=None) -> dict:
    pred = prediction(g, arch, M)
    res = {"block": list(block.shape), "prediction": _pred_json(pred)}
    if point is not None:
        res["held_out"] = bool(point.get("held_out"))
        res["kernels"] = point.get("kernels", [])
        split = kernels_split(res["kernels"])
        if "splitk" in pred and split is not None:
            res["prediction"]["kernel_split_agrees"] = split == (pred["splitk"] > 1)
        if point.get("variants"):
            res["variants"] = _variants(g, arch, M, point, pred)
    if "model" in pred:
        res["prediction"] |= judge(pred["model"], _out(pred["dataflow"], g), g, a, b, c, block, want_digest, M,
                                   digests)
        if res["prediction"]["block"] and res["prediction"]["digest"] in (True, None):
            res["reproduced"] = True
            res["by"] = {"model": pred["model"].id, "dataflow": _out(pred["dataflow"], g).text(), "how": "prediction"}
            return res
    s = search(g, arch, a, b, c, block, want_digest, M, digests)
    res |= {"tried": s["tried"], "fits": s["fits"], "searched": s["searched"]}
    whole = [f for f in s["fits"] if f["digest"] in (True, None)]
    res["reproduced"] = bool(whole)
    if whole:
        res["by"] = {"model": whole[0]["model"], "dataflow": whole[0]["dataflow"], "how": "search"}
    else:
        res["finding"] = (f"nothing searched reproduces the {'x'.join(map(str, block.shape))} block"
                          + (" and the whole D" if s["fits"] else "") + f"; refuted: {s['searched']}; "
                          f"to decide: {DECIDE}")
    return res


def _pred_json(pred: dict) -> dict:
    if "model" not in pred:
        return {"source": pred["source"], "reason": pred["reason"]}
    return {"source": pred["source"], "model": pred["model"].id, "dataflow": pred["dataflow"].text(),
            "basis": pred["basis"], "kernel_class": pred["kernel_class"], "splitk": pred["splitk"],
            "validated": pred["validated"]}


def _sweep(g, arch, arrays, a, b, c, digests_rec, digests, points) -> dict:
    rows = {M: np.asarray(arrays[f"{g.name}/M{M}"], np.uint64) for M in g.ms}
    per_m = {}
    for M in g.ms:
        per_m[str(M)] = _call(g, arch, rows[M], a, b, c, digests_rec.get(str(M)), M, digests, points.get(str(M)))
    groups: list[list[int]] = []
    for M in g.ms:
        for grp in groups:
            if np.array_equal(rows[grp[0]][0], rows[M][0]):
                grp.append(M)
                break
        else:
            groups.append([M])
    observed = [(x, y) for x, y in zip(g.ms, g.ms[1:]) if not np.array_equal(rows[x][0], rows[y][0])]
    pdf = [per_m[str(M)]["prediction"].get("dataflow") for M in g.ms]
    predicted = [(x, y) for (x, y), p, q in zip(zip(g.ms, g.ms[1:]), pdf, pdf[1:]) if p and q and p != q]
    unpredicted = [M for M, p in zip(g.ms, pdf) if not p]
    # the dispatch predicts every observed change if each lies across a predicted change of dataflow
    explained = all(any(x <= px and py <= y for px, py in predicted) or x in unpredicted or y in unpredicted
                    for x, y in observed)
    return {"per_m": per_m, "groups": groups, "invariant": len(groups) == 1,
            "row0_changes": [list(p) for p in observed], "predicted_changes": [list(p) for p in predicted],
            "no_prediction": unpredicted, "changes_predicted": explained, "held_out": held_out_share(per_m),
            "reproduced": all(r["reproduced"] for r in per_m.values())}


def held_out_share(per_m: dict) -> dict:
    """Of the held-out points: how many the dispatch predicts (a dataflow is modelled), how many of
    those its prediction reproduces (block, and digest where judged), and how many recorded kernel
    names agree with the predicted split."""
    held = [r for r in per_m.values() if r.get("held_out")]
    modelled = [r for r in held if "dataflow" in r["prediction"]]
    bits = [r for r in modelled if r["prediction"].get("block") and r["prediction"].get("digest") in (True, None)]
    named = [r for r in held if "kernel_split_agrees" in r["prediction"]]
    return {"points": len(held), "modelled": len(modelled), "bits": len(bits),
            "kernel_class": sum(r["prediction"]["kernel_split_agrees"] for r in named), "kernel_named": len(named)}


def _seed003(g: LibGemm, arch: str, arrays: dict) -> dict:
    from queries.gemm.explain import Observation, default_dataflows, default_models, explain_gemm
    from queries.gemm.spec import seed003
    from smtmodel.formats import get_format
    v = np.asarray(arrays[g.name], np.uint64).reshape(-1)[0]
    value = float(np.asarray(v, np.uint32).view(np.float32))
    sm = arch_num(arch)
    models = [m for m in default_models("fp16", "fp32") if m.sm == sm]
    res = explain_gemm(seed003(g.M, g.N, g.K), [Observation("gpu", value=value, text=f"gpu={value!r}")],
                       models=models, dataflows=default_dataflows())
    dev = res.devices[0]
    return {"value": value, "bits": get_format("fp32").hex(int(v)), "fits": dev["fits"][:20],
            "fit_count": len(dev["fits"]), "ruled_out": dev["ruled_out"], "conflicts": dev["conflicts"],
            "hypotheses": res.space["hypotheses"], "reproduced": bool(dev["fits"])}


# ---- a survey folder ---------------------------------------------------------------------------------

def recheck(folder, digests: bool = True, progress=None) -> dict:
    """Every captured library call of a survey folder judged with today's catalog, dispatch and
    dataflows: {name: analysis} (a failed capture: its reason)."""
    header, calls = library_captures(folder)
    out = {}
    for g, rec, arrays in calls:
        if rec.get("status") != "captured":
            out[g.name] = {"status": "failed", "reason": rec.get("reason", "")}
            continue
        from .library import inputs
        a, b, c = inputs(g)
        r = analyse(g, header["arch"], arrays, a, b, c, rec.get("digests"), digests, rec.get("points"))
        if rec.get("from"):
            r["from"] = rec["from"]
        out[g.name] = r
        if progress:
            progress(f"{g.name}: {line(g, r)}")
    return out


def recheck_library(folder, digests: bool = True, progress=None) -> list[tuple[str, bool, str]]:
    """(name, reproduced, line) per library call of a survey folder (``mmaprobe survey --recheck``;
    a failed capture: not reproduced, its reason)."""
    header, calls = library_captures(folder)
    res = recheck(folder, digests, progress)
    gs = {g.name: g for g, _, _ in calls}
    out = []
    for name, r in res.items():
        if r.get("status") == "failed":
            out.append((name, False, f"not captured: {r['reason']}"))
        else:
            src = f" [{r['from']}]" if r.get("from") else ""
            out.append((name, bool(r.get("reproduced")), line(gs[name], r) + src))
    return out


RERUN = "library-rerun"
"""A subfolder holding a later run of the library part; a call that failed in the folder itself
is taken from there (and said so)."""


def library_captures(folder) -> tuple[dict, list]:
    """(header, [(LibGemm, capture record, arrays)]) of a survey folder's library calls, in
    journal order; a failed call is taken from :data:`RERUN` where that holds it captured (its
    record then says ``from``). A call recorded with one value and no array (seed 003 §V's
    element) is read from its analysis record's bits."""
    from pathlib import Path
    from smtmodel.io import read_npz
    from .errors import SurveyError
    from .store import read_journal
    folder = Path(folder)
    header, steps = read_journal(folder)
    npz = folder / "library.npz"
    arrays = read_npz(npz) if npz.is_file() else {}
    rerun = None
    if (folder / RERUN / "journal.jsonl").is_file():
        rh, rsteps = read_journal(folder / RERUN)
        if rh.get("arch") != header.get("arch") or rh.get("name") != header.get("name"):
            raise SurveyError(f"{folder / RERUN}: another GPU ({rh.get('name')}, {rh.get('arch')}) than "
                              f"{folder} ({header.get('name')}, {header.get('arch')})")
        rnpz = folder / RERUN / "library.npz"
        rerun = (rsteps, read_npz(rnpz) if rnpz.is_file() else {})
    out = []
    for name, rec in steps.items():
        if not name.startswith("capture/library/"):
            continue
        src, arr = rec, arrays
        if rec.get("status") != "captured" and rerun and rerun[0].get(name, {}).get("status") == "captured":
            src, arr = dict(rerun[0][name], **{"from": RERUN}), rerun[1]
            arr = _from_analysis(rerun[0], name.split("/", 2)[2], arr)
        gemm = src.get("gemm") or rec.get("gemm")
        if gemm is None:                   # a failed capture records no call: rebuild it from the plan
            from .library import plan
            found = [g for g in plan(bool(header.get("settings", {}).get("quick"))) if g.name == name.split("/", 2)[2]]
            if not found:
                continue
            g = found[0]
        else:
            g = LibGemm(**{**gemm, "ms": tuple(gemm.get("ms", ()))})
        out.append((g, src, arr))
    return header, out


def _from_analysis(steps: dict, name: str, arrays: dict) -> dict:
    if name in arrays:
        return arrays
    rec = steps.get(f"analyse/{name}", {})
    if "bits" not in rec:
        return arrays
    return dict(arrays, **{name: np.array([[int(rec["bits"], 16)]], np.uint32)})


def line(g: LibGemm, rec: dict) -> str:
    """One line of a call's judgement (card and --recheck)."""
    if "per_m" in rec:
        bad = [M for M, r in rec["per_m"].items() if not r["reproduced"]]
        head = (f"every M reproduced ({len(rec['per_m'])})" if not bad else
                f"{len(rec['per_m']) - len(bad)} of {len(rec['per_m'])} M reproduced; not: M {', '.join(bad)}")
        obs = ", ".join(f"{x}->{y}" for x, y in rec["row0_changes"]) or "none"
        pre = ", ".join(f"{x}->{y}" for x, y in rec["predicted_changes"]) or "none"
        runs: list = []
        for M, r in rec["per_m"].items():
            if runs and runs[-1][1] == _by(r):
                runs[-1][0].append(M)
            else:
                runs.append([[M], _by(r)])
        how = "; ".join(f"M {ms[0] if len(ms) == 1 else ms[0] + '..' + ms[-1]}: {by}" for ms, by in runs)
        nop = f" (no prediction at M {', '.join(map(str, rec['no_prediction']))})" if rec.get("no_prediction") else ""
        h = rec.get("held_out") or {}
        held = (f"; held out: {h['points']} point(s), {h['modelled']} modelled, {h['bits']} reproduced as predicted, "
                f"kernel split as predicted {h['kernel_class']}/{h['kernel_named']}" if h.get("points") else "")
        return f"{head}; row 0 changes between M {obs}; the dispatch predicts changes at {pre}{nop}{held}; {how}"
    if "value" in rec:
        return (f"D = {rec['value']!r} ({rec['bits']}); {rec['fit_count']} of {rec['hypotheses']} "
                "(model, dataflow) hypotheses reproduce it")
    if rec.get("reproduced"):
        dg = "" if rec.get("digests_judged", True) else " (block only: digests not judged)"
        return f"reproduced{dg}: {_by(rec)}"
    fits = rec.get("fits", [])
    p = rec.get("prediction", {})
    pred = (f"prediction {p.get('dataflow')} fails" if "dataflow" in p else f"no prediction ({p.get('reason')})")
    return (f"NOT reproduced: {pred}; {len(fits)} of {rec.get('tried', 0)} searched pairs fit the block"
            + (f" ({'; '.join(f['model'] + ' / ' + f['dataflow'] for f in fits[:3])}), none the whole D" if fits else ""))


def _by(rec: dict) -> str:
    if not rec.get("reproduced"):
        return "not reproduced"
    b = rec["by"]
    return f"{b['model']} / {b['dataflow']} ({b['how']})"
