"""torch's ``cublasGemmEx`` path on the H100 as a dispatch rule: shape -> kernel class, split-K S,
dataflow (docs/invariance.md, "The H100 torch rule"). UNVALIDATED.

``torch.matmul`` / ``mm`` / ``addmm`` / ``linear`` on fp16 and bf16 CUDA tensors call
``cublasGemmEx`` (compute 32F); on the H100 cuBLAS runs nvjet kernels (wgmma) over 64-wide
k-tiles. Where it splits K, slice s owns the contiguous k-tiles [s*q, (s+1)*q), q = ceil(T/S),
T = ceil(K/64); each slice is an fp32 chain from +0 of the instruction model, the partials are
added forward in fp32, and the epilogue rounds once to the output format. That dataflow is
``cutlass3-sm90:tile=64,S=S`` on ``hopper-{fp16,bf16}-fp32``, and it reproduces, block and
whole-D digest, every fp16/bf16 torch capture of our H100 survey (``hwdata/survey/h100-sxm``,
:data:`CAPTURED`).

Which S cuBLAS picks is its heuristic's secret. The rule here (:data:`SPLIT_BY_MN`) is the
simplest one that every captured point obeys: the split grows as the output shrinks, by the
output's element count M*N (captured at K = 4096 only). It is a hypothesis, named
``UNVALIDATED`` in every answer, with the basis of each answer stated: ``captured`` (the shape
was captured and reproduced), ``rule`` (K = 4096, a shape not captured), or ``rule, K
extrapolated`` (no capture at that K). Two further parts are hypotheses for the next capture to
test, stated, not measured: a workspace too small for the fp32 partials (M*N*S*4 bytes) gives
S = 1; turning torch's reduced-precision reduction off changes nothing (the captured partials
are fp32 with it on, torch's default).

fp32 inputs are answered at the captured shapes only (:data:`POINTS`, nothing inferred
between them): with TF32 on (``allow_tf32``), the operands rounded to TF32 to nearest even and
12 contiguous slices of 32-wide k-tiles on ``hopper-tf32-fp32``; with TF32 off, cuBLAS's SGEMM:
16 FFMA chains over interleaved 8-wide k-tiles (``hopper-fp32-fp32``), added serially.

Refused, one line each (:class:`~smtmodel.dataflow.dispatch.DispatchError`): fp32 shapes not
captured, outputs other than the input format (torch's matmul returns its input's dtype), and
N or K not a multiple of 8 (cuBLAS's fallback kernels there, with output-type partials, are
not modelled).
"""

from __future__ import annotations

from dataclasses import dataclass

from .dispatch import DispatchError
from .profiles import profile_variant
from .spec import Dataflow

NAME = "torch-h100-gemmex"
DEVICE = "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs), torch 2.11.0+cu130 (CUDA 13.0)"
CALL = "torch.matmul / mm / addmm / linear (cublasGemmEx, compute 32F)"
VALIDATED = False
FORMATS = ("fp16", "bf16")
K_TILE = 64
"""The nvjet kernels' k-tile: the split-K slice boundaries fall on multiples of it."""
ALIGN = 8
"""N and K multiples of 8 (16 bytes of fp16/bf16): the leading dimensions of torch's row-major
operands, so the rule covers any M."""
SPLIT_BY_MN = ((1 << 17, 1), (1 << 16, 2), (0, 3))
"""(threshold, S): the first row with M*N >= threshold gives S (capped at the k-tile count)."""
WORKSPACE = 32 << 20
"""torch's cuBLAS workspace on sm_90 (32 MiB unless ``CUBLAS_WORKSPACE_CONFIG`` says otherwise)."""
POINTS = {
    ("tf32", 256, 256, 4096): dict(model="hopper-tf32-fp32:tf32_low=RNE", tile=32, slices=12, assign="contiguous",
                                   kernel_class="nvjet sm_90 wgmma tf32, 32-wide k-tiles, split-K 12 (fp32 partials)",
                                   capture="matmul-fp32-tf32"),
    ("fp32", 256, 256, 4096): dict(model="hopper-fp32-fp32", tile=8, slices=16, assign="interleaved",
                                   kernel_class="SGEMM (FFMA): 16 chains over interleaved 8-wide k-tiles",
                                   capture="matmul-fp32"),
}
"""(format, M, N, K) -> the reproduced dataflow of a captured fp32 call (``tf32``: TF32 on)."""
K_CAPTURED = (4096,)
PROFILE = "cutlass3-sm90"
"""The epilogue D = fma(beta, C, RN(alpha*acc)); beta = 0: RN(alpha*acc). The captured addmm
(alpha = 2, beta = -1) does not tell it from ``cutlass2``'s fma(alpha, acc, RN(beta*C)): both
products are exact there."""

