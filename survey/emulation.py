"""The survey's emulation steps: the FP32-by-tensor-core modes users switch on, run on the GPU and
judged against their schemes (``mmaprobe scheme list``, :mod:`smtmodel.schemes`).

- **JAX** ``jax.lax.dot_general(a, b, ..., precision=jax.lax.DotAlgorithmPreset.BF16_BF16_F32_X3``
  / ``_X6`` / ``_X9``, ``preferred_element_type=float32)``, jitted. XLA lowers it either through
  its Triton GEMM emitter (schemes ``bf16x{3,6,9}-xla``; the tile's BLOCK_K is read from the
  compiled HLO's ``triton_gemm_config``, else every BLOCK_K of 16..128 is tried) or through
  its DotAlgorithmRewriter and cuBLAS (``bf16x{3,6}-xla-hlo``). A path with no scheme
  (``bf16x9-xla-hlo``: the rewriter has no X9 form) is reported as not judged, with why.
- **Triton** ``tl.dot(a, b, acc, input_precision="tf32x3" | "bf16x3")`` in the tiny GEMM kernel
  :data:`TRITON_SRC` (one 64x64 tile per program, BLOCK_K = 32: the schemes'
  ``tf32x3-triton`` / ``bf16x3-triton`` with their default tile of 32).

Each GEMM D = A B (fp32 A, B: standard normal values rounded to fp32 from a recorded seed, as
:func:`survey.library.inputs` draws them; no C) records the first ``rows`` x ``cols`` of D as raw
bits (``library.npz``: ``emu-NAME``) and the digest of the whole D. The analysis evaluates each
candidate scheme with the twin on the recorded block (the GPU's catalog model of the split's
format, K zero-padded to the tile as the kernels pad it), then on the whole D for the digest.

A GPU machine without JAX or Triton: the step is skipped and named in the card ("Not run"). In
a dry run the stand-in answers with the step's first scheme (with the tile the stand-in reports),
so the judging path runs without a GPU.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from .errors import SurveyError

JAX_PRESETS = {3: "BF16_BF16_F32_X3", 6: "BF16_BF16_F32_X6", 9: "BF16_BF16_F32_X9"}
TRITON_BLOCK = (64, 64, 32)
"""BLOCK_M, BLOCK_N, BLOCK_K of :data:`TRITON_SRC`'s launch."""
GROUPS = (1, 2, 4, 8)
"""Tiles tried for XLA's Triton emitter when the compiled HLO does not name its BLOCK_K (k-blocks of 16)."""

EST_SECONDS = 60
"""The emulation steps on the GPU machine: JAX's import and three compilations, two Triton
compilations, and the twin judging each block and, where it reproduces, the whole D."""

TRITON_SRC = '''
import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a_ptr, b_ptr, d_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], acc)
'''
"""The Triton GEMM of the Triton steps (row-major fp32 A (M, K), B (K, N), D (M, N); M, N multiples of
64, K of 32): the loop's fp32 accumulator is tl.dot's C, so each BLOCK_K tile is added into it."""


@dataclass(frozen=True)
class EmuGemm:
    """One emulation step (module docstring)."""

    name: str
    lib: str                      # jax | triton
    mode: str                     # a DotAlgorithmPreset name | a Triton input_precision
    schemes: tuple                # candidate scheme names, the library's first
    M: int
    N: int
    K: int
    rows: int = 4
    cols: int = 64
    seed: int = 0

    def describe(self) -> str:
        if self.lib == "jax":
            return (f"jax.lax.dot_general(precision=DotAlgorithmPreset.{self.mode}), fp32 -> fp32, "
                    f"{self.M}x{self.N}x{self.K}")
        return f"triton tl.dot(input_precision={self.mode!r}), BLOCK_K {TRITON_BLOCK[2]}, {self.M}x{self.N}x{self.K}"


