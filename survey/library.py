"""The survey's library part: GEMMs as users call them, through the GPU's own torch and CuPy.

Each :class:`LibGemm` is data: the call (``torch.matmul``, ``torch.addmm`` with C, alpha and
beta, ``torch._scaled_mm`` FP8 with fast or slow accumulation, cuBLAS ``gemmEx`` through CuPy),
the shape, the seed of its inputs (standard normal values rounded to the input format), and what
is recorded: the first ``rows`` rows and ``cols`` columns of D as raw bits, and a digest of the
whole of D. A batch sweep runs the same rows of A under M = 1, 2, 4, ... and records the first
rows each time, so which M change which bits is read off the captures (vLLM/SGLang
batch-invariant modes; TransformerEngine #2986 reports an L20 bf16 forward pass that differs for
5 of 7 values of M). Seed 003 §V's GEMM (:func:`queries.gemm.spec.seed003`) runs at its size.

The analysis (:mod:`survey.library_fit`) judges each call by the dispatch's prediction and a
search over (model, dataflow), on the recorded block and the whole-D digest; seed 003's value
goes through ``explain`` (:func:`queries.gemm.explain.explain_gemm`).

Backends: :class:`TorchLibrary` (a CUDA GPU, torch and CuPy imported lazily) and
:class:`TwinLibrary` (dry runs: the GPU's catalog model under a named dataflow computes the
recorded block; ``wrong`` answers with other models and switches the dataflow at large M, so a
dry run shows findings and mismatches being reported).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from smtmodel.dataflow import DataflowError, get_profile
from smtmodel.formats import bits_to_torch, dtype_name, get_format, torch_to_bits
from smtmodel.gemm import gemm_bits, to_bits
from smtmodel.model import ModelError
from smtmodel.sampling import round_to

from .errors import SurveyError


@dataclass(frozen=True)
class LibGemm:
    """One library call of the survey (module docstring)."""

    name: str
    op: str                       # matmul | addmm | scaled_mm | gemmex | seed003
    in_fmt: str
    out_fmt: str
    M: int
    N: int
    K: int
    alpha: float = 1.0
    beta: float = 0.0
    c_fmt: str | None = None      # addmm / gemmex: C's format
    tf32: bool | None = None      # fp32 inputs: torch.backends.cuda.matmul.allow_tf32
    fast_accum: bool | None = None
    scale_a: float = 1.0          # scaled_mm: per-tensor fp32 scales (rounded to fp32, RNE)
    scale_b: float = 1.0
    ms: tuple = ()                # a batch sweep: the M values (rows of one A, M = its row count)
    rows: int = 4
    cols: int = 64                # 0: every column
    seed: int = 0
    draw: str = "normal"          # normal: :func:`inputs`; grid: :func:`survey.grid.inputs`
    held_out: tuple = ()          # grid points (M) held out of fitting (:func:`survey.grid.held_out`)
    variant_ms: tuple | None = None   # the M that also run the variants (None: every M)

    @property
    def shape_text(self) -> str:
        m = f"M in {{{', '.join(map(str, self.ms))}}}" if self.ms else f"M={self.M}"
        return f"{m} N={self.N} K={self.K}"

    @property
    def launches(self) -> int:
        return len(self.ms) if self.ms else 1

    def describe(self) -> str:
        what = {"matmul": "torch.matmul", "addmm": f"torch.addmm (alpha={self.alpha:g}, beta={self.beta:g})",
                "scaled_mm": f"torch._scaled_mm ({'fast' if self.fast_accum else 'slow'} accumulation, "
                             f"scales {self.scale_a:g} x {self.scale_b:g})",
                "gemmex": f"cublasGemmEx via CuPy (alpha={self.alpha:g}, beta={self.beta:g})",
                "seed003": "seed 003 §V GEMM, cublasGemmEx via CuPy"}[self.op]
        tf = "" if self.tf32 is None else (", TF32 on" if self.tf32 else ", TF32 off")
        return f"{what}, {self.in_fmt} -> {self.out_fmt}{tf}, {self.shape_text}"


def plan(quick: bool = False) -> list[LibGemm]:
    """The library GEMMs of a survey, in priority order; ``quick``: small shapes (dry runs)."""
    K, MN, big_k, sweep_n = (64, 32, 512, 64) if quick else (4096, 256, 16384, 1024)
    ms = tuple(2 ** i for i in range(0, 7 if quick else 13))
    ms8 = tuple(m for m in ms if m >= 16)
    g = [
        LibGemm("matmul-fp16", "matmul", "fp16", "fp16", MN, MN, K, seed=1),
        LibGemm("matmul-bf16", "matmul", "bf16", "bf16", MN, MN, K, seed=2),
        LibGemm("addmm-fp16", "addmm", "fp16", "fp16", MN, MN, K, alpha=2.0, beta=-1.0, c_fmt="fp16", seed=3),
        LibGemm("addmm-bf16", "addmm", "bf16", "bf16", MN, MN, K, alpha=2.0, beta=-1.0, c_fmt="bf16", seed=4),
        LibGemm("matmul-fp32-tf32", "matmul", "fp32", "fp32", MN, MN, K, tf32=True, seed=5),
        LibGemm("matmul-fp32", "matmul", "fp32", "fp32", MN, MN, K, tf32=False, seed=6),
        LibGemm("scaled_mm-e4m3-fast", "scaled_mm", "fp8e4m3", "bf16", MN, MN, K, fast_accum=True,
                scale_a=0.3, scale_b=1.7, seed=7),
        LibGemm("scaled_mm-e4m3-slow", "scaled_mm", "fp8e4m3", "bf16", MN, MN, K, fast_accum=False,
                scale_a=0.3, scale_b=1.7, seed=7),
        LibGemm("scaled_mm-e4m3-fast-longk", "scaled_mm", "fp8e4m3", "fp32", 64 if not quick else 16,
                64 if not quick else 16, big_k, fast_accum=True, seed=8),
        LibGemm("scaled_mm-e4m3-slow-longk", "scaled_mm", "fp8e4m3", "fp32", 64 if not quick else 16,
                64 if not quick else 16, big_k, fast_accum=False, seed=8),
        LibGemm("seed003", "seed003", "fp16", "fp32", *((8192,) * 3 if not quick else (64, 64, 256)),
                alpha=-1.0, beta=1.0, c_fmt="fp32", rows=1, cols=1),
        LibGemm("batch-bf16", "matmul", "bf16", "bf16", ms[-1], sweep_n, K, ms=ms, cols=0, seed=9),
        LibGemm("batch-e4m3", "scaled_mm", "fp8e4m3", "bf16", ms8[-1], sweep_n, K, ms=ms8, cols=0,
                fast_accum=True, seed=10),
    ]
    # alpha, beta not exact in every format: the epilogue forms fma(alpha, acc, RN(beta*C)) and
    # fma(beta, C, RN(alpha*acc)) round apart, and which format holds alpha and beta shows
    seed = 10
    for fmt in ("fp16", "bf16"):
        for sfmt in ("fp32", "fp16", "bf16"):
            seed += 1
            g.append(LibGemm(f"addmm-{fmt}-inexact-{sfmt}", "addmm", fmt, fmt, MN, MN, K, alpha=round_scalar(0.3, sfmt),
                             beta=round_scalar(0.7, sfmt), c_fmt=fmt, seed=seed))
    from .grid import grid
    return g + grid(LibGemm, quick)


def round_scalar(x: float, fmt: str) -> float:
    """x rounded (RNE) to ``fmt``, as the Python float torch is given."""
    from smtmodel.formats import bits_to_numpy
    return float(bits_to_numpy(round_to(np.array([x]), fmt), get_format(fmt))[0])


def fp32_round(x: float) -> float:
    """A Python float as the fp32 torch holds it (RNE)."""
    return float(np.float32(x))


def inputs(g: LibGemm):
    """(a (M,K), b (K,N), c (M,N) or None) raw bits drawn from the GEMM's seed."""
    if g.draw == "grid":
        from .grid import inputs as grid_inputs
        return grid_inputs(g)
    if g.op == "seed003":
        from queries.gemm.spec import seed003
        p = seed003(g.M, g.N, g.K)
        A, B, C, row_of, col_of = p.inputs.reduced()
        return A[row_of], B[:, col_of], None if C is None else C[np.ix_(row_of, col_of)]
    rng = np.random.default_rng([g.seed, g.M, g.N, g.K])
    a = round_to(rng.standard_normal((g.M, g.K)), g.in_fmt)
    b = round_to(rng.standard_normal((g.K, g.N)), g.in_fmt)
    c = round_to(rng.standard_normal((g.M, g.N)), g.c_fmt) if g.c_fmt else None
    return a, b, c


