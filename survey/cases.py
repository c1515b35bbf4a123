"""The cases each instruction kernel of the survey runs, and the hypotheses they are judged by.

Per kernel (its formats and its K), in this order:

- ``mix``: the harness's validation mix (:func:`smtmodel.sampling.validation_mix`: normal, wide,
  cancelling and raw patterns; seed 001 §III-B widened) with k = K;
- ``chain``: the same mix with k = 4K, so the kernel chains four instructions through its
  accumulator (the C of one is the D of the previous);
- ``zeros``: zero-aimed cases (:func:`smtmodel.sampling.zero_mix`: signed zero products and c,
  tiny terms near the zero rules' alignment floors; docs/zeros.md);
- ``c-special``: c nonzero over its whole range and c subnormal, normal products (the public
  Hopper FP8 ``wgmma`` captures all have c = 0);
- ``suite``: the pairwise suite's deciding vectors (generated_tests/, format
  ../shared/spec/vectors.md) for every pair of the kernel's formats with a model of this GPU;
- ``zero-rules``: the zero-rule deciding files of this GPU (generated_tests/zero_rules/);
- ``disputes``: for a block-scaled kernel, the disputes' deciding files of its formats and scales
  (generated_tests/disputes/).

Block-scaled kernels draw their scales beside each random set's elements, apart from them
(:func:`smtmodel.sampling.scale_mix`: scales near 1, one block pushed far above the others, NaN,
extreme and zero scales, random encodings); a padded block's scales are 1.0.

Integer kernels take the integer validation mix (its ``cancel`` kind reaches the int32 limits:
wrap-around against ``.satfinite``) in ``mix`` and ``chain`` only.

Random sets are drawn from a seed (recorded, so a capture stores outputs only); kernels with the
same formats and K draw the same cases, so their outputs compare directly (``mma.sync`` against
``wgmma``). Every case is zero-padded to a multiple of K as the kernel runs it, and the models
are evaluated on the padded case.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hw_runner.kernels import arch_num
from smtmodel.catalog import all_models, get_model, integer_models
from smtmodel.formats import get_format, is_int_format
from smtmodel.model import ModelError
from smtmodel.sampling import c_special_mix, scale_mix, scale_one, validation_mix, zero_mix
from smtmodel.vectors import VectorFileError, read_vectors

RANDOM_SETS = ("mix", "chain", "zeros", "c-special")
FILE_SETS = ("suite", "zero-rules")
SHARES = {"mix": 1.0, "chain": 0.25, "zeros": 0.25, "c-special": 0.25}
"""Cases of each random set as a fraction of ``cases`` (the mix itself is ``cases``)."""


@dataclass
class CaseSet:
    """One set of cases for one kernel: raw bits padded to a multiple of the kernel's K."""

    name: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    k: int                                     # products per case before padding
    source: dict                               # how to draw it again (seed) or where it was read
    models: list[str] = field(default_factory=list)   # hypotheses the files name (overrides included)
    ids: list[str] | None = None
    sa: np.ndarray | None = None               # block-scaled kernels: raw scale bits (n, K_padded / block)
    sb: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.a.shape[0]

    @property
    def scales(self) -> dict:
        """``a_scale``/``b_scale`` keyword arguments (empty for an unscaled kernel)."""
        return {} if self.sa is None else {"a_scale": self.sa, "b_scale": self.sb}


def set_seed(seed: int, name: str, spec) -> list[int]:
    """The seed sequence of a random set: the survey's seed, the set, the formats and K."""
    tag = f"{name}/{spec.in_key}/{spec.c_fmt}/{spec.out_fmt}/{spec.k}"
    return [seed, zlib.crc32(tag.encode())]