def plan(quick: bool = False) -> list[EmuGemm]:
    """The emulation steps; ``quick`` (dry runs): small shapes, and of each library one step (the
    twin reads a scheme at about a second per k-block and pair here)."""
    M, N, K = (4, 16, 32) if quick else (64, 64, 128)
    out = [EmuGemm(f"jax-bf16x{n}", "jax", JAX_PRESETS[n], (f"bf16x{n}-xla", f"bf16x{n}-xla-hlo"), M, N, K,
                   cols=N, seed=20 + n) for n in ((3,) if quick else (3, 6, 9))]
    out += [EmuGemm(f"triton-{p}", "triton", p, (f"{p}-triton",), M, N, K, cols=N, seed=30 + i)
            for i, p in enumerate(("tf32x3",) if quick else ("tf32x3", "bf16x3"))]
    return out


def inputs(g: EmuGemm):
    """(a (M, K), b (K, N)) fp32 raw bits from the step's seed (standard normals rounded to fp32)."""
    from smtmodel.sampling import round_to
    rng = np.random.default_rng([g.seed, g.M, g.N, g.K])
    return round_to(rng.standard_normal((g.M, g.K)), "fp32"), round_to(rng.standard_normal((g.K, g.N)), "fp32")


def missing(lib: str) -> str | None:
    """Why a library step cannot run on this machine (None: it can)."""
    import importlib.util
    need = {"jax": ("jax",), "triton": ("triton", "torch")}[lib]
    absent = [m for m in need if importlib.util.find_spec(m) is None]
    if absent:
        return f"{' and '.join(absent)} not installed on the GPU machine (pip install {' '.join(absent)})"
    return None


# ---- the schemes ---------------------------------------------------------------------------------------

