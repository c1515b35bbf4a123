"""``emulate(gpu=...)``: a :class:`torch.overrides.TorchFunctionMode` under which the matmuls of a
PyTorch program on CPU tensors compute what a chosen GPU computes, bit for bit under the stated
model and dataflow; everything else runs as plain torch on the CPU, and :meth:`emulate.report`
says which is which (docs/torch.md).

Emulated (on CPU tensors of a dtype the GPU has a model for): ``matmul`` / ``@``, ``mm``, ``bmm``,
``addmm``, ``baddbmm``, ``F.linear`` (with and without bias), two-operand ``einsum``,
``torch._scaled_mm`` (per-tensor scales) and ``F.scaled_dot_product_attention`` (its two
matmuls; softmax on the CPU). Each GEMM goes through :func:`smtmodel.gemm.gemm_bits` with

- the GPU architecture's catalog model for (operand format, fp32 accumulation);
- the library's dataflow: for Hopper fp16/bf16 the cuBLAS dispatch rule
  ``smtmodel.dataflow.hopper_gemmex.predict`` where it is installed and the call is in its
  domain, for Hopper/Ada FP8 ``_scaled_mm`` the recorded cuBLASLt dispatch tables
  (:mod:`smtmodel.dataflow.dispatch`), otherwise the architecture's named default profile
  (:data:`DEFAULT_PROFILE`), said once by an :class:`EmulationWarning`.

Unsupported calls (other devices, dtypes without a model, GEMM-like ops not modelled) run natively,
each reason said once and listed in the report, or (``strict=True``) are refused with one line.
"""

from __future__ import annotations

import functools
import importlib
import math
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode, resolve_name

from smtmodel.catalog import get_model, unvalidated_note
from smtmodel.catalog.products import PRODUCTS, arch_of
from smtmodel.dataflow import Dataflow
from smtmodel.gemm import epilogue_format, gemm_bits, resolve_dataflow
from smtmodel.model import ModelError

from .adapter import fmt_of, from_bits, raw_bits, scaled_mm

ARCHES = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "blackwell-ultra", "rtx-blackwell",
          "cdna1", "cdna2", "cdna3", "cdna4")
GPUS: dict[str, str] = {**{k.lower(): v for k, v in PRODUCTS.items()}, **{a: a for a in ARCHES}}
"""Accepted ``gpu`` names (products of :mod:`smtmodel.catalog.products`, case, dashes and
``sxm``/``pcie`` ignored, and the architectures themselves) -> architecture."""

DEFAULT_PROFILE = {"volta": "cutlass2", "turing": "cutlass2", "ampere": "cutlass2", "ada": "cutlass2",
                   "rtx-blackwell": "cutlass2", "hopper": "cutlass3-sm90", "blackwell": "cutlass3-sm90",
                   "blackwell-ultra": "cutlass3-sm90", "cdna1": "tensile", "cdna2": "tensile", "cdna3": "tensile",
                   "cdna4": "tensile"}
"""The named dataflow of a GEMM no dispatch rule or table covers: CUTLASS 3.x's SM90 epilogue on
sm_90/sm_100, CUTLASS 2.x's elsewhere on NVIDIA, Tensile's on AMD (docs/dataflow.md, profiles)."""

DISTRIBUTE_MIN = 1 << 28
"""Multiply-adds from which an :class:`emulate` with a Dask ``client`` sends a GEMM to its workers
(below, the transfers cost more than the workers save)."""


def gemm_on_dask(client, m, a, b, c=None, **kw) -> tuple[np.ndarray, int]:
    """:func:`smtmodel.gemm.gemm_bits` of a batch a (B,M,K), b (B,K,N), c (B,M,N) or None on the
    workers of ``client``: two row blocks per worker, B broadcast once; returns (D, blocks). Every
    dataflow computes an output element from its row of A, its column of B and its element of C
    (split-K, tiles and stream-K bounds run along K), so the blocks give the bits of one call."""
    M = a.shape[1]
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    edges = sorted({int(x) for x in np.linspace(0, M, min(M, 2 * workers) + 1)})
    bf = client.scatter(b, broadcast=True)
    futures = [client.submit(gemm_bits, m, a[:, r0:r1], bf, None if c is None else c[:, r0:r1], pure=False, **kw)
               for r0, r1 in zip(edges, edges[1:])]
    try:
        parts = client.gather(futures)
    finally:
        for f in futures:
            f.release()
    return np.concatenate(parts, axis=1), len(futures)


FP8_TABLES = {"hopper": "cublaslt-h100pcie-fp8", "rtx4060": "cublaslt-rtx4060-fp8"}
FP8_PROFILE = {"hopper": "cublaslt-hopper-fp8", "ada": "cublaslt-ada-fp8"}