def _pad(x: np.ndarray, K: int) -> np.ndarray:
    k = x.shape[1]
    full = -(-k // K) * K
    return x if full == k else np.concatenate([x, np.zeros((x.shape[0], full - k), np.uint64)], axis=1)


def random_set(name: str, spec, cases: int, seed: int) -> CaseSet:
    """A seeded random set of the kernel's formats (module docstring)."""
    n = max(1, int(round(cases * SHARES[name])))
    k = 4 * spec.k if name == "chain" else spec.k
    s = set_seed(seed, name, spec)
    fa, fb = spec.operand_fmts
    gen = {"mix": validation_mix, "chain": validation_mix, "zeros": zero_mix, "c-special": c_special_mix}[name]
    src = {"generator": f"smtmodel.sampling.{gen.__name__}", "in_fmt": fa, "b_fmt": fb, "c_fmt": spec.c_fmt, "k": k,
           "n": n, "seed": s}
    if spec.block_scaled:
        src |= {"scale_fmt": spec.scale_fmt, "scale_block": spec.scale_block, "scale_seed": [*s, 1]}
    a, b, c, sa, sb = redraw(src, spec.k)
    return CaseSet(name, a, b, c, k, src, sa=sa, sb=sb)


def redraw(source: dict, K: int):
    """The (a, b, c, a_scale, b_scale) of a random set again, from its recorded ``source`` (padded
    to ``K``; the scales None for an unscaled set)."""
    from smtmodel import sampling
    gen = getattr(sampling, source["generator"].rsplit(".", 1)[1])
    out = gen(source["in_fmt"], source["c_fmt"], source["k"], source["n"], source["seed"],
              b_fmt=source.get("b_fmt"))
    a, b = _pad(out[0], K), _pad(out[1], K)
    sa = sb = None
    if source.get("scale_fmt"):
        sa, sb = (_pad_scales(x, a.shape[1] // source["scale_block"], source["scale_fmt"])
                  for x in scale_mix(source["scale_fmt"], source["n"], -(-source["k"] // source["scale_block"]),
                                     source["scale_seed"]))
    return a, b, np.asarray(out[2], np.uint64), sa, sb


def _pad_scales(s: np.ndarray, blocks: int, scale_fmt: str) -> np.ndarray:
    """Scales widened to ``blocks`` per case, the padded (all-zero) blocks scaled by 1.0."""
    if s.shape[1] >= blocks:
        return s
    return np.concatenate([s, np.full((s.shape[0], blocks - s.shape[1]), scale_one(scale_fmt), np.uint64)], axis=1)


def _of_gpu(model_id: str, sm: int) -> bool:
    try:
        return get_model(model_id).sm == sm
    except (ModelError, KeyError, ValueError):
        return False


def suite_files(suite: Path, spec, arch: str) -> list[Path]:
    """The suite's deciding-vector files for pairs of the kernel's formats with a model of this
    GPU (``index.json``: status ``sat``)."""
    index = suite / "index.json"
    if not index.is_file():
        return []
    sm = arch_num(arch)
    want = [spec.in_key, spec.c_fmt, spec.out_fmt]
    out = []
    for r in json.loads(index.read_text()).get("results", {}).values():
        if r.get("status") == "sat" and r.get("formats") == want and (_of_gpu(r["a"], sm) or _of_gpu(r["b"], sm)):
            out.append(suite / r["file"])
    return sorted(p for p in out if p.is_file())


def zero_rule_files(suite: Path, spec, arch: str) -> list[Path]:
    """The zero-rule deciding files (generated_tests/zero_rules/) whose catalog model (first in the
    header's ``models``) is a model of this GPU with the kernel's formats."""
    folder = suite / "zero_rules"
    sm = arch_num(arch)
    out = []
    for p in sorted(folder.glob("*.jsonl")):
        with open(p, encoding="utf-8") as fh:
            try:
                h = json.loads(fh.readline())
            except ValueError:
                continue
        models = h.get("models") or []
        key = h.get("in_fmt") or f"{h.get('a_fmt')}x{h.get('b_fmt')}"
        if ([key, h.get("c_fmt"), h.get("out_fmt")] == [spec.in_key, spec.c_fmt, spec.out_fmt]
                and models and _of_gpu(models[0], sm)):
            out.append(p)
    return out


def file_set(name: str, paths: list[Path], spec, root: Path) -> CaseSet | None:
    """The cases of vector files, as one set (None without any)."""
    if not paths:
        return None
    parts, ids, models, files = [], [], [], []
    width = max(read_vectors(p).k for p in paths)
    width = -(-width // spec.k) * spec.k
    scaled = spec.block_scaled
    for p in paths:
        try:
            vf = read_vectors(p)
        except VectorFileError:
            continue
        a, b, c = vf.arrays()
        pad = lambda x: np.concatenate([x, np.zeros((x.shape[0], width - x.shape[1]), np.uint64)], axis=1)
        sc = vf.scales() if scaled else None
        if scaled and sc is None:
            continue
        sc = () if sc is None else tuple(_pad_scales(x, width // spec.scale_block, spec.scale_fmt) for x in sc)
        parts.append((pad(a), pad(b), c, *sc))
        ids += [f"{p.stem}/{case.get('id', i)}" for i, case in enumerate(vf.cases)]
        models += [m for m in vf.header.get("models", []) if m not in models]
        digest = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        files.append({"file": str(p.relative_to(root)) if p.is_relative_to(root) else str(p), "sha256": digest,
                      "cases": len(vf.cases)})
    if not parts:
        return None
    a, b, c, *sc = (np.concatenate([x[i] for x in parts]) for i in range(len(parts[0])))
    return CaseSet(name, a, b, c, width, {"files": files, "models": models}, models, ids, *sc)


def dispute_files(suite: Path, spec) -> list[Path]:
    """The disputes' deciding files (generated_tests/disputes/*/) of the kernel's formats and scales."""
    out = []
    for p in sorted((suite / "disputes").glob("*/*.jsonl")):
        with open(p, encoding="utf-8") as fh:
            try:
                h = json.loads(fh.readline())
            except ValueError:
                continue
        key = h.get("in_fmt") or f"{h.get('a_fmt')}x{h.get('b_fmt')}"
        if ([key, h.get("c_fmt"), h.get("out_fmt")] == [spec.in_key, spec.c_fmt, spec.out_fmt]
                and h.get("scale_fmt") and _scale_key(h["scale_fmt"], h.get("scale_block")) == spec.scale_key):
            out.append(p)
    return out


def _scale_key(fmt: str | None, block) -> tuple | None:
    return None if not fmt else (get_format(fmt).name, int(block))


def case_sets(spec, arch: str, cases: int, seed: int, suite: Path | None) -> list[CaseSet]:
    """Every set of cases the survey runs on ``spec`` (module docstring)."""
    if is_int_format(spec.in_fmt):
        return [random_set(n, spec, cases, seed) for n in ("mix", "chain")]
    sets = [random_set(n, spec, cases, seed) for n in RANDOM_SETS]
    if spec.block_scaled:
        s = file_set("disputes", dispute_files(suite, spec), spec, suite.parent) if suite and suite.is_dir() else None
        return sets + ([s] if s is not None else [])
    if suite is not None and suite.is_dir():
        root = suite.parent
        for name, paths in (("suite", suite_files(suite, spec, arch)), ("zero-rules", zero_rule_files(suite, spec, arch))):
            s = file_set(name, paths, spec, root)
            if s is not None:
                sets.append(s)
    return sets


def hypotheses(spec, sets: list[CaseSet], own: str | None = None) -> list[str]:
    """The models a kernel's outputs are judged by: every catalog model and rival of its formats
    (integer: the integer models of its formats, both overflow rules), the hypotheses the
    deciding files name, and ``own``, the kernel's own model as
    :func:`smtmodel.catalog.model_for_kernel` reads it at the instruction's K."""
    fmts = (spec.in_key, spec.c_fmt, spec.out_fmt)
    pool = integer_models() if is_int_format(spec.in_fmt) else all_models()
    key = spec.scale_key
    ids = [m.id for m in pool if (m.in_key, m.c_fmt, m.out_fmt) == fmts
           and _scale_key(m.scale_fmt, m.scale_block) == key]
    for s in sets:
        ids += [m for m in s.models if m not in ids]
    if own and own not in ids:
        ids.append(own)
    return ids