def candidates(g: EmuGemm, block_k: int | None = None) -> tuple[list, list]:
    """([(label, Scheme)], [(scheme name, why not judged)]): the step's schemes as the twin reads
    them; XLA's Triton path with the BLOCK_K the compiled HLO names, else every :data:`GROUPS`."""
    from smtmodel.schemes import get_scheme
    from smtmodel.schemes.catalog import SCHEMES
    cands, not_judged = [], []
    for name in g.schemes:
        if name not in SCHEMES:
            why = ("XLA's DotAlgorithmRewriter (the cuBLAS path) has no X9 rewrite, so no such scheme in "
                   "`mmaprobe scheme list`" if name.endswith("-xla-hlo") else "no such scheme in `mmaprobe scheme list`")
            not_judged.append({"scheme": name, "why": why})
            continue
        s = get_scheme(name)
        if not any(p.where == "tile" for p in s.passes):
            cands.append((name, s))
            continue
        blk = s.block or 16
        if g.lib == "triton":
            groups = (TRITON_BLOCK[2] // blk,)
        elif block_k:
            groups = (max(1, block_k // blk),)
        else:
            groups = GROUPS
        for grp in groups:
            cands.append((f"{name}:BLOCK_K={grp * blk}",
                          replace(s, passes=tuple(replace(p, group=grp) if p.where == "tile" else p for p in s.passes))))
    return cands, not_judged


def _model_for(scheme, arch: str):
    """The GPU's catalog model of the scheme's split format (fp32 c and d); else the scheme's own."""
    from smtmodel.catalog import all_models, get_model
    sm = int("".join(ch for ch in arch.split("_")[1] if ch.isdigit()))
    fmt = scheme.split.fmt if scheme.split else None
    found = sorted((m for m in all_models() if m.kind == "catalog" and m.sm == sm
                    and m.in_key == fmt and m.c_fmt == "fp32" and m.out_fmt == "fp32" and not m.scale_fmt),
                   key=lambda m: ("mmasync" in m.id, m.id))
    return found[0] if found else get_model(scheme.model)


def scheme_gemm(scheme, a, b, rows: int, cols: int, arch: str) -> np.ndarray:
    """The scheme's D[:rows, :cols] (raw fp32 bits) for A (M, K), B (K, N), C = +0; K zero-padded to
    a multiple of the scheme's tile, as a kernel's out-of-bounds fill pads it."""
    a = np.asarray(a, np.uint64)[:rows]
    b = np.asarray(b, np.uint64)[:, :cols]
    K = a.shape[1]
    tile = max([(p.group or 1) * (scheme.block or 1) for p in scheme.passes if p.where == "tile"] + [scheme.block or 1])
    pad = -K % tile
    if pad:
        a = np.hstack([a, np.zeros((a.shape[0], pad), np.uint64)])
        b = np.vstack([b, np.zeros((pad, b.shape[1]), np.uint64)])
    lanes_a = np.repeat(a, b.shape[1], axis=0)                     # lane (i, j): row i of A, column j of B
    lanes_b = np.tile(b.T, (a.shape[0], 1))
    c = np.zeros(lanes_a.shape[0], np.uint64)
    d = scheme.evaluate(lanes_a, lanes_b, c, _model_for(scheme, arch))
    return d.reshape(a.shape[0], b.shape[1])


# ---- backends ------------------------------------------------------------------------------------------

class GpuEmulation:
    """JAX and Triton on CUDA device ``index`` (imported when a step runs)."""

    def __init__(self, index: int = 0):
        self.index = index
        self._triton = None

    def run(self, g: EmuGemm, a, b) -> dict:
        if g.lib == "jax":
            return self._jax(g, a, b)
        return self._triton_run(g, a, b)

    def _jax(self, g, a, b) -> dict:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")     # torch shares the GPU
        import jax
        import jax.numpy as jnp
        dev = jax.devices("gpu")[self.index]
        A = jax.device_put(np.asarray(a, np.uint64).astype(np.uint32).view(np.float32), dev)
        B = jax.device_put(np.asarray(b, np.uint64).astype(np.uint32).view(np.float32), dev)
        preset = getattr(jax.lax.DotAlgorithmPreset, g.mode)

        def f(x, y):
            return jax.lax.dot_general(x, y, (((1,), (0,)), ((), ())), precision=preset,
                                       preferred_element_type=jnp.float32)
        comp = jax.jit(f).lower(A, B).compile()
        d = np.asarray(comp(A, B)).view(np.uint32).astype(np.uint64)
        info = hlo_info(comp.as_text() or "")
        return {"d": d, "library": f"jax {jax.__version__}", **info}

    def _triton_run(self, g, a, b) -> dict:
        import torch
        import triton
        kern = self._kernel()
        dev = torch.device(f"cuda:{self.index}")
        A = torch.from_numpy(np.asarray(a, np.uint64).astype(np.uint32).view(np.int32)).to(dev).view(torch.float32)
        B = torch.from_numpy(np.asarray(b, np.uint64).astype(np.uint32).view(np.int32)).to(dev).view(torch.float32)
        D = torch.empty((g.M, g.N), dtype=torch.float32, device=dev)
        bm, bn, bk = TRITON_BLOCK
        kern[(g.M // bm, g.N // bn)](A, B, D, g.M, g.N, g.K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION=g.mode)
        torch.cuda.synchronize()
        d = D.view(torch.int32).cpu().numpy().view(np.uint32).astype(np.uint64)
        return {"d": d, "library": f"triton {triton.__version__}", "path": "triton", "block_k": bk}

    def _kernel(self):
        """:data:`TRITON_SRC` imported from a temporary file (``triton.jit`` reads its source)."""
        if self._triton is None:
            import importlib.util
            import tempfile
            folder = tempfile.mkdtemp(prefix="mmaprobe-triton-")
            path = os.path.join(folder, "mmaprobe_emulation_kernel.py")
            with open(path, "w") as fh:
                fh.write(TRITON_SRC)
            spec = importlib.util.spec_from_file_location("mmaprobe_emulation_kernel", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self._triton = mod.gemm_kernel
        return self._triton


def hlo_info(text: str) -> dict:
    """Which path XLA compiled the dot to, and the Triton tile it chose (``block_k``, ``split_k``)."""
    low = text.lower()
    out = {"path": "cublas" if "__cublas" in low else "triton" if "__triton" in low else "unknown"}
    for key in ("block_m", "block_n", "block_k", "split_k"):
        m = re.search(rf'"?{key}"?\s*[:=]\s*"?(\d+)', text)
        if m:
            out[key] = int(m.group(1))
    return out


class TwinEmulation:
    """Dry runs: the step's first scheme answers (the stand-in's tile: BLOCK_K 32), block only."""

    def __init__(self, arch: str):
        self.arch = arch

    def run(self, g: EmuGemm, a, b) -> dict:
        cands, _ = candidates(g, block_k=32)
        label, s = cands[0]
        d = scheme_gemm(s, a, b, g.rows, g.cols, self.arch)
        return {"d": d, "library": f"twin ({label})", "path": "twin", "block_k": 32, "block_only": True}


# ---- capture and judge -------------------------------------------------------------------------------

def capture(backend, g: EmuGemm, a, b) -> tuple[dict, dict]:
    """(result, arrays) of one step: the recorded block and the whole D's digest."""
    from .library import digest
    t0 = time.perf_counter()
    try:
        r = backend.run(g, a, b)
    except SurveyError as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}, {}
    except Exception as exc:                  # noqa: BLE001 - a library failing on the GPU is recorded
        return {"status": "failed", "reason": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                "seconds": round(time.perf_counter() - t0, 3)}, {}
    d = np.asarray(r.pop("d"), np.uint64)
    block = d[: g.rows, : g.cols]
    dg = "(twin: block only)" if r.pop("block_only", False) else digest(d)
    return ({"status": "captured", "call": g.describe(), "gemm": asdict(g), "digest": dg, **r,
             "seconds": round(time.perf_counter() - t0, 3)}, {f"emu-{g.name}": block.astype(np.uint32)})


def judge(g: EmuGemm, cap: dict, block: np.ndarray, a, b, arch: str, full: bool = True) -> dict:
    """Each candidate scheme on the recorded block (outputs reproduced of the block); those that
    reproduce it on the whole D's digest (``full``, and a digest recorded)."""
    from .library import digest
    t0 = time.perf_counter()
    path = cap.get("path")
    cands, not_judged = candidates(g, cap.get("block_k") if path in ("triton", "twin") else None)
    if g.lib == "jax" and path == "cublas":       # XLA took cuBLAS: the rewriter's schemes
        cands = [(lab, s) for lab, s in cands if s.name.endswith("-xla-hlo")] or cands
    elif g.lib == "jax" and path in ("triton", "twin"):      # XLA's Triton emitter (the twin stands in for it)
        cands = [(lab, s) for lab, s in cands if not s.name.endswith("-xla-hlo")] or cands
    block = np.asarray(block, np.uint64)
    verdicts = {}
    for label, s in cands:
        try:
            pred = scheme_gemm(s, a, b, block.shape[0], block.shape[1], arch)
        except Exception as exc:                  # noqa: BLE001 - a scheme that cannot run this shape
            verdicts[label] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        v = {"block": f"{int(np.count_nonzero(pred == block))}/{block.size}", "reproduced": bool(np.array_equal(pred, block))}
        if v["reproduced"] and full and not str(cap.get("digest", "")).startswith("("):
            whole = scheme_gemm(s, a, b, g.M, g.N, arch)
            v["digest"] = digest(whole) == cap["digest"]
        verdicts[label] = v
    fit = [lab for lab, v in verdicts.items() if v.get("reproduced") and v.get("digest", True)]
    return {"status": "judged", "path": cap.get("path"), "reproduced_by": fit, "verdicts": verdicts,
            "not_judged": not_judged, "seconds": round(time.perf_counter() - t0, 3)}


def line(rec_cap: dict, rec: dict | None) -> str:
    """One line per step (progress and card)."""
    if rec_cap.get("status") != "captured":
        return f"not captured: {rec_cap.get('reason')}"
    if not rec:
        return "captured, not judged"
    nj = "; not judged: " + ", ".join(f"{x['scheme']} ({x['why']})" for x in rec["not_judged"]) if rec["not_judged"] else ""
    where = f" [{rec_cap.get('library')}, path {rec_cap.get('path')}" + (
        f", BLOCK_K {rec_cap['block_k']}" if rec_cap.get("block_k") else "") + (
        f", split_k {rec_cap['split_k']}" if rec_cap.get("split_k", 1) != 1 else "") + "]"
    if rec["reproduced_by"]:
        return f"reproduced by {', '.join(rec['reproduced_by'])}{where}{nj}"
    tried = ", ".join(f"{k} {v.get('block', v.get('error'))}" for k, v in rec["verdicts"].items())
    return f"no scheme reproduces it ({tried}){where}{nj}"


# ---- the survey's steps ----------------------------------------------------------------------------------

def open_backend(target):
    return TwinEmulation(target.arch) if target.dry else GpuEmulation(target.index)


def capture_all(survey, steps: list | None = None) -> dict:
    """The capture steps (``capture/emulation/NAME``); a library missing on the machine: the step is
    skipped and named. Returns the inputs drawn."""
    steps = plan(survey.settings.quick) if steps is None else steps
    backend = open_backend(survey.target)
    drawn = {}
    for g in steps:
        step = f"capture/emulation/{g.name}"
        why = None if survey.target.dry else missing(g.lib)
        if why and survey.store.done(step) is None:
            survey.skipped.append({"step": step, "why": why})
            survey.say(f"emulation {g.name}: skipped ({why})")
            continue
        drawn[g.name] = inputs(g)
        rec = survey.step(step, "capture", lambda g=g: capture(backend, g, *drawn[g.name]), "library")
        if rec:
            survey.say(f"emulation {g.name}: {rec['status']}" + (f" ({rec['reason']})" if rec.get("reason") else ""))
    return drawn


def analyse_all(survey, drawn: dict, steps: list | None = None) -> None:
    """The judging steps (``analyse/emulation/NAME``) of the captured ones."""
    steps = plan(survey.settings.quick) if steps is None else steps
    for g in steps:
        cap = survey.store.done(f"capture/emulation/{g.name}")
        if not cap or cap.get("status") != "captured":
            continue
        a, b = drawn.get(g.name) or inputs(g)
        block = survey.store.arrays["library"][f"emu-{g.name}"]
        rec = survey.step(f"analyse/emulation/{g.name}", "analyse",
                          lambda g=g, cap=cap, block=block, a=a, b=b: (judge(g, cap, block, a, b, survey.target.arch), {}))
        if rec:
            survey.say(f"emulation {g.name}: {line(cap, rec)}")


def card_part(survey) -> dict:
    out = {}
    for g in plan(survey.settings.quick):
        cap = survey.store.done(f"capture/emulation/{g.name}")
        if cap is None:
            continue
        rec = survey.store.done(f"analyse/emulation/{g.name}")
        out[g.name] = {"call": g.describe(), "capture": cap.get("status"), "reason": cap.get("reason"),
                       "line": line(cap, rec), "analysis": {k: v for k, v in (rec or {}).items() if k != "step"} or None}
    return out


def markdown(entries: dict, gemm_ident: dict) -> str:
    """The card's sections for the torch-path identify runs and the emulation steps."""
    L = []
    if gemm_ident:
        from .identify import gemm_line
        L += ["", "## identify --gemm through torch (torch.addmm, fp32 C; a torch.matmul probe)", ""]
        L += [f"- `{k}`: {gemm_line(r)}" for k, r in gemm_ident.items()]
    if entries:
        L += ["", "## Emulation modes (JAX dot algorithms, Triton input_precision) against their schemes", ""]
        L += [f"- **{k}** ({e['call']}): {e['line']}" for k, e in entries.items()]
    return "\n".join(L) + ("\n" if L else "")


def plan_row(quick: bool = False) -> tuple:
    """(part, steps, launches, cases) of the emulation steps for ``--plan``."""
    steps = plan(quick)
    return (f"  of which emulation modes ({', '.join(g.name for g in steps)}; ~{EST_SECONDS} s)", len(steps),
            len(steps), sum(g.M * g.N for g in steps))