_GEMM_LIKE = ("torch.addbmm", "torch.Tensor.addbmm", "torch.Tensor.addmm_", "torch.Tensor.baddbmm_",
              "torch.Tensor.addbmm_", "torch.mv", "torch.Tensor.mv", "torch.addmv", "torch.Tensor.addmv",
              "torch.dot", "torch.Tensor.dot", "torch.vdot", "torch.inner", "torch.Tensor.inner", "torch.outer",
              "torch.tensordot", "torch.chain_matmul", "torch.linalg.multi_dot", "torch.linalg.matmul",
              "torch.nn.functional.bilinear", "torch.nn.functional.conv1d", "torch.nn.functional.conv2d",
              "torch.nn.functional.conv3d", "torch.conv1d", "torch.conv2d", "torch.conv3d",
              "torch._scaled_mm_v2", "torch._scaled_grouped_mm", "torch.Tensor.__rmatmul__")
"""Matrix products the mode does not emulate: they run natively, said once as "not emulated"."""

_QUIET = ("__get__", "__set__", "size", "dim", "stride", "numel", "is_contiguous", "element_size", "data_ptr",
          "__len__", "__format__", "__repr__", "__hash__", "__bool__", "__index__", "__int__", "__float__",
          "requires_grad_", "storage_offset", "is_floating_point", "is_complex", "__iter__", "tolist", "item")


_MEMORY_CHECK_MIN = 1 << 24
"""Bytes from which an emulated GEMM's need is checked against the memory available (reading
/proc/meminfo costs more than a small GEMM)."""


class EmulationWarning(UserWarning):
    """Something an emulated result depends on (a default dataflow, an unvalidated model) or a call
    that ran natively, said once per mode."""


class _Native(Exception):
    """Raised inside a handler: run the op natively for this reason."""


def _exists(model_id: str) -> bool:
    try:
        get_model(model_id)
        return True
    except ModelError:
        return False


def gpu_arch(gpu: str) -> str:
    """The architecture of a ``gpu`` name (:data:`GPUS`); an unknown name is a one-line error that
    lists the names."""
    g = str(gpu).strip().lower()
    if g in GPUS:
        return GPUS[g]
    a = arch_of(g)
    if a is not None:
        return a
    raise ModelError(f"unknown gpu {gpu!r}; known: {', '.join(sorted(GPUS))}")


@dataclass
class EmulatedCall:
    """One GEMM run through the twin (a batched call is one record)."""
    index: int
    op: str
    scope: str
    batch: int
    M: int
    N: int
    K: int
    dtype: str
    out_dtype: str
    model: str
    dataflow: str
    source: str
    seconds: float
    output: "torch.Tensor | None" = None

    def shape_text(self) -> str:
        return (f"{self.batch}x" if self.batch != 1 else "") + f"{self.M}x{self.N}x{self.K}"


@dataclass
class Report:
    """What an :class:`emulate` block computed: the emulated GEMMs with their (model, dataflow)
    and where each choice came from, the calls that ran natively (by name), and the calls that
    ran natively for a reason (an unsupported device, dtype or op)."""
    gpu: str
    arch: str
    emulated: list = field(default_factory=list)
    native: Counter = field(default_factory=Counter)
    unsupported: Counter = field(default_factory=Counter)

    def choices(self) -> Counter:
        """(op, model, dataflow, source) -> number of calls."""
        return Counter((c.op, c.model, c.dataflow, c.source) for c in self.emulated)

    def text(self) -> str:
        lines = [f"emulate(gpu={self.gpu!r}) [{self.arch}]: {len(self.emulated)} GEMM call(s) emulated, "
                 f"{sum(self.native.values())} op call(s) native on the CPU (their bits are the CPU's, not the GPU's), "
                 f"{sum(self.unsupported.values())} unsupported call(s) native"]
        if self.emulated:
            lines.append("emulated (op, model, dataflow, from):")
            for (op, m, df, src), n in sorted(self.choices().items(), key=lambda kv: -kv[1]):
                lines.append(f"  {n:6d}  {op}  {m}  {df}  [{src}]")
        if self.unsupported:
            lines.append("not emulated, ran natively (reason):")
            for (op, why), n in sorted(self.unsupported.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {n:6d}  {op}: {why}")
        if self.native:
            lines.append("native (not modelled; CPU bits):")
            for op, n in self.native.most_common():
                lines.append(f"  {n:6d}  {op}")
        return "\n".join(lines)

    __str__ = text


def _name(func) -> str:
    n = resolve_name(func)
    return n if n else getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))


def _tf32_flag() -> bool:
    """torch's TF32 setting for cuBLAS matmuls (``allow_tf32`` / ``fp32_precision``)."""
    try:
        return bool(torch.backends.cuda.matmul.allow_tf32)
    except RuntimeError as e:
        raise ModelError(f"torch's TF32 setting is ambiguous ({str(e).split(',')[0]}); "
                         "pass emulate(..., tf32=True/False)") from None


def _reduced_flag(fmt: str) -> bool:
    m = torch.backends.cuda.matmul
    return bool(m.allow_fp16_reduced_precision_reduction if fmt == "fp16" else m.allow_bf16_reduced_precision_reduction)


@functools.lru_cache(maxsize=1024)
def _text(df: Dataflow) -> str:
    """``df.text()``, remembered (the report names every call's dataflow)."""
    return df.text()