CAPTURED = (
    ("matmul-fp16", 256, 256, 4096, "fp16", 2),
    ("matmul-bf16", 256, 256, 4096, "bf16", 2),
    ("addmm-fp16", 256, 256, 4096, "fp16", 2),
    ("addmm-bf16", 256, 256, 4096, "bf16", 2),
    *((f"batch-bf16/M{m}", m, 1024, 4096, "bf16", s) for m, s in
      ((2, 3), (4, 3), (8, 3), (16, 3), (32, 3), (64, 2), (128, 1), (256, 1), (512, 1), (1024, 1), (2048, 1),
       (4096, 1))),
)
"""(capture, M, N, K, format, S) of the survey's reproduced fp16/bf16 torch calls (M = 1 of the
bf16 sweep fits S = 2, 3, 4 alike and decides nothing). ``tests/test_hopper_gemmex.py`` checks
the rule and each capture's bits against ``hwdata/survey/h100-sxm``."""


@dataclass(frozen=True)
class Predicted:
    """The rule's answer for one call (the interface of :class:`~smtmodel.dataflow.dispatch.Dispatch`
    that the invariance queries read: ``dataflow``, ``splitk``, :meth:`kernel`, :meth:`split_text`)."""
    table: str
    M: int
    N: int
    K: int
    fmt_a: str
    fmt_b: str
    out: str
    workspace: int
    reduced: bool
    splitk: int
    kernel_class: str
    basis: str                 # captured | rule | rule, K extrapolated
    model: str
    dataflow: Dataflow
    validated: bool = VALIDATED

    def kernel(self) -> tuple:
        return (self.kernel_class,)

    def kernel_text(self) -> str:
        return f"{self.kernel_class} (basis: {self.basis}; {'validated' if self.validated else 'UNVALIDATED'})"

    def split_text(self) -> str:
        return "unsplit (S=1)" if self.splitk == 1 else f"split-K S={self.splitk} serial"

    def to_json(self) -> dict:
        return {"table": self.table, "M": self.M, "N": self.N, "K": self.K, "fmt_a": self.fmt_a, "fmt_b": self.fmt_b,
                "out": self.out, "workspace": self.workspace, "reduced_precision_reduction": self.reduced,
                "splitK": self.splitk, "kernel_class": self.kernel_class, "basis": self.basis, "model": self.model,
                "dataflow": self.dataflow.text(), "validated": self.validated}