def recorded(g: LibGemm, d: np.ndarray) -> np.ndarray:
    """The recorded block of D (rows x cols)."""
    return np.asarray(d)[: g.rows, : (g.cols or d.shape[1])]


def digest(d: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(d, dtype=np.uint64).tobytes()).hexdigest()[:16]


# ---- backends ----------------------------------------------------------------------------------------


class TorchLibrary:
    """Runs the GEMMs on CUDA device ``index`` with torch (and cuBLAS ``gemmEx`` through CuPy)."""

    def __init__(self, index: int = 0):
        try:
            import torch
        except ImportError:
            raise SurveyError("the library part needs torch on the GPU machine (pip install torch), "
                              "or leave it out: --parts kernels,identify") from None
        if not torch.cuda.is_available():
            raise SurveyError("torch sees no CUDA GPU (torch.cuda.is_available() is False)")
        self.torch, self.dev = torch, torch.device(f"cuda:{index}")
        self.name = f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(index)}"

    def environment(self) -> dict:
        from .torch_lib import environment
        return {"backend": self.name, **environment(self.torch)}

    def variants(self, g: LibGemm) -> tuple:
        from .torch_lib import variants_for
        return () if g.op == "seed003" else variants_for(g.in_fmt)

    def run(self, g: LibGemm, a, b, c, M: int | None = None) -> tuple[np.ndarray, str]:
        """D's recorded block and the whole D's digest, for the first ``M`` rows of A."""
        r = self.call(g, a, b, c, M)
        return r["block"], r["digest"]

    def call(self, g: LibGemm, a, b, c, M: int | None = None, variant: str | None = None) -> dict:
        """One call (the first ``M`` rows of A) under ``variant`` (:mod:`survey.torch_lib`): its
        recorded block, the whole D's digest and the kernels it launched."""
        from .torch_lib import profiled
        from .torch_lib import variant as under
        torch = self.torch
        M = M or g.M
        if g.op == "seed003":
            block, dg = self._gemmex(g, a, b, c)
            return {"block": block, "digest": dg, "kernels": [], "kernels_note": "cuBLAS through CuPy: not profiled"}
        A, B = bits_to_torch(a[:M], g.in_fmt, self.dev), bits_to_torch(b, g.in_fmt, self.dev)
        C = bits_to_torch(c[:M], g.c_fmt, self.dev) if g.op == "addmm" else None
        old = torch.backends.cuda.matmul.allow_tf32

        def go():
            if g.op == "matmul":
                return torch.matmul(A, B)
            if g.op == "addmm":
                return torch.addmm(C, A, B, beta=g.beta, alpha=g.alpha)
            sa = torch.tensor(fp32_round(g.scale_a), dtype=torch.float32, device=self.dev)
            sb = torch.tensor(fp32_round(g.scale_b), dtype=torch.float32, device=self.dev)
            return torch._scaled_mm(A, B.t().contiguous().t(), scale_a=sa, scale_b=sb,
                                    out_dtype=getattr(torch, dtype_name(g.out_fmt)), use_fast_accum=bool(g.fast_accum))
        try:
            if g.tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = g.tf32
            with under(torch, variant):
                D, names, note = profiled(torch, go)
                torch.cuda.synchronize()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
        d = torch_to_bits(D).astype(np.uint64)
        del D, A, B, C
        return {"block": recorded(g, d), "digest": digest(d), "kernels": names, "kernels_note": note}

    def _gemmex(self, g, a, b, c):
        return gemmex(g, a, b, c, self.dev.index or 0)