def _scalar_in(x, E: str) -> int:
    """A Python/tensor scalar as torch hands it to cuBLAS (``float`` for fp32 compute, ``double``
    for fp64): raw bits of the epilogue format."""
    x = float(x.item() if isinstance(x, torch.Tensor) else x)
    if E == "fp64":
        return int(np.array(x, np.float64).view(np.uint64))
    return int(np.array(x, np.float32).view(np.uint32))


class emulate(TorchFunctionMode):
    """``with emulate(gpu="h100"):`` -- the matmuls of the block on CPU tensors compute the GPU's
    bits (module docstring; docs/torch.md).

    ``tf32`` / ``reduced``: override torch's ``allow_tf32`` / ``allow_{fp16,bf16}_reduced_precision_
    reduction`` flags (None: read them at each call). ``workspace``: the cuBLAS(Lt) workspace in
    bytes the dispatch rules take (None: torch's default). ``dataflow``: one dataflow for every
    GEMM instead of the dispatch rules and defaults. ``module``: a ``nn.Module`` whose submodules'
    names label the calls (forward hooks, removed on exit). ``keep_outputs``: keep each emulated
    call's output in the report (for :func:`mmaprobe.torch.diff`). ``strict``: refuse unsupported
    calls instead of running them natively. ``jobs``, ``backend``: passed to ``gemm_bits``.
    ``client``: a ``distributed.Client``; a GEMM of at least ``distribute_min`` multiply-adds is cut
    into row blocks computed on its workers (:func:`gemm_on_dask`; the same bits: every dataflow
    reads an output element from its row of A and column of B only)."""

    def __init__(self, gpu: str, *, tf32: bool | None = None, reduced: bool | None = None,
                 workspace: int | None = None, dataflow=None, module=None, keep_outputs: bool = False,
                 strict: bool = False, jobs: int | None = None, backend: str = "auto", warn: bool = True,
                 client=None, distribute_min: int = DISTRIBUTE_MIN):
        super().__init__()
        self.gpu = str(gpu)
        self.arch = gpu_arch(gpu)
        self.product = "".join(ch for ch in self.gpu.lower() if ch.isalnum())
        self.tf32, self.reduced, self.workspace = tf32, reduced, workspace
        self.dataflow = None if dataflow is None else resolve_dataflow(dataflow)
        self.module, self.keep_outputs, self.strict = module, keep_outputs, strict
        self.jobs, self.backend, self.warn = jobs, backend, warn
        self.client, self.distribute_min = client, int(distribute_min)
        self._report = Report(self.gpu, self.arch)
        self._said: set = set()
        self._scope: list[str] = []
        self._hooks: list = []
        self._rule_cache: dict = {}
        self._choices: dict = {}
        self._handlers = self._make_handlers()

    # ---- the context ----------------------------------------------------------------------------
    def __enter__(self):
        if self.module is not None:
            for name, mod in self.module.named_modules():
                label = name or type(mod).__name__
                self._hooks.append(mod.register_forward_pre_hook(lambda m, a, _l=label: self._scope.append(_l)))
                self._hooks.append(mod.register_forward_hook(lambda m, a, o: self._pop_scope()))
        return super().__enter__()

    def __exit__(self, exc_type, exc, tb):
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        self._scope.clear()             # a forward interrupted (Ctrl-C, an error) leaves no scope behind
        return super().__exit__(exc_type, exc, tb)

    def _pop_scope(self):
        if self._scope:
            self._scope.pop()

    def report(self) -> Report:
        """The :class:`Report` of everything run under this mode so far."""
        return self._report

    def _say(self, key, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            if self.warn:
                warnings.warn(f"emulate(gpu={self.gpu!r}): {text}", EmulationWarning, stacklevel=4)

    # ---- dispatch ----------------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self._handlers.get(func)
        if handler is not None:
            try:
                return handler(*args, **kwargs)
            except _Native as e:
                return self._native(func, args, kwargs, str(e))
        name = _name(func)
        if name in _GEMM_LIKE:
            return self._native(func, args, kwargs, "a matrix product the mode does not emulate")
        out = func(*args, **kwargs)
        if not name.rsplit(".", 1)[-1] in _QUIET and isinstance(out, (torch.Tensor, tuple, list)):
            self._report.native[name] += 1
        return out

    def _native(self, func, args, kwargs, why: str):
        name = _name(func)
        if self.strict:
            raise ModelError(f"emulate(gpu={self.gpu!r}): {name}: {why} (strict: refused)")
        self._report.unsupported[(name, why)] += 1
        self._say(("native", name, why), f"{name}: {why}; ran natively on the CPU (its bits are not the GPU's)")
        return func(*args, **kwargs)

    def _make_handlers(self) -> dict:
        T = torch.Tensor
        h = {}
        for f in (torch.matmul, T.matmul, T.__matmul__):
            h[f] = self._matmul
        for f in (torch.mm, T.mm):
            h[f] = self._mm
        for f in (torch.bmm, T.bmm):
            h[f] = self._bmm
        for f in (torch.addmm, T.addmm):
            h[f] = self._addmm
        for f in (torch.baddbmm, T.baddbmm):
            h[f] = self._baddbmm
        h[F.linear] = self._linear
        h[torch.einsum] = self._einsum
        h[torch._scaled_mm] = self._scaled_mm
        h[F.scaled_dot_product_attention] = self._sdpa
        return h

    # ---- the choice of model and dataflow ---------------------------------------------------------
    def _check(self, *ts) -> None:
        for t in ts:
            if isinstance(t, torch.Tensor) and t.device.type != "cpu":
                raise _Native(f"a tensor on {t.device} (the mode emulates CPU tensors)")
            if isinstance(t, torch.Tensor) and type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
                raise _Native(f"a tensor subclass {type(t).__name__}")

    def _model_id(self, fmt: str) -> str:
        arch = self.arch
        if fmt == "fp32":
            tf32 = _tf32_flag() if self.tf32 is None else self.tf32
            if arch.startswith("cdna"):
                cand = f"{arch}-tf32-fp32" if tf32 and arch == "cdna3" else f"{arch}-fp32-fp32"
            elif tf32:     # the H100 capture: cuBLAS rounds the fp32 operands to TF32 to nearest even
                cand = f"{arch}-tf32-fp32" + (":tf32_low=RNE" if arch == "hopper" else "")
            elif _exists(f"{arch}-fp32-fp32"):
                cand = f"{arch}-fp32-fp32"
            else:
                raise _Native(f"fp32 without TF32: {arch}'s SGEMM runs on FFMA units, which have no model "
                              "(set torch.backends.cuda.matmul.allow_tf32 or emulate(tf32=True) for the TF32 model)")
        elif fmt in ("fp16", "bf16"):
            cand = f"{arch}-{fmt}-fp32"
        elif fmt == "fp64":
            cand = f"{arch}-fp64-fp64"
        else:
            raise _Native(f"dtype {fmt}: no {arch} matmul model takes it")
        return self._catalog_model(cand, f"dtype {fmt}: {arch} has no model {cand}")

    def _choice(self, op: str, M: int, N: int, K: int, fmt: str, out: str, batched: bool,
                attention: bool = False) -> tuple:
        """(model, dataflow, source) of one GEMM, remembered per shape, format and torch's flags
        that decide it (read at each call)."""
        flags = (self.tf32 if self.tf32 is not None or fmt != "fp32" else _tf32_flag(),
                 self.reduced if self.reduced is not None or fmt not in ("fp16", "bf16") else _reduced_flag(fmt))
        key = (M, N, K, fmt, out, batched, attention, flags)
        got = self._choices.get(key)
        if got is None:
            got = self._choices[key] = self._choose(M, N, K, fmt, out, batched, attention)
        return got

    def _choose(self, M: int, N: int, K: int, fmt: str, out: str, batched: bool, attention: bool) -> tuple:
        mid = self._model_id(fmt)
        if self.dataflow is not None:
            return get_model(mid), replace(self.dataflow, out=out).validate(), "emulate(dataflow=...)"
        if self.arch == "hopper" and fmt in ("fp16", "bf16", "fp32") and not attention:
            got = self._rule(M, N, K, "tf32" if fmt == "fp32" and "tf32" in mid else fmt, out)
            if got is not None:
                p, src = got
                m = get_model(p.model) if not hasattr(p.model, "evaluate") else p.model
                df = p.dataflow if isinstance(p.dataflow, Dataflow) else resolve_dataflow(p.dataflow)
                if df.out != out:
                    df = replace(df, out=out).validate()
                return m, df, src + (" (batched: the rule of one GEMM of the batch)" if batched else "")
        prof = DEFAULT_PROFILE[self.arch]
        if attention:
            src = f"default {prof} (the attention reading, docs/torch.md)"
        else:
            src = f"default {prof}"
            self._say(("default", fmt), f"{fmt} GEMMs without a dispatch rule use the default dataflow {prof} "
                      f"({self._why_default(fmt)})")
        return get_model(mid), replace(resolve_dataflow(prof), out=out).validate(), src

    def _why_default(self, fmt: str) -> str:
        if self.arch == "hopper" and fmt in ("fp16", "bf16", "fp32"):
            return self._said_rule_why if hasattr(self, "_said_rule_why") else "outside the dispatch rule"
        return f"no dispatch table for {self.arch} {fmt} GEMMs"

    def _rule(self, M, N, K, fmt, out):
        key = (M, N, K, fmt, out)
        if key in self._rule_cache:
            return self._rule_cache[key]
        try:
            rule = importlib.import_module("smtmodel.dataflow.hopper_gemmex")
        except ImportError:
            self._said_rule_why = "smtmodel.dataflow.hopper_gemmex is not installed"
            self._rule_cache[key] = None
            return None
        from smtmodel.dataflow.dispatch import DispatchError
        reduced = _reduced_flag(fmt) if self.reduced is None else self.reduced
        kw = {"reduced": reduced}
        if self.workspace is not None:
            kw["workspace"] = self.workspace
        try:
            p = rule.predict(M, N, K, fmt, out, **kw)
        except DispatchError as e:
            self._said_rule_why = f"the dispatch rule: {e}"
            self._rule_cache[key] = None
            return None
        from smtmodel.dataflow import DataflowError
        from smtmodel.dataflow.plan import chains
        try:
            chains(p.dataflow, get_model(p.model), K)
        except DataflowError as e:
            self._said_rule_why = f"the dispatch rule's dataflow {p.dataflow.text()} does not fit K={K}: {e}"
            self._rule_cache[key] = None
            return None
        kt = p.kernel_text() if hasattr(p, "kernel_text") else str(getattr(p, "kernel_class", "?"))
        src = f"{getattr(p, 'table', 'hopper_gemmex')}: {kt}"
        if not getattr(p, "validated", True):
            self._say(("rule-unvalidated",), f"{fmt} GEMMs use the dispatch rule {getattr(p, 'table', 'hopper_gemmex')}, "
                      "an UNVALIDATED hypothesis (docs/invariance.md): its split-K choice is a prediction")
        self._rule_cache[key] = (p, src)
        return self._rule_cache[key]

    # ---- the GEMM -------------------------------------------------------------------------------
    def _gemm(self, op: str, a, b, c=None, alpha=1.0, beta=None, attention_out: str | None = None):
        """a (B, M, K), b (B, K, N) (B = 1 for a plain GEMM), c (B, M, N) or None: D (B, M, N) by
        the twin, in a's dtype (``attention_out``: that format instead, the attention reading)."""
        self._check(a, b, c)
        if a.dtype != b.dtype:
            raise _Native(f"mixed operand dtypes {a.dtype} x {b.dtype}")
        fmt = fmt_of(a.dtype)
        if fmt is None or fmt.startswith("fp8"):
            raise _Native(f"dtype {a.dtype}: no matmul model takes it (FP8 goes through torch._scaled_mm)")
        B, M, K = a.shape
        N = b.shape[2]
        out = attention_out or ("fp32" if fmt == "fp32" else fmt)
        t0 = time.perf_counter()
        m, df, src = self._choice(op, M, N, K, fmt, out, batched=B > 1, attention=attention_out is not None)
        from smtmodel.native.gemm import memory_available, memory_needed
        need = B * memory_needed(M, N, K, 1 + (df.slices > 1 or df.restart > 0))
        need += 2 * (a.numel() + b.numel()) * a.element_size()
        have = memory_available() if need >= _MEMORY_CHECK_MIN else None
        if have is not None and need > have:
            raise ModelError(f"{op}: a GEMM of {B}x{M}x{N}x{K} needs about {need / 2 ** 30:.1f} GiB of memory; "
                             f"{have / 2 ** 30:.1f} GiB are available")
        E = epilogue_format(m, df)
        al = _scalar_in(alpha, E)
        be = None if beta is None else _scalar_in(beta, E)
        ab, bb = raw_bits(a), raw_bits(b)
        cb = None
        if c is not None:
            cdt = torch.float64 if m.c_fmt == "fp64" else torch.float32
            if fmt_of(c.dtype) is None or c.dtype == torch.float64 and cdt != torch.float64:
                raise _Native(f"C of dtype {c.dtype}")
            cb = raw_bits(c.to(cdt))
        kw = dict(alpha_bits=al, beta_bits=be, dataflow=df, backend=self.backend, jobs=self.jobs)
        if self.client is not None and B * M * N * K >= self.distribute_min:
            d, blocks = gemm_on_dask(self.client, m, ab, bb, cb, **kw)
            src = f"{src}; {blocks} row blocks on Dask"
        else:
            d = gemm_bits(m, ab, bb, cb, **kw)
        res = from_bits(d, out)
        self._record(op, B, M, N, K, str(a.dtype).removeprefix("torch."), str(res.dtype).removeprefix("torch."),
                     m.id, _text(df), src, time.perf_counter() - t0, res)
        return res

    def _record(self, op, B, M, N, K, dtype, out_dtype, model, dataflow, source, seconds, res):
        r = self._report
        r.emulated.append(EmulatedCall(len(r.emulated), op, self._scope[-1] if self._scope else "", B, M, N, K,
                                       dtype, out_dtype, model, dataflow, source, seconds,
                                       res.detach().clone() if self.keep_outputs else None))

    @staticmethod
    def _out(out, res):
        if out is None:
            return res
        if out.dtype != res.dtype:
            raise _Native(f"out= of dtype {out.dtype} for a {res.dtype} result")
        if out.shape != res.shape:
            out.resize_(res.shape)
        out.copy_(res)
        return out

    # ---- the ops --------------------------------------------------------------------------------
    def _mm(self, input, mat2, *, out=None):
        if input.dim() != 2 or mat2.dim() != 2:
            raise _Native(f"mm of shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
        self._fits(input.shape[1], mat2.shape[0], input, mat2)
        return self._out(out, self._gemm("mm", input[None], mat2[None])[0])

    def _bmm(self, input, mat2, *, out=None):
        if input.dim() != 3 or mat2.dim() != 3 or input.shape[0] != mat2.shape[0]:
            raise _Native(f"bmm of shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
        self._fits(input.shape[2], mat2.shape[1], input, mat2)
        return self._out(out, self._gemm("bmm", input, mat2))

    @staticmethod
    def _fits(k1, k2, a, b):
        if k1 != k2:
            raise _Native(f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not fit (torch raises)")

    def _addmm(self, input, mat1, mat2, *, beta=1, alpha=1, out=None):
        if mat1.dim() != 2 or mat2.dim() != 2:
            raise _Native(f"addmm of shapes {tuple(mat1.shape)} and {tuple(mat2.shape)}")
        self._fits(mat1.shape[1], mat2.shape[0], mat1, mat2)
        M, N = mat1.shape[0], mat2.shape[1]
        try:
            c = input.expand(M, N)
        except RuntimeError:
            raise _Native(f"input of shape {tuple(input.shape)} does not broadcast to ({M}, {N})") from None
        return self._out(out, self._gemm("addmm", mat1[None], mat2[None], c[None], alpha, beta)[0])

    def _baddbmm(self, input, batch1, batch2, *, beta=1, alpha=1, out=None):
        if batch1.dim() != 3 or batch2.dim() != 3 or batch1.shape[0] != batch2.shape[0]:
            raise _Native(f"baddbmm of shapes {tuple(batch1.shape)} and {tuple(batch2.shape)}")
        self._fits(batch1.shape[2], batch2.shape[1], batch1, batch2)
        B, M, N = batch1.shape[0], batch1.shape[1], batch2.shape[2]
        try:
            c = input.expand(B, M, N)
        except RuntimeError:
            raise _Native(f"input of shape {tuple(input.shape)} does not broadcast to ({B}, {M}, {N})") from None
        return self._out(out, self._gemm("baddbmm", batch1, batch2, c, alpha, beta))

    def _matmul(self, input, other, *, out=None):
        return self._out(out, self._matmul_nd("matmul", input, other, has_out=out is not None))

    def _matmul_nd(self, op, t1, t2, has_out=False):
        """torch.matmul's reading (aten/src/ATen/native/LinearAlgebra.cpp ``_matmul_impl``): 1-D
        operands promoted, the batch folded into M where torch folds it, else broadcast to bmm."""
        self._check(t1, t2)
        d1, d2 = t1.dim(), t2.dim()
        if d1 == 0 or d2 == 0:
            raise _Native("a 0-d operand (torch raises)")
        if d2 == 1:
            raise _Native("a matrix-vector or vector-vector product (gemv/dot, not a tensor-core GEMM)")
        if d1 == 1 and d2 == 2:
            return self._mm_checked(op, t1[None], t2)[0]
        if d1 == 2 and d2 == 2:
            return self._mm_checked(op, t1, t2)
        if self._should_fold(t1, t2, has_out):
            larger = d1 >= d2
            a, b = (t1, t2) if larger else (t2.mT, t1.mT)
            if b.dim() == 1:
                raise _Native("a matrix-vector product (gemv, not a tensor-core GEMM)")
            K = a.shape[-1]
            d = self._mm_checked(op, a.reshape(-1, K), b)
            d = d.reshape(*a.shape[:-1], b.shape[-1])
            return d if larger else d.mT
        if d1 == 1:
            t1 = t1[None]
        if t1.shape[-1] != t2.shape[-2]:
            raise _Native(f"shapes {tuple(t1.shape)} and {tuple(t2.shape)} do not fit (torch raises)")
        try:
            batch = torch.broadcast_shapes(t1.shape[:-2], t2.shape[:-2])
        except RuntimeError:
            raise _Native(f"batch shapes {tuple(t1.shape[:-2])} and {tuple(t2.shape[:-2])} do not broadcast "
                          "(torch raises)") from None
        M, K, N = t1.shape[-2], t1.shape[-1], t2.shape[-1]
        a = t1.expand(*batch, M, K).reshape(-1, M, K)
        b = t2.expand(*batch, K, N).reshape(-1, K, N)
        d = self._gemm(op, a, b).reshape(*batch, M, N)
        return d[..., 0, :] if d1 == 1 else d

    def _mm_checked(self, op, a, b):
        self._fits(a.shape[-1], b.shape[0], a, b)
        return self._gemm(op, a[None], b[None])[0]

    @staticmethod
    def _should_fold(t1, t2, has_out: bool) -> bool:
        larger = t1.dim() >= t2.dim()
        a = t1 if larger else t2.mT
        dim_a, dim_b = a.dim(), (t2.dim() if larger else t1.dim())
        if not (dim_a >= 3 and dim_b <= 2):
            return False
        b_grad = (t2 if larger else t1).requires_grad
        if b_grad and not has_out:
            return True
        if t1.dim() == 2:
            return False
        if a.numel() == 0:
            return True
        sh, st = a.shape, a.stride()
        return all(st[i] == st[i + 1] * sh[i + 1] for i in range(dim_a - 2))

    def _linear(self, input, weight, bias=None):
        """F.linear as aten's ``linear``: 2-D input with bias -> addmm; contiguous input with a 1-D
        bias -> addmm on the flattened input; else matmul, then the bias added in the output type
        (native, reported)."""
        self._check(input, weight, bias)
        if weight.dim() != 2:
            raise _Native(f"a weight of {weight.dim()} dimensions")
        if bias is not None and (input.dim() == 2 or (input.is_contiguous() and (input.dim() == 3 or bias.dim() == 1))):
            K = input.shape[-1]
            x = input.reshape(-1, K)
            self._fits(K, weight.shape[1], input, weight)
            N = weight.shape[0]
            c = bias.expand(x.shape[0], N)
            d = self._gemm("linear", x[None], weight.t()[None], c[None], 1.0, 1.0)[0]
            return d.reshape(*input.shape[:-1], N)
        d = self._matmul_nd("linear", input, weight.t())
        if bias is not None:
            d.add_(bias)
            self._report.native["torch.Tensor.add_ (linear's bias)"] += 1
        return d

    def _einsum(self, equation, *operands):
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        if len(operands) != 2:
            raise _Native(f"einsum of {len(operands)} operand(s) (two are lowered to bmm)")
        x, y = operands
        self._check(x, y)
        return _einsum2(self, equation, x, y)

    def _scaled_mm(self, input, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
                   use_fast_accum=False):
        self._check(input, mat2, scale_a, scale_b, bias, scale_result)
        if bias is not None:
            raise _Native("_scaled_mm with bias (not modelled)")
        for s, what in ((scale_a, "scale_a"), (scale_b, "scale_b")):
            if isinstance(s, torch.Tensor) and s.numel() != 1:
                raise _Native(f"{what} of shape {tuple(s.shape)} (per-tensor scales only)")
        fa, fb = fmt_of(input.dtype), fmt_of(mat2.dtype)
        if not (fa and fb and fa.startswith("fp8") and fb.startswith("fp8")):
            raise _Native(f"_scaled_mm of {input.dtype} x {mat2.dtype}")
        out = fmt_of(out_dtype if out_dtype is not None else input.dtype)
        if out is None:
            raise _Native(f"out_dtype {out_dtype}")
        M, K = input.shape
        N = mat2.shape[1]
        ab = fa if fa == fb else f"{fa}x{fb}"
        t0 = time.perf_counter()
        model, df, src = self._fp8_choice(M, N, K, fa, fb, ab, out, bool(use_fast_accum))
        d = scaled_mm(input, mat2, scale_a, scale_b, scale_result=scale_result, out_dtype=out_dtype,
                      use_fast_accum=use_fast_accum, model=model, dataflow=df, backend=self.backend, jobs=self.jobs)
        self._record("_scaled_mm", 1, M, N, K, f"{input.dtype}x{mat2.dtype}".replace("torch.", ""),
                     str(d.dtype).removeprefix("torch."), get_model(model).id, resolve_dataflow(df).text()
                     if not isinstance(df, Dataflow) else df.text(), src, time.perf_counter() - t0, d)
        return d

    def _fp8_choice(self, M, N, K, fa, fb, ab, out, fast):
        arch = self.arch
        table = FP8_TABLES.get("rtx4060" if self.product in ("rtx4060",) else arch)
        if self.dataflow is not None:
            cand = f"{arch}-{ab}-fp32"
            return self._fp8_model(cand), self.dataflow, "emulate(dataflow=...)"
        if table is not None:
            from smtmodel.dataflow.dispatch import DispatchError, get_table
            t = get_table(table)
            try:
                disp = t.lookup(M, N, K, fa, fb, out, fast, **({} if self.workspace is None else
                                                                {"workspace": self.workspace}))
                return t.model_id(fa, fb), disp.dataflow, f"{table} {disp.split_text()}"
            except DispatchError as e:
                prof = f"{t.profile}-{'fast' if fast else 'slow'}"
                self._say(("fp8-default", table), f"_scaled_mm calls outside the recorded table use {prof} unsplit "
                          f"({str(e)[:160]}...)")
                return t.model_id(fa, fb), prof, f"default {prof} unsplit (not in {table})"
        if arch in FP8_PROFILE:
            prof = f"{FP8_PROFILE[arch]}-{'fast' if fast else 'slow'}"
            self._say(("fp8-default", arch), f"_scaled_mm: no dispatch table for this {arch} GPU; {prof} unsplit")
            tmpl = "ada-{ab}-fp32:zero_align=ignore" if arch == "ada" else "hopper-{ab}-fp32:zero_align=ignore"
            return self._fp8_model(tmpl.format(ab=ab)), prof, f"default {prof} unsplit"
        prof = f"{DEFAULT_PROFILE[arch]}:alpha_from_scales=yes"
        self._say(("fp8-default", arch), f"_scaled_mm: no FP8 dataflow recorded for {arch}; the default {prof}")
        return self._fp8_model(f"{arch}-{ab}-fp32"), prof, f"default {prof}"

    def _fp8_model(self, cand: str) -> str:
        return self._catalog_model(cand, f"{self.arch} has no FP8 model {cand.split(':')[0]}")

    def _catalog_model(self, cand: str, missing: str) -> str:
        """The catalog model ``cand`` (its UNVALIDATED note said once), or the call runs natively
        with ``missing`` as the reason."""
        try:
            m = get_model(cand)
        except ModelError:
            raise _Native(missing) from None
        note = unvalidated_note(m)
        if note:
            self._say(("unvalidated", m.id), note)
        return m.id

    def _sdpa(self, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
              enable_gqa=False):
        """The attention reading (docs/torch.md): S = Q·Kᵀ by the twin with an fp32 output, then
        ×scale, the mask and softmax in fp32 on the CPU, P rounded to the input dtype, O = P·V by the
        twin with an fp32 output, rounded to the input dtype."""
        self._check(query, key, value, attn_mask)
        if dropout_p:
            raise _Native("dropout_p > 0 (random)")
        if not (query.dtype == key.dtype == value.dtype):
            raise _Native(f"q, k, v of dtypes {query.dtype}, {key.dtype}, {value.dtype}")
        if query.dim() < 2:
            raise _Native("q of fewer than 2 dimensions")
        L, E, S, Ev = query.shape[-2], query.shape[-1], key.shape[-2], value.shape[-1]
        if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
            rep = query.shape[-3] // key.shape[-3]
            key, value = key.repeat_interleave(rep, -3), value.repeat_interleave(rep, -3)
        try:
            batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
        except RuntimeError:
            raise _Native("q, k, v batch shapes do not broadcast (torch raises)") from None
        q = query.expand(*batch, L, E).reshape(-1, L, E)
        k = key.expand(*batch, S, E).reshape(-1, S, E)
        v = value.expand(*batch, S, Ev).reshape(-1, S, Ev)
        s = self._gemm("sdpa q@k^T", q, k.mT, attention_out="fp32").reshape(*batch, L, S)
        sc = (1.0 / math.sqrt(E)) if scale is None else float(scale)
        s = s * torch.tensor(sc, dtype=torch.float32)
        if is_causal:
            s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.float()
        p = torch.softmax(s, -1)
        p = torch.where(torch.isnan(p), torch.zeros((), dtype=p.dtype), p)   # fully masked rows: 0 (_safe_softmax)
        p = p.to(query.dtype).reshape(-1, L, S)
        o = self._gemm("sdpa p@v", p, v, attention_out="fp32").reshape(*batch, L, Ev)
        self._report.native["softmax, scale and mask (sdpa, fp32)"] += 1
        return o.to(query.dtype)


def _einsum2(mode: emulate, equation: str, x, y):
    """A two-operand einsum lowered to one bmm as torch's ``sumproduct_pair`` does: the operands
    permuted to (batch, kept, contracted) and (batch, contracted, kept); dimensions in one operand
    only and not in the output summed first (natively, as torch does)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        raise _Native(f"einsum equation {equation!r} does not name two operands")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in eq]
    nell = max(t.dim() - (len(s) - 3) if "..." in s else 0 for t, s in zip((x, y), terms))
    ell = "".join(free[:nell])

    def expand(term, t):
        if "..." in term:
            n = t.dim() - (len(term) - 3)
            term = term.replace("...", ell[nell - n:])
        if len(term) != t.dim():
            raise _Native(f"einsum term {term!r} does not fit an operand of {t.dim()} dimensions")
        return term
    ia, ib = expand(terms[0], x), expand(terms[1], y)
    if len(set(ia)) != len(ia) or len(set(ib)) != len(ib):
        raise _Native("einsum with a repeated index in one operand (a diagonal)")
    if arrow:
        out = rhs.replace("...", ell)
    else:
        letters = [c for c in sorted(set(ia + ib)) if c not in ell and (ia + ib).count(c) == 1]
        out = ell + "".join(letters)
    if not all(c in ia or c in ib for c in out) or len(set(out)) != len(out):
        raise _Native(f"einsum output {rhs!r} is not a set of the inputs' indices")
    def drop(term, t, other):
        gone = [i for i, c in enumerate(term) if c not in out and c not in other]
        if not gone:
            return term, t
        mode._report.native["torch.sum (einsum: an index of one operand only)"] += 1
        return "".join(c for c in term if c in out or c in other), t.sum(dim=gone)
    (ia, x), (ib, y) = drop(ia, x, ib), drop(ib, y, ia)
    sizes = {}
    for term, t in ((ia, x), (ib, y)):
        for c, n in zip(term, t.shape):
            if c in sizes and sizes[c] != n and 1 not in (sizes[c], n):
                raise _Native(f"einsum index {c!r} has sizes {sizes[c]} and {n} (torch raises)")
            sizes[c] = max(sizes.get(c, 1), n) if c in sizes else n
    batch = [c for c in out if c in ia and c in ib]
    left = [c for c in out if c in ia and c not in ib]
    right = [c for c in out if c in ib and c not in ia]
    contr = [c for c in ia if c in ib and c not in out]

    def arrange(t, term, order):
        t = t.permute([term.index(c) for c in order])
        return t.expand(*[sizes[c] for c in order])
    nb, nl, nr, nk = (math.prod(sizes[c] for c in g) for g in (batch, left, right, contr))
    a = arrange(x, ia, batch + left + contr).reshape(nb, nl, nk)
    b = arrange(y, ib, batch + contr + right).reshape(nb, nk, nr)
    d = mode._gemm("einsum", a, b).reshape(*[sizes[c] for c in batch + left + right])
    order = batch + left + right
    return d.permute([order.index(c) for c in out])