def split_count(M: int, N: int, K: int, workspace: int = WORKSPACE) -> int:
    """S of the rule (:data:`SPLIT_BY_MN`), lowered until every slice of ceil(T/S) k-tiles holds
    one (T = ceil(K/64)); 1 where the fp32 partials (M*N*S*4 bytes) do not fit the workspace."""
    mn = M * N
    S = next(s for lim, s in SPLIT_BY_MN if mn >= lim)
    T = -(-K // K_TILE)
    while S > 1 and (S - 1) * -(-T // S) >= T:      # every slice holds a k-tile
        S -= 1
    return 1 if S > 1 and M * N * S * 4 > workspace else S


def _captured(M, N, K, fmt) -> bool:
    return any((m, n, k, f) == (M, N, K, fmt) for _, m, n, k, f, _ in CAPTURED)


def check(M: int, N: int, K: int, in_fmt: str, out_fmt: str) -> None:
    """Refuse a call outside the rule's domain (one line)."""
    if in_fmt in ("tf32", "fp32"):
        if out_fmt != "fp32":
            raise DispatchError(f"{NAME}: output {out_fmt} for {in_fmt} inputs: torch's matmul returns fp32")
        if (in_fmt, M, N, K) not in POINTS:
            have = ", ".join(f"{m}x{n}x{k}" for f, m, n, k in POINTS if f == in_fmt)
            raise DispatchError(f"{NAME}: {in_fmt} {'(TF32 on)' if in_fmt == 'tf32' else '(TF32 off)'} is answered at "
                                f"captured shapes only ({have}); M={M} N={N} K={K} is not among them "
                                "(nothing is inferred between captures)")
        return
    if in_fmt not in FORMATS:
        raise DispatchError(f"{NAME}: {in_fmt} inputs are outside the rule (it covers {', '.join(FORMATS)}, "
                            "and tf32/fp32 at captured shapes)")
    if out_fmt != in_fmt:
        raise DispatchError(f"{NAME}: output {out_fmt} for {in_fmt} inputs: torch's matmul returns its input's "
                            f"dtype ({in_fmt})")
    for what, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or v < 1:
            raise DispatchError(f"{NAME}: {what}={v!r}: a positive integer")
    bad = [f"{w}={v}" for w, v in (("N", N), ("K", K)) if v % ALIGN]
    if bad:
        raise DispatchError(f"{NAME}: {', '.join(bad)} not a multiple of {ALIGN}: cuBLAS's kernels for unaligned "
                            "shapes (output-type partials) are not modelled")


def predict(M: int, N: int, K: int, in_fmt: str = "bf16", out_fmt: str | None = None, *,
            workspace: int = WORKSPACE, reduced: bool = True) -> Predicted:
    """The rule's kernel class, S and dataflow for torch's (M, N, K) (module docstring)."""
    out_fmt = out_fmt or ("fp32" if in_fmt == "tf32" else in_fmt)
    check(M, N, K, in_fmt, out_fmt)
    if in_fmt in ("tf32", "fp32"):
        pt = POINTS[(in_fmt, M, N, K)]
        df = profile_variant(PROFILE, tile=pt["tile"], slices=pt["slices"], assign=pt["assign"], out="fp32")
        return Predicted(NAME, M, N, K, in_fmt, in_fmt, out_fmt, int(workspace), bool(reduced), pt["slices"],
                         pt["kernel_class"], "captured", pt["model"], df)
    S = split_count(M, N, K, workspace)
    basis = "captured" if _captured(M, N, K, in_fmt) else "rule" if K in K_CAPTURED else "rule, K extrapolated"
    kc = f"nvjet sm_90 wgmma, {K_TILE}-wide k-tiles, " + ("unsplit" if S == 1 else f"split-K {S} (fp32 partials)")
    df = profile_variant(PROFILE, tile=K_TILE, slices=S, out=out_fmt)
    return Predicted(NAME, M, N, K, in_fmt, in_fmt, out_fmt, int(workspace), bool(reduced), S, kc, basis,
                     f"hopper-{in_fmt}-fp32", df)


class RuleTable:
    """The rule behind the dispatch-table interface the invariance queries read
    (:class:`~smtmodel.dataflow.dispatch.Table`): every aligned M is answered, none recorded."""

    name = NAME
    device = DEVICE
    call = CALL
    validated = VALIDATED
    workspaces = [WORKSPACE]

    def setting_text(self, fmt_a, fmt_b, out, fast, workspace) -> str:
        return f"{fmt_a} x {fmt_b} -> {out}, workspace {workspace >> 20} MiB (UNVALIDATED rule)"

    def model_id(self, fmt_a: str, fmt_b: str) -> str:
        if fmt_a != fmt_b or fmt_a not in FORMATS:
            raise DispatchError(f"{NAME}: formats {fmt_a} x {fmt_b}; the rule covers fp16 x fp16 and bf16 x bf16")
        return f"hopper-{fmt_a}-fp32"

    def lookup(self, M, N, K, fmt_a="bf16", fmt_b="bf16", out="bf16", fast=True, workspace=WORKSPACE) -> Predicted:
        self.model_id(fmt_a, fmt_b)
        return predict(int(M), int(N), int(K), fmt_a, out, workspace=workspace)

    def lookup_m(self, Ms, N, K, fmt_a="bf16", fmt_b="bf16", out="bf16", fast=True, workspace=WORKSPACE) -> dict:
        """{M: Predicted} for every M >= 1 of ``Ms`` (the rule answers any M of an aligned N, K)."""
        self.model_id(fmt_a, fmt_b)
        check(1, int(N), int(K), fmt_a, out)
        return {int(m): predict(int(m), int(N), int(K), fmt_a, out, workspace=workspace) for m in Ms if int(m) >= 1}

    def not_in_table(self, M, N, K, fmt_a, fmt_b, out, fast, workspace) -> str:
        try:
            self.lookup(M, N, K, fmt_a, fmt_b, out, fast, workspace)
        except DispatchError as e:
            return str(e)
        return f"{NAME}: M={M} N={N} K={K} is inside the rule"