def gemmex(g: LibGemm, a, b, c, index: int = 0):
    """(recorded block, digest) of a ``gemmex``/``seed003`` call: cuBLAS ``gemmEx`` through CuPy
    (:class:`hw_runner.gemm_device.CudaGemmDevice`, the device ``identify --gemm`` uses), fp32 C
    and D."""
    from types import SimpleNamespace

    from hw_runner.gemm_device import CudaGemmDevice
    p = SimpleNamespace(shape=(g.M, g.N, g.K), a=a, b=b, c=c, alpha=g.alpha, beta=g.beta)
    dev = CudaGemmDevice(f"cuda-gemm:{index}", in_fmt=g.in_fmt, out_fmt="fp32")
    d = dev.launch(p).reshape(g.M, g.N)
    vals = np.unique(d)
    return recorded(g, d), f"{digest(d)}; {len(vals)} distinct value(s)"


# dry runs: which model and dataflow stand for the library (the GPU's catalog model; a named profile)
TWIN_DATAFLOW = {"matmul": "cutlass3-sm90", "addmm": "cutlass3-sm90", "seed003": "cutlass2",
                 "scaled_mm": "cublaslt-hopper-fp8-{}"}


def _dataflow(g: LibGemm, base: str):
    name = base.format("fast" if g.fast_accum else "slow")
    df = get_profile(name)
    if df.out == "model" and g.out_fmt != "fp32":
        df = replace(df, out=g.out_fmt)
    return df.validate()


def _gemm_model(g: LibGemm, arch: str):
    """The GPU's catalog model of a library GEMM's arithmetic (fp32 with TF32: the TF32 model)."""
    from smtmodel.catalog import all_models
    sm = int("".join(ch for ch in arch.split("_")[1] if ch.isdigit()))
    fin = "tf32" if (g.in_fmt == "fp32" and g.tf32) else g.in_fmt
    found = [m for m in all_models() if m.kind == "catalog" and m.sm == sm and m.in_key == fin
             and m.c_fmt == "fp32" and m.out_fmt == "fp32" and not m.scale_fmt]
    found.sort(key=lambda m: ("mmasync" in m.id, m.id))
    return found[0] if found else None


def predict(model, df, g: LibGemm, a, b, c, M: int | None = None) -> np.ndarray:
    """The recorded block of the GEMM as ``model`` under ``df`` computes it (rows and columns of
    the block only: an element reads its row of A and column of B)."""
    M = M or g.M
    rows = min(g.rows, M)
    cols = g.cols or g.N
    aa, bb = np.asarray(a[:rows], np.uint64), np.asarray(b[:, :cols], np.uint64)   # fp32 as TF32: the model's tf32_low
    E = "fp32"
    kw = {}
    if g.op in ("addmm", "gemmex", "seed003") and c is not None:
        cc = np.asarray(c[:rows, :cols], np.uint64)
        if g.c_fmt != model.c_fmt:       # fp16/bf16 C enters as its exact fp32 value
            cc = to_bits(_values(cc, g.c_fmt), model.c_fmt)
        kw["c"] = cc
        kw["alpha_bits"] = int(to_bits(np.array(g.alpha), E))
        kw["beta_bits"] = int(to_bits(np.array(g.beta), E))
    if g.op == "scaled_mm":
        kw["scale_a_bits"] = to_bits(np.array(fp32_round(g.scale_a)), "fp32")
        kw["scale_b_bits"] = to_bits(np.array(fp32_round(g.scale_b)), "fp32")
    return gemm_bits(model, aa, bb, dataflow=df, **kw)


def _values(bits, fmt):
    from smtmodel.formats import bits_to_numpy
    return bits_to_numpy(np.asarray(bits, np.uint64), get_format(fmt)).astype(np.float64)


class TwinLibrary:
    """Dry runs: the library's GEMMs computed by the GPU's catalog model under a named dataflow
    (:data:`TWIN_DATAFLOW`); ``wrong``: another architecture's model, and in the batch sweeps from
    M = 32 on that model with 10 fraction bits fewer (a stand-in for a kernel change)."""

    def __init__(self, arch: str, wrong: bool = False):
        self.arch, self.wrong = arch, wrong
        self.name = f"twin library ({arch}{', wrong' if wrong else ''})"

    def _model(self, g):
        if not self.wrong:
            return _gemm_model(g, self.arch)
        return _gemm_model(g, "sm_80" if g.in_fmt != "fp8e4m3" else "sm_89") or _gemm_model(g, self.arch)

    def environment(self) -> dict:
        from .torch_lib import WORKSPACE_SMALL
        return {"backend": self.name, "torch": None, "cuda": None, "cublas": None,
                "CUBLAS_WORKSPACE_CONFIG": None, "workspace_bytes": TWIN_WORKSPACE,
                "allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True,
                "allow_tf32": False, "fp32_precision": None,
                "note": f"dry run: stand-ins; the variants use a {WORKSPACE_SMALL} workspace of "
                        f"{_small_workspace()} bytes in the dispatch rule"}

    def variants(self, g: LibGemm) -> tuple:
        from .torch_lib import variants_for
        return () if g.op == "seed003" else variants_for(g.in_fmt)

    def run(self, g: LibGemm, a, b, c, M: int | None = None):
        r = self.call(g, a, b, c, M)
        return r["block"], r["digest"]

    def call(self, g: LibGemm, a, b, c, M: int | None = None, variant: str | None = None) -> dict:
        """The recorded block as the stand-in computes it, and the stand-in kernel name: for
        fp16/bf16 ``matmul``/``addmm`` the dispatch rule's kernel class and dataflow
        (:func:`smtmodel.dataflow.hopper_gemmex.predict`, under the variant's workspace and
        reduced-precision setting), else the :data:`TWIN_DATAFLOW` profile."""
        M = M or g.M
        m = self._model(g)
        if m is None:
            raise SurveyError(f"no catalog model computes {g.describe()} on {self.arch}")
        rule = twin_rule(g, M, variant)
        if rule is not None:
            df, kernel = rule.dataflow, f"twin:{rule.kernel_class}"
            if not self.wrong:
                from smtmodel.catalog import get_model
                m = get_model(rule.model)
        else:
            df = _dataflow(g, TWIN_DATAFLOW[g.op])
            kernel = f"twin:{df.name or df.text()}"
        if self.wrong and g.ms and M >= 32 and m.F:
            from smtmodel.catalog import get_model
            m = get_model(f"{m.id}:F={m.F - 10}")
        note = None
        try:
            d = predict(m, df, g, a, b, c, M)
        except (DataflowError, ModelError) as exc:
            if rule is None:
                raise
            note = f"the dispatch rule's dataflow does not run this shape ({exc}); stand-in {TWIN_DATAFLOW[g.op]}"
            df = _dataflow(g, TWIN_DATAFLOW[g.op])
            kernel = f"twin:{df.name}"
            d = predict(self._model(g), df, g, a, b, c, M)
        return {"block": d, "digest": "(twin: block only)", "kernels": [kernel], "kernels_note": note}


TWIN_WORKSPACE = 32 << 20
"""The dry run's cuBLAS workspace (torch's default on sm_90)."""


def _small_workspace() -> int:
    from .torch_lib import WORKSPACE_SMALL, workspace_bytes
    return workspace_bytes(WORKSPACE_SMALL)


def twin_rule(g: LibGemm, M: int, variant: str | None = None):
    """The dispatch rule's answer for an fp16/bf16 ``matmul``/``addmm`` call of M rows under
    ``variant`` (None where the rule does not cover the call: the caller falls back to
    :data:`TWIN_DATAFLOW`)."""
    if g.op not in ("matmul", "addmm") or g.in_fmt not in ("fp16", "bf16"):
        return None
    try:
        from smtmodel.dataflow.dispatch import DispatchError
        from smtmodel.dataflow.hopper_gemmex import predict as rule
    except ImportError:
        return None
    ws = _small_workspace() if variant == "workspace-16x8" else TWIN_WORKSPACE
    try:
        return rule(M, g.N, g.K, g.in_fmt, g.out_fmt, workspace=ws, reduced=variant != "reduced-off")
    except (DispatchError, DataflowError):     # outside the rule, or a split its dataflow cannot run
        return None


def capture(lib, g: LibGemm, a, b, c) -> tuple[dict, dict]:
    """(result, arrays) of one library GEMM (a sweep: one launch per M). Per M: the recorded
    block (array ``NAME`` or ``NAME/M<m>``), the whole D's digest, the kernels launched, whether
    the point is held out, and for the variant M (:attr:`LibGemm.variant_ms`) each variant's
    digest and kernels (its block too, as ``KEY@VARIANT``, where it differs)."""
    t0 = time.perf_counter()
    arrays, digests, points = {}, {}, {}
    dt = np.uint16 if get_format(g.out_fmt).width <= 16 else np.uint32
    variants = getattr(lib, "variants", lambda g: ())(g)
    try:
        for M in (g.ms or (g.M,)):
            r = _call(lib, g, a, b, c, M, None)
            key = f"{g.name}/M{M}" if g.ms else g.name
            arrays[key] = np.asarray(r["block"], np.uint64).astype(dt)
            digests[str(M)] = r["digest"]
            pt = {"digest": r["digest"], "kernels": r["kernels"], "held_out": M in g.held_out}
            if r.get("kernels_note"):
                pt["kernels_note"] = r["kernels_note"]
            if variants and (g.variant_ms is None or M in g.variant_ms):
                pt["variants"] = {}
                for v in variants:
                    rv = _call(lib, g, a, b, c, M, v)
                    blk = np.asarray(rv["block"], np.uint64).astype(dt)
                    same = bool(np.array_equal(blk, arrays[key]))
                    pt["variants"][v] = {"digest": rv["digest"], "kernels": rv["kernels"], "same_block": same,
                                         "same_digest": rv["digest"] == r["digest"],
                                         **({"kernels_note": rv["kernels_note"]} if rv.get("kernels_note") else {})}
                    if not same:
                        arrays[f"{key}@{v}"] = blk
            points[str(M)] = pt
    except (SurveyError, ModelError, DataflowError) as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}, {}
    except Exception as exc:               # noqa: BLE001 - a library call failing on the GPU is recorded
        return {"status": "failed", "reason": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                "seconds": round(time.perf_counter() - t0, 3)}, {}
    return {"status": "captured", "call": g.describe(), "gemm": asdict(g), "digests": digests, "points": points,
            "held_out": [M for M in (g.ms or (g.M,)) if M in g.held_out],
            "seconds": round(time.perf_counter() - t0, 3)}, arrays


def _call(lib, g, a, b, c, M, variant) -> dict:
    if hasattr(lib, "call"):
        return lib.call(g, a, b, c, M, variant)
    d, dg = lib.run(g, a, b, c, M)                 # a backend with the older protocol
    return {"block": d, "digest": dg, "kernels": [], "kernels_note": "this backend records no kernels"}
