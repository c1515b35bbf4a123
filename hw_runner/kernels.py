"""The registry of instruction kernels and the CUDA source generated for each.

A kernel runs one tensor-core instruction (or a chain of them) per case. The host does all
layout work (:mod:`hw_runner.layouts`): it packs each case's A, B and C into the exact
per-lane registers (``mma.sync``) or shared-memory images (``wgmma``, ``tcgen05``) the
instruction reads, and unpacks every register of D afterwards. So one kernel serves both modes:

- single: the case's a is row 0 of A, b column 0 of B, c is C[0][0], every other entry +0;
  the host reads D[0][0] (../shared/spec/vectors.md, "semantics of one case");
- replicate (CLFP step 1, seed 000 §3.1.1): a is copied into every row, b into every column,
  c into every entry of C; the host checks that all of D is bitwise identical.

Chaining (k longer than the instruction's K): the case's k products are cut into consecutive
chunks of K (the last one padded with +0 entries); chunk j runs with C = the D of chunk j-1
(chunk 0 with the case's c), in registers, as a real GEMM loop over K would do. The output of
every chunk is therefore rounded to the accumulator format before it is fed back.

Kernel signature (all kernels)::

    mmaprobe_<id>(const T *A, const T *B, const U *C, U *D, int n_cases, int n_chunks)

``mma``: one warp per case (grid-stride); A/B: ``[case][chunk][lane][reg]``; C/D:
``[case][lane][reg]``. ``wgmma`` and ``tcgen05``: one 128-thread warpgroup (one CTA) per case;
A/B: shared-memory images ``[case][chunk][word]``; C/D: ``[case][thread][reg]`` (``tcgen05``: D
moved through tensor memory). Block-scaled kernels take two more buffers after D, ``SA`` and
``SB`` (``const uint32_t *``): ``mma``, the scale register of each lane ``[case][chunk][lane]``;
``tcgen05``, the 512-byte scale images ``[case][chunk][word]`` (:class:`layouts.ScaleFragment`,
:class:`layouts.TmemScales`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

from . import layouts
from .amd.kernels import MFMA_KERNELS, is_gfx
from .errors import HarnessError

PTX_TYPE = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp8e4m3": "e4m3",
            "fp8e5m2": "e5m2", "fp6e2m3": "e2m3", "fp6e3m2": "e3m2", "fp4e2m1": "e2m1", "fp32": "f32",
            "fp64": "f64", "int8": "s8", "uint8": "u8", "int4": "s4", "uint4": "u4", "int32": "s32",
            "e8m0": "ue8m0", "ue4m3": "ue4m3"}
ELEM_BITS = {"fp16": 16, "bf16": 16, "tf32": 32, "fp8e4m3": 8, "fp8e5m2": 8, "fp32": 32, "fp64": 64,
             "int8": 8, "uint8": 8, "int32": 32, "int4": 4, "uint4": 4}
VALUE_BITS = {"fp8e4m3": 8, "fp8e5m2": 8, "fp6e2m3": 6, "fp6e3m2": 6, "fp4e2m1": 4}
"""Width of each ``.kind::f8f6f4`` operand format: FP6 and FP4 sit in 8-bit containers."""
SCALE_BITS = {"e8m0": 8, "ue4m3": 7}
"""Width of each block-scale format (a UE4M3 scale is an E4M3 byte whose sign bit is 0)."""
WGMMA_N = 8


def arch_num(arch: str) -> int:
    """``'sm_90a'`` -> 90."""
    m = re.fullmatch(r"sm_(\d+)[af]?", arch)
    if not m:
        raise HarnessError(f"not an architecture name: {arch!r} (expected e.g. sm_80 or sm_90a)")
    return int(m.group(1))


class InstructionSpec(Protocol):
    """What the harness reads of a kernel, NVIDIA's (:class:`KernelSpec`) and AMD's
    (:class:`hw_runner.amd.kernels.MfmaSpec`) alike: the formats (A's and B's, C's, D's), the
    block scales, K, the targets that run it and the instruction a device key names."""

    id: str
    family: str
    shape: tuple[int, int, int]
    in_fmt: str
    c_fmt: str
    out_fmt: str
    note: str

    @property
    def k(self) -> int: ...
    @property
    def arch(self) -> str: ...                      # the oldest target that runs it
    @property
    def operand_fmts(self) -> tuple[str, str]: ...  # (A's format, B's format)
    @property
    def in_key(self) -> str: ...                    # the operand formats as model ids spell them
    @property
    def satfinite(self) -> bool: ...                # integer: s32 clamped instead of wrapped
    @property
    def scale_fmt(self) -> str | None: ...
    @property
    def scale_block(self) -> int | None: ...
    @property
    def scale_key(self) -> tuple[str, int] | None: ...   # (scale format, products per scale)
    @property
    def block_scaled(self) -> bool: ...             # scales packed beside the fragments (False for MFMA: own buffers)
    @property
    def threads(self) -> int: ...
    @property
    def function(self) -> str: ...
    @property
    def instruction(self) -> str: ...
    @property
    def fragments(self): ...
    def instruction_for(self, arch: str) -> str: ...
    def supports(self, arch: str) -> bool: ...


@dataclass(frozen=True)
class KernelSpec:
    """One instruction kernel.

    ``arch``: the target where its SASS is checked and the oldest arch that runs it;
    ``max_arch``: the newest arch that still lowers it to a tensor-core instruction (None: no
    limit); ``sass``: ``(arch, regex)`` pairs, the SASS expected when compiled for ``arch`` and
    newer archs up to the next entry; ``sass_also``: ``(arch, regex)`` pairs, whole instructions
    also required wherever the ``sass`` entry of the same ``arch`` is the one in force (the other
    parts of an emulating lowering); ``note``: what is known about the lowering.
    """

    id: str
    family: str                       # "mma", "wgmma", "tcgen05" or "ffma" (CUDA-core fma.rn.f32)
    ptx: str
    arch: str
    shape: tuple[int, int, int]
    in_fmt: str
    c_fmt: str
    out_fmt: str
    sass: tuple[tuple[str, str], ...]
    max_arch: str | None = None
    note: str = ""
    satfinite: bool = False           # integer mma with .satfinite (s32 clamped instead of wrapped)
    b_fmt: str | None = None          # B's format where it differs from A's (``in_fmt``): FP8 e4m3 x e5m2
    kind: str | None = None           # PTX ``.kind::`` (f8f6f4, mxf8f6f4, mxf4, mxf4nvf4, f16, tf32)
    scale_fmt: str | None = None      # block scaling: the scale format (e8m0, ue4m3)
    scale_vec: int = 0                # block scaling: scales per row of A / column of B (``.scale_vec::NX``)
    arch_specific: bool = False       # built for the ``sm_XXa`` target (arch-specific PTX features)
    sass_also: tuple[tuple[str, str], ...] = ()   # (arch, regex): an instruction (whole text) also required where sass's arch entry holds
    emulated_from: str | None = None  # from this arch on nvcc emulates the PTX with other instructions (note says how)
    absent_note: str = ""             # why a newer arch in the family lacks it (said when it is asked for one)

    @property
    def block_scaled(self) -> bool:
        return self.scale_fmt is not None

    @property
    def scale_block(self) -> int | None:
        """Products per scale factor (K / scale_vec), None without block scaling."""
        return self.k // self.scale_vec if self.block_scaled else None

    @property
    def scale_key(self) -> tuple[str, int] | None:
        """(scale format, products per scale) as a model's ``scale_fmt``/``scale_block`` spell them."""
        return (self.scale_fmt, self.scale_block) if self.block_scaled else None

    @property
    def k(self) -> int:
        return self.shape[2]

    @property
    def operand_fmts(self) -> tuple[str, str]:
        """(A's format, B's format)."""
        return (self.in_fmt, self.b_fmt or self.in_fmt)

    @property
    def in_key(self) -> str:
        """The operand formats as one name (``fp8e4m3xfp8e5m2`` for mixed operands), as model ids spell it."""
        a, b = self.operand_fmts
        return a if a == b else f"{a}x{b}"

    @property
    def threads(self) -> int:
        return 128 if self.family in ("wgmma", "tcgen05") else 32

    @property
    def function(self) -> str:
        return f"mmaprobe_{self.id}"

    @property
    def instruction(self) -> str:
        """The instruction as the device key names it (the PTX; MFMA kernels: the mnemonic)."""
        return self.ptx

    def instruction_for(self, arch: str) -> str:
        """The instruction named in the device key of a run on ``arch``."""
        return self.ptx

    def supports(self, arch: str) -> bool:
        if is_gfx(arch):
            return False
        n = arch_num(arch)
        if self.family == "wgmma":
            return n == 90
        return n >= arch_num(self.arch) and (self.max_arch is None or n <= arch_num(self.max_arch))

    def compile_target(self, arch: str) -> str:
        """The nvcc ``-arch`` for a device of ``arch`` (wgmma, tcgen05 and the sm_120a ``mma``
        kinds need the arch-specific ``a`` features)."""
        n = arch_num(arch)
        return f"sm_{n}a" if self.family == "wgmma" or self.arch_specific else f"sm_{n}"

    def expected_sass(self, arch: str) -> str:
        """Regex of the SASS expected on ``arch`` (the entry of the newest listed arch <= it)."""
        n = arch_num(arch)
        best = [rx for a, rx in self.sass if arch_num(a) <= n]
        if not best:
            raise HarnessError(f"{self.id} does not run on {arch} (needs {self.arch})")
        return best[-1]

    def also_expected(self, arch: str) -> list[str]:
        """Regexes of whole instructions the SASS on ``arch`` must also hold (an emulation's parts):
        the ``sass_also`` entries listed at the arch of the ``sass`` entry in force on ``arch``."""
        n = arch_num(arch)
        held = max((arch_num(a) for a, _ in self.sass if arch_num(a) <= n), default=None)
        return [rx for a, rx in self.sass_also if arch_num(a) == held]

    def emulated_on(self, arch: str) -> bool:
        """Does nvcc lower this PTX on ``arch`` to an emulation (other MMA and ALU instructions)?"""
        return self.emulated_from is not None and arch_num(arch) >= arch_num(self.emulated_from)

    @cached_property
    def fragments(self):
        """mma: (A, B, C) :class:`layouts.Fragment`; wgmma: (A, B) :class:`layouts.SmemOperand`
        and the D :class:`layouts.Fragment`."""
        acc = ELEM_BITS[self.out_fmt]
        m, n, k = self.shape
        if self.family == "wgmma":
            eb = ELEM_BITS[self.in_fmt]
            return (layouts.SmemOperand(m, k, eb), layouts.SmemOperand(n, k, eb), layouts.wgmma_d(n, acc))
        if self.family == "ffma":
            return layouts.ffma_m8n4k1(acc)
        if self.family == "tcgen05":
            (ea, va), (eb, vb) = (_smem_bits(self.kind, f) for f in self.operand_fmts)
            return (layouts.SmemOperand(m, k, ea, value_bits=va, version=1),
                    layouts.SmemOperand(n, k, eb, value_bits=vb, version=1), layouts.tcgen05_d(n, acc))
        if self.kind in ("f8f6f4", "mxf8f6f4"):        # 8-bit containers (PTX ISA 9.7.14.5.10, .5.14)
            fa, fb, fc = layouts.m16n8k32_fp8(acc)
            return (*(_contained(f, fmt) for f, fmt in zip((fa, fb), self.operand_fmts)), fc)
        table = {
            ("fp16", 8, 8, 4): lambda: layouts.m8n8k4_f16(acc),
            ("fp64", 8, 8, 4): layouts.m8n8k4_f64,
            ("fp16", 16, 8, 8): lambda: layouts.m16n8k8_16bit(acc),
            ("bf16", 16, 8, 8): lambda: layouts.m16n8k8_16bit(acc),
            ("fp16", 16, 8, 16): lambda: layouts.m16n8k16_16bit(acc),
            ("bf16", 16, 8, 16): lambda: layouts.m16n8k16_16bit(acc),
            ("tf32", 16, 8, 4): layouts.m16n8k4_tf32,
            ("tf32", 16, 8, 8): layouts.m16n8k8_tf32,
            ("fp8e4m3", 16, 8, 32): lambda: layouts.m16n8k32_fp8(acc),
            ("fp8e5m2", 16, 8, 32): lambda: layouts.m16n8k32_fp8(acc),
            ("int8", 16, 8, 32): lambda: layouts.m16n8k32_fp8(acc),     # same 8-bit layout (9.7.14.5.10)
            ("uint8", 16, 8, 32): lambda: layouts.m16n8k32_fp8(acc),
            ("int8", 8, 8, 16): layouts.m8n8k16_8bit,
            ("uint8", 8, 8, 16): layouts.m8n8k16_8bit,
            ("int4", 8, 8, 32): layouts.m8n8k32_4bit,
            ("uint4", 8, 8, 32): layouts.m8n8k32_4bit,
            ("int4", 16, 8, 32): layouts.m16n8k32_4bit,
            ("uint4", 16, 8, 32): layouts.m16n8k32_4bit,
            ("int4", 16, 8, 64): layouts.m16n8k64_4bit,
            ("uint4", 16, 8, 64): layouts.m16n8k64_4bit,
            ("fp4e2m1", 16, 8, 64): layouts.m16n8k64_4bit,       # .kind::mxf4 / mxf4nvf4: no padding
        }
        return table[(self.in_fmt, m, n, k)]()

    @cached_property
    def scale_fragments(self):
        """Block scaling: the (scale_A, scale_B) :class:`layouts.ScaleFragment` (None otherwise)."""
        if not self.block_scaled:
            return None
        bits = SCALE_BITS[self.scale_fmt]
        if self.family == "tcgen05":
            m, n, _ = self.shape
            return (layouts.TmemScales("SFA", m, self.scale_vec, bits), layouts.TmemScales("SFB", self.scale_vec, n, bits))
        return layouts.mma_scales(self.scale_vec, bits)

    @property
    def instr_descriptor(self) -> int:
        """tcgen05: the 32-bit instruction descriptor (PTX ISA 9.7.16.4.2): Table 42 for
        .kind::f16/tf32/f8f6f4/i8 (i8: saturate bit 3; dtype bits 4-5, atype 7-9, btype 10-12, K-major A and B, N >> 3
        at 17-22, M >> 4 at 24-28), Table 43 for .kind::mxf8f6f4 and Table 44 for .kind::mxf4 /
        mxf4nvf4 (scale type bit 23: UE8M0 1, UE4M3 0; M >> 7 at 27-28; scale factor IDs 0; K = 64)."""
        if self.family != "tcgen05":
            raise HarnessError(f"{self.id} is not a tcgen05 kernel")
        m, n, _ = self.shape
        fa, fb = self.operand_fmts
        if self.kind == "i8":       # Table 42, .kind::i8: saturate bit 3, dtype S32 = 2, U8 = 0 / S8 = 1
            return self.satfinite << 3 | 2 << 4 | _UMMA_TYPE[fa] << 7 | _UMMA_TYPE[fb] << 10 | (n >> 3) << 17 | (m >> 4) << 24
        if not self.block_scaled:
            return (self.out_fmt == "fp32") << 4 | _UMMA_TYPE[fa] << 7 | _UMMA_TYPE[fb] << 10 | (n >> 3) << 17 | (m >> 4) << 24
        ta, tb = (1, 1) if self.kind in ("mxf4", "mxf4nvf4") else (_UMMA_TYPE[fa], _UMMA_TYPE[fb])
        return ta << 7 | tb << 10 | (n >> 3) << 17 | (self.scale_fmt == "e8m0") << 23 | (m >> 7) << 27

    def source(self) -> str:
        """CUDA C++ source of this kernel (one ``extern "C"`` function)."""
        return {"wgmma": _wgmma_source, "tcgen05": _tcgen05_source,
                "ffma": _ffma_source}.get(self.family, _mma_source)(self)


_UMMA_TYPE = {"fp16": 0, "bf16": 1, "tf32": 2, "fp8e4m3": 0, "fp8e5m2": 1, "fp6e2m3": 3, "fp6e3m2": 4, "fp4e2m1": 5,
              "uint8": 0, "int8": 1}
"""tcgen05 atype/btype codes (PTX ISA 9.7.16.4.2 Table 42; .kind::i8: unsigned 8b 0, signed 8b 1)."""


def _smem_bits(kind: str, fmt: str) -> tuple[int, int | None]:
    """(normalizing width, packed width) of a tcgen05 operand in shared memory: the byte-sized
    types as they are; ``.kind::f8f6f4``/``.kind::mxf8f6f4`` FP6/FP4 sixteen to a 16-byte row
    with padding (8, 6 or 4); ``.kind::mxf4``/``mxf4nvf4`` FP4 two per byte (4, None)."""
    if kind in ("mxf4", "mxf4nvf4"):
        return 4, None
    if kind in ("f8f6f4", "mxf8f6f4"):
        return 8, (None if VALUE_BITS[fmt] == 8 else VALUE_BITS[fmt])
    return ELEM_BITS[fmt], None


def _contained(frag, fmt: str):
    """``frag`` with ``fmt``'s element in its 8-bit container: FP6 in the lower 6 bits, FP4 in the
    central 4 (bits 2-5), PTX ISA 9.7.14.5.14."""
    bits = VALUE_BITS[fmt]
    return layouts.in_containers(frag, bits, 2 if bits == 4 else 0)


# ---- CUDA source generation ----------------------------------------------------------------

_ACC = {  # accumulator C++ type, asm constraint, load, store
    "fp32": ("float", "f", "__uint_as_float({})", "__float_as_uint({})", "uint32_t"),
    "fp16": ("uint32_t", "r", "{}", "{}", "uint32_t"),
    "fp64": ("double", "d", "__longlong_as_double((long long){})", "(unsigned long long)__double_as_longlong({})",
             "unsigned long long"),
    "int32": ("uint32_t", "r", "{}", "{}", "uint32_t"),
}


def _acc_decls(spec, n_regs, base):
    ctype, _, load, _, _ = _ACC[spec.out_fmt]
    return "\n".join(f"    {ctype} d{j} = {load.format(f'{base}[{j}]')};" for j in range(n_regs))


def _acc_stores(spec, n_regs, base):
    store = _ACC[spec.out_fmt][3]
    return "\n".join(f"    {base}[{j}] = {store.format(f'd{j}')};" for j in range(n_regs))


def _mma_source(spec: KernelSpec) -> str:
    fa, fb, fc = spec.fragments
    na, nb, nc = fa.n_regs, fb.n_regs, fc.n_regs
    in_t = "unsigned long long" if fa.reg_bits == 64 else "uint32_t"
    in_c = "d" if fa.reg_bits == 64 else "r"
    acc_t, acc_c, _, _, mem_t = _ACC[spec.out_fmt]
    in_load = "__longlong_as_double((long long){})" if fa.reg_bits == 64 else "{}"
    in_var = "double" if fa.reg_bits == 64 else "uint32_t"
    ops = list(range(nc + na + nb + 2))
    d_ops = ", ".join(f"%{i}" for i in ops[:nc])
    a_ops = ", ".join(f"%{i}" for i in ops[nc:nc + na])
    b_ops = ", ".join(f"%{i}" for i in ops[nc + na:nc + na + nb])
    outs = ", ".join(f'"+{acc_c}"(d{j})' for j in range(nc))
    ins = ", ".join([f'"{in_c}"(a{j})' for j in range(na)] + [f'"{in_c}"(b{j})' for j in range(nb)])
    a_loads = " ".join(f"{in_var} a{j} = {in_load.format(f'a[{j}]')};" for j in range(na))
    b_loads = " ".join(f"{in_var} b{j} = {in_load.format(f'b[{j}]')};" for j in range(nb))
    scale_args = scale_ops = scale_loads = ""
    if spec.block_scaled:   # scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}
        scale_args = "\n    const uint32_t* __restrict__ SA, const uint32_t* __restrict__ SB,"
        scale_ops = f", {{%{nc + na + nb}}}, {{0, 0}}, {{%{nc + na + nb + 1}}}, {{0, 0}}"
        ins += ', "r"(sa), "r"(sb)'
        scale_loads = ("const size_t sl = ((size_t)cs * n_chunks + ch) * 32 + lane; "
                       "uint32_t sa = SA[sl]; uint32_t sb = SB[sl];")
    return f"""
// {spec.id}: {spec.ptx} (target {spec.arch})
extern "C" __global__ void __launch_bounds__(256) {spec.function}(
    const {in_t}* __restrict__ A, const {in_t}* __restrict__ B,
    const {mem_t}* __restrict__ C, {mem_t}* __restrict__ D,{scale_args} int n_cases, int n_chunks)
{{
  const int lane = threadIdx.x & 31;
  const int wpb = blockDim.x >> 5;
  for (int cs = blockIdx.x * wpb + (threadIdx.x >> 5); cs < n_cases; cs += gridDim.x * wpb) {{
    const {mem_t}* c = C + ((size_t)cs * 32 + lane) * {nc};
{_acc_decls(spec, nc, 'c')}
    for (int ch = 0; ch < n_chunks; ++ch) {{
      const {in_t}* a = A + (((size_t)cs * n_chunks + ch) * 32 + lane) * {na};
      const {in_t}* b = B + (((size_t)cs * n_chunks + ch) * 32 + lane) * {nb};
      {a_loads}
      {b_loads}{(chr(10) + '      ' + scale_loads) if scale_loads else ''}
      asm volatile("{spec.ptx} {{{d_ops}}}, {{{a_ops}}}, {{{b_ops}}}, {{{d_ops}}}{scale_ops};\\n"
                   : {outs} : {ins});
    }}
    {mem_t}* d = D + ((size_t)cs * 32 + lane) * {nc};
{_acc_stores(spec, nc, 'd')}
  }}
}}
"""


def _wgmma_source(spec: KernelSpec) -> str:
    sa, sb, fd = spec.fragments
    nd = fd.n_regs
    acc_c = _ACC[spec.out_fmt][1]
    mem_t = _ACC[spec.out_fmt][4]
    d_ops = ", ".join(f"%{j}" for j in range(nd))
    outs = ", ".join(f'"+{acc_c}"(d{j})' for j in range(nd))
    trans = ", 0, 0" if spec.in_fmt in ("fp16", "bf16") else ""  # imm-trans-a/b: K-major
    base_a = (sa.lbo >> 4) << 16 | (sa.sbo >> 4) << 32
    base_b = (sb.lbo >> 4) << 16 | (sb.sbo >> 4) << 32
    return f"""
// {spec.id}: {spec.ptx} (target {spec.arch}); A, B K-major in shared memory, no swizzle
extern "C" __global__ void __launch_bounds__(128) {spec.function}(
    const uint32_t* __restrict__ A, const uint32_t* __restrict__ B,
    const {mem_t}* __restrict__ C, {mem_t}* __restrict__ D, int n_cases, int n_chunks)
{{
  __shared__ __align__(128) uint32_t sA[{sa.words}];
  __shared__ __align__(128) uint32_t sB[{sb.words}];
  const int t = threadIdx.x;
  const int one = 1;
  const unsigned long long da = {base_a}ull | ((((uint32_t)__cvta_generic_to_shared(sA)) & 0x3FFFF) >> 4);
  const unsigned long long db = {base_b}ull | ((((uint32_t)__cvta_generic_to_shared(sB)) & 0x3FFFF) >> 4);
  for (int cs = blockIdx.x; cs < n_cases; cs += gridDim.x) {{
    const {mem_t}* c = C + ((size_t)cs * 128 + t) * {nd};
{_acc_decls(spec, nd, 'c')}
    for (int ch = 0; ch < n_chunks; ++ch) {{
      const uint32_t* a = A + ((size_t)cs * n_chunks + ch) * {sa.words};
      const uint32_t* b = B + ((size_t)cs * n_chunks + ch) * {sb.words};
      __syncthreads();
      for (int w = t; w < {sa.words}; w += 128) sA[w] = a[w];
      for (int w = t; w < {sb.words}; w += 128) sB[w] = b[w];
      asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
      __syncthreads();
      asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
      asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nd + 2}, 0;\\n"
                   "{spec.ptx} {{{d_ops}}}, %{nd}, %{nd + 1}, p, 1, 1{trans};\\n}}\\n"
                   : {outs} : "l"(da), "l"(db), "r"(one) : "memory");
      asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
    }}
    {mem_t}* d = D + ((size_t)cs * 128 + t) * {nd};
{_acc_stores(spec, nd, 'd')}
  }}
}}
"""


def _tcgen05_source(spec: KernelSpec) -> str:
    """One CTA (a warpgroup) per case: warp 0 allocates 32 tensor-memory columns; each case's C
    goes into D's columns 0..N-1 with tcgen05.st; per chunk the threads copy A and B (and the
    scale images) into shared memory, thread 0 issues (tcgen05.cp of the scales and) tcgen05.mma
    with D accumulating (enable-input-d true) and tcgen05.commit onto an mbarrier every thread
    waits on; tcgen05.ld reads D back."""
    sa, sb, fd = spec.fragments
    n = spec.shape[1]
    acc_store = "({} & 0xFFFFu)" if spec.out_fmt == "fp16" else "{}"
    base_a = (sa.lbo >> 4) << 16 | (sa.sbo >> 4) << 32 | sa.version << 46
    base_b = (sb.lbo >> 4) << 16 | (sb.sbo >> 4) << 32 | sb.version << 46
    regs = ", ".join(f"%{i + 1}" for i in range(n))
    c_ins = ", ".join(f'"r"(c[{i}])' for i in range(n))
    d_outs = ", ".join(f'"=r"(d[{i}])' for i in range(n))
    mma = f"tcgen05.mma.cta_group::1.kind::{spec.kind}"
    scale_args = scale_smem = scale_copy = scale_issue = ""
    mma_ops = "[%0], %1, %2, %3, p"
    if spec.block_scaled:
        mma += f".block_scale.scale_vec::{spec.scale_vec}X"
        mma_ops = "[%0], %1, %2, %3, [%4], [%5], p"
        sf_desc = (128 >> 4) << 32 | 1 << 46            # 32 rows x 16 bytes: SBO 128, no LBO
        scale_args = "\n    const uint32_t* __restrict__ SA, const uint32_t* __restrict__ SB,"
        scale_smem = ("  __shared__ __align__(128) uint32_t sSA[128];\n  __shared__ __align__(128) uint32_t sSB[128];\n"
                      f"  const unsigned long long dsa = {sf_desc}ull | ((((uint32_t)__cvta_generic_to_shared(sSA)) & 0x3FFFF) >> 4);\n"
                      f"  const unsigned long long dsb = {sf_desc}ull | ((((uint32_t)__cvta_generic_to_shared(sSB)) & 0x3FFFF) >> 4);\n")
        scale_copy = ("      sSA[t] = SA[((size_t)cs * n_chunks + ch) * 128 + t];\n"
                      "      sSB[t] = SB[((size_t)cs * n_chunks + ch) * 128 + t];\n")
        scale_issue = ('        asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;\\n" :: "r"(tmem + 16), "l"(dsa) : "memory");\n'
                       '        asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;\\n" :: "r"(tmem + 24), "l"(dsb) : "memory");\n')
    mma_in = '"r"(tmem), "l"(da), "l"(db), "r"(idesc)' + (', "r"(tmem + 16), "r"(tmem + 24)' if spec.block_scaled else "")
    return f"""
// {spec.id}: {spec.ptx} (target {spec.arch}); one CTA per case, A and B K-major in shared memory
// (no swizzle), D in tensor memory
extern "C" __global__ void __launch_bounds__(128) {spec.function}(
    const uint32_t* __restrict__ A, const uint32_t* __restrict__ B,
    const uint32_t* __restrict__ C, uint32_t* __restrict__ D,{scale_args} int n_cases, int n_chunks)
{{
  __shared__ __align__(128) uint32_t sA[{sa.words}];
  __shared__ __align__(128) uint32_t sB[{sb.words}];
  __shared__ __align__(8) unsigned long long bar;
  __shared__ uint32_t tbase;
{scale_smem}  const int t = threadIdx.x, warp = t >> 5;
  const uint32_t sbar = (uint32_t)__cvta_generic_to_shared(&bar);
  if (warp == 0) {{
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;\\n"
                 :: "r"((uint32_t)__cvta_generic_to_shared(&tbase)) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\\n" ::: "memory");
  }}
  if (t == 0) {{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\\n" :: "r"(sbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");
  }}
  asm volatile("tcgen05.fence::before_thread_sync;\\n" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;\\n" ::: "memory");
  const uint32_t tmem = tbase;
  const uint32_t tlane = tmem + ((uint32_t)(warp * 32) << 16);      // this warp's 32 lanes
  const unsigned long long da = {base_a}ull | ((((uint32_t)__cvta_generic_to_shared(sA)) & 0x3FFFF) >> 4);
  const unsigned long long db = {base_b}ull | ((((uint32_t)__cvta_generic_to_shared(sB)) & 0x3FFFF) >> 4);
  const uint32_t idesc = {spec.instr_descriptor}u;
  uint32_t phase = 0;
  for (int cs = blockIdx.x; cs < n_cases; cs += gridDim.x) {{
    const uint32_t* c = C + ((size_t)cs * 128 + t) * {n};
    asm volatile("tcgen05.st.sync.aligned.32x32b.x{n}.b32 [%0], {{{regs}}};\\n" :: "r"(tlane), {c_ins} : "memory");
    asm volatile("tcgen05.wait::st.sync.aligned;\\n" ::: "memory");
    for (int ch = 0; ch < n_chunks; ++ch) {{
      const uint32_t* a = A + ((size_t)cs * n_chunks + ch) * {sa.words};
      const uint32_t* b = B + ((size_t)cs * n_chunks + ch) * {sb.words};
      for (int w = t; w < {sa.words}; w += 128) sA[w] = a[w];
      for (int w = t; w < {sb.words}; w += 128) sB[w] = b[w];
{scale_copy}      asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
      asm volatile("tcgen05.fence::before_thread_sync;\\n" ::: "memory");
      __syncthreads();
      asm volatile("tcgen05.fence::after_thread_sync;\\n" ::: "memory");
      if (t == 0) {{
{scale_issue}        asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n{mma} {mma_ops};\\n}}\\n"
                     :: {mma_in} : "memory");
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\\n"
                     :: "r"(sbar) : "memory");
      }}
      asm volatile("{{\\n.reg .pred p;\\nWAIT:\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n"
                   "@!p bra WAIT;\\n}}\\n" :: "r"(sbar), "r"(phase) : "memory");
      phase ^= 1;
      asm volatile("tcgen05.fence::after_thread_sync;\\n" ::: "memory");
    }}
    uint32_t d[{n}];
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x{n}.b32 {{{", ".join(f"%{i}" for i in range(n))}}}, [%{n}];\\n"
                 : {d_outs} : "r"(tlane) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;\\n" ::: "memory");
    uint32_t* dst = D + ((size_t)cs * 128 + t) * {n};
    for (int i = 0; i < {n}; ++i) dst[i] = {acc_store.format("d[i]")};
    asm volatile("tcgen05.fence::before_thread_sync;\\n" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;\\n" ::: "memory");
  }}
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;\\n" :: "r"(tmem) : "memory");
}}
"""


def _ffma_source(spec: KernelSpec) -> str:
    """One warp per case (grid-stride), as ``mma``: lane t keeps the accumulator D[t >> 2][t & 3]
    of the 8 x 4 tile (:func:`layouts.ffma_m8n4k1`) in a register and per chunk (K = 1) runs one
    ``fma.rn.f32`` of its A and B elements onto it: the chain d = fma(a_k, b_k, d) of an SGEMM
    inner loop, rounded once per product."""
    return f"""
// {spec.id}: {spec.ptx} (target {spec.arch}); one warp per case, one accumulator per lane
extern "C" __global__ void __launch_bounds__(256) {spec.function}(
    const uint32_t* __restrict__ A, const uint32_t* __restrict__ B,
    const uint32_t* __restrict__ C, uint32_t* __restrict__ D, int n_cases, int n_chunks)
{{
  const int lane = threadIdx.x & 31;
  const int wpb = blockDim.x >> 5;
  for (int cs = blockIdx.x * wpb + (threadIdx.x >> 5); cs < n_cases; cs += gridDim.x * wpb) {{
    float d0 = __uint_as_float(C[(size_t)cs * 32 + lane]);
    for (int ch = 0; ch < n_chunks; ++ch) {{
      const size_t at = ((size_t)cs * n_chunks + ch) * 32 + lane;
      const float a0 = __uint_as_float(A[at]);
      const float b0 = __uint_as_float(B[at]);
      asm volatile("{spec.ptx} %0, %1, %2, %0;\\n" : "+f"(d0) : "f"(a0), "f"(b0));
    }}
    D[(size_t)cs * 32 + lane] = __float_as_uint(d0);
  }}
}}
"""


def translation_unit(specs) -> str:
    """One .cu file holding every kernel in ``specs``."""
    return "#include <cstdint>\n" + "".join(s.source() for s in specs)


# ---- the registry --------------------------------------------------------------------------

_FP8_SM90_NOTE = ("sm_90, sm_100 and sm_103 lower this PTX to F2FP fp8->fp16 unpacks and two HMMA.16816 on "
                  "interleaved pairs (the first from a zero accumulator), with c added afterwards by an FADD "
                  "(f32) or HADD2 (f16) (seed 001 §IV-A5/A6; the SASS nvcc 13 gives on all three)")


def _types(in_fmt, b_fmt):
    """PTX types of A and B and the id's operand part (``e4m3``, or ``e4m3e5m2`` for mixed operands)."""
    ta, tb = PTX_TYPE[in_fmt], PTX_TYPE[b_fmt or in_fmt]
    return ta, tb, ta if ta == tb else f"{ta}{tb}"


def _mma(shape, in_fmt, acc, arch, sass, max_arch=None, note="", b_fmt=None):
    m, n, k = shape
    ta, tb, tid = _types(in_fmt, b_fmt)
    tacc = PTX_TYPE[acc]
    kid = f"mma_m{m}n{n}k{k}_{tid}_{tacc}"
    ptx = f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{tacc}.{ta}.{tb}.{tacc}"
    return KernelSpec(kid, "mma", ptx, arch, shape, in_fmt, acc, acc, tuple(sass), max_arch, note, b_fmt=b_fmt)


def _wgmma(k, in_fmt, acc, sass, note="", b_fmt=None):
    ta, tb, tid = _types(in_fmt, b_fmt)
    tacc = PTX_TYPE[acc]
    kid = f"wgmma_m64n{WGMMA_N}k{k}_{tid}_{tacc}"
    ptx = f"wgmma.mma_async.sync.aligned.m64n{WGMMA_N}k{k}.{tacc}.{ta}.{tb}"
    return KernelSpec(kid, "wgmma", ptx, "sm_90a", (64, WGMMA_N, k), in_fmt, acc, acc,
                      (("sm_90a", sass),), None, note, b_fmt=b_fmt)


def _h(shape, acc, suffix=""):
    return rf"HMMA\.{shape}\.{'F32' if acc == 'fp32' else 'F16'}{suffix}\b"


def _e(fmt):
    return "E4M3" if fmt == "fp8e4m3" else "E5M2"


def _fp8(in_fmt, acc, b_fmt=None):
    """mma.sync m16n8k32 FP8 (A and B each e4m3 or e5m2: PTX ISA 9.7.14.5.14 ``.f8type``): a QMMA
    on sm_89 and sm_120; on sm_90 up to sm_103 nvcc 13 emulates it on the fp16 HMMA path, and the
    check requires the emulation's parts too (_FP8_SM90_NOTE, seen in the SASS of all three)."""
    q = rf"QMMA\.16832\.{'F32' if acc == 'fp32' else 'F16'}\.{_e(in_fmt)}\.{_e(b_fmt or in_fmt)}\b"
    emu = sorted({rf"^F2FP\.F16\.{_e(f)}\.UNPACK_B " for f in (in_fmt, b_fmt or in_fmt)})
    emu += [r"^HMMA\.16816\.\S+ .*, RZ$", r"^FADD " if acc == "fp32" else r"^HADD2 "]
    spec = _mma((16, 8, 32), in_fmt, acc, "sm_89",
                [("sm_89", q), ("sm_90", _h(16816, acc)), ("sm_120", q)], note=_FP8_SM90_NOTE, b_fmt=b_fmt)
    return replace(spec, sass_also=tuple(("sm_90", rx) for rx in emu))


def _wgmma_fp8(in_fmt, acc, b_fmt=None):
    """wgmma m64nNk32 FP8 (``.atype``/``.btype`` each e4m3 or e5m2: PTX ISA 9.7.15.5.2)."""
    q = rf"QGMMA\.64x{WGMMA_N}x32\.{'F32' if acc == 'fp32' else 'F16'}\.{_e(in_fmt)}\.{_e(b_fmt or in_fmt)}\b"
    return _wgmma(32, in_fmt, acc, q, b_fmt=b_fmt)


_MIXES = (("fp8e4m3", "fp8e5m2"), ("fp8e5m2", "fp8e4m3"))


def _ffma():
    """fp32 on the CUDA cores: ``fma.rn.f32`` (PTX ISA 9.7.3), SASS FFMA, chained over k as an
    SGEMM inner loop does (cuBLAS SGEMM, CUTLASS's SIMT GEMMs). Not a tensor-core instruction: the
    check wants a plain FFMA (no .FTZ, .RZ, ...) in place of an MMA mnemonic."""
    return KernelSpec("ffma_m8n4k1_f32_f32", "ffma", "fma.rn.f32", "sm_75", (8, 4, 1), "fp32", "fp32", "fp32",
                      (("sm_75", r"^FFMA$"),), None,
                      "CUDA-core FFMA chain, one fma.rn.f32 per product (K = 1: no padding); an 8 x 4 tile per "
                      "warp, lane t accumulating D[t >> 2][t & 3] (hw_runner.layouts.ffma_m8n4k1)")


def _imma(shape, in_fmt, arch, sass, sat, max_arch=None, note="", sass_also=(), emulated_from=None):
    """Integer mma.sync (s8/u8 or s4/u4 x same -> s32), wrap-around or ``.satfinite``: SASS IMMA."""
    m, n, k = shape
    t = PTX_TYPE[in_fmt]
    kid = f"mma_m{m}n{n}k{k}_{t}_s32{'_sat' if sat else ''}"
    ptx = f"mma.sync.aligned.m{m}n{n}k{k}.row.col{'.satfinite' if sat else ''}.s32.{t}.{t}.s32"
    return KernelSpec(kid, "mma", ptx, arch, shape, in_fmt, "int32", "int32", tuple(sass), max_arch,
                      "integer MMA: exact products and sum, s32 " + ("clamped (.satfinite)" if sat else "wrapped")
                      + note, satfinite=sat, sass_also=tuple(sass_also), emulated_from=emulated_from)


_S4_NOTE = ("; a 4-bit IMMA up to sm_89. sm_90 has none: nvcc 13 emulates the PTX there by sign- (.s4) or "
            "zero-extending (.u4) the nibbles into bytes, two 8-bit IMMA of half the K with a zero "
            "accumulator, integer adds of the two partial sums and c and, with .satfinite, a clamp of that "
            "sum by sign-overflow tests (PLOP3) and SEL of 0x7fffffff / 0x80000000. The products (|p| <= 225) "
            "and partial sums are exact, so the emulation computes what the PTX ISA specifies")
# the 8-bit IMMA nvcc 13 emulates each 4-bit shape with on sm_90 (twice, half the K each)
_S4_SM90 = {(8, 8, 32): "8816", (16, 8, 32): "16816", (16, 8, 64): "16832"}
_ZERO_ACC = r"^IMMA\.\S+ .*, RZ$"       # the 8-bit IMMA starts from a zero accumulator; c is added after
_CLAMP = (r"^SEL .*0x7fffffff", r"^SEL .*0x80000000")


def _imma_kernels():
    out = []
    for fin in ("int8", "uint8"):
        t = PTX_TYPE[fin].upper()
        for sat in (False, True):
            sfx = r"\.SAT" if sat else ""
            # nvcc 13 lowers m8n8k16 to IMMA.8816 up to sm_90 and to the (padded) IMMA.16816 on sm_100/sm_120
            out.append(_imma((8, 8, 16), fin, "sm_75", [("sm_75", rf"IMMA\.8816\.{t}\.{t}{sfx}\b"),
                                                        ("sm_100", rf"IMMA\.16816\.{t}\.{t}{sfx}\b")], sat))
            out.append(_imma((16, 8, 32), fin, "sm_80", [("sm_80", rf"IMMA\.16832\.{t}\.{t}{sfx}\b")], sat))
    for fin in ("int4", "uint4"):          # PTX ISA 9.7.14.5.4, .5.10, .5.11
        t = PTX_TYPE[fin].upper()
        t8 = t.replace("4", "8")
        for sat in (False, True):
            sfx = r"\.SAT" if sat else ""
            for shape, first, native in (((8, 8, 32), "sm_75", "8832"), ((16, 8, 32), "sm_80", "16832"),
                                         ((16, 8, 64), "sm_80", "16864")):
                emu = rf"IMMA\.{_S4_SM90[shape]}\.{t8}\.{t8}\b(?!\.SAT)"
                out.append(_imma(shape, fin, first, [(first, rf"IMMA\.{native}\.{t}\.{t}{sfx}\b"), ("sm_90", emu)],
                                 sat, "sm_90", _S4_NOTE, [("sm_90", rx) for rx in (_ZERO_ACC,) + (_CLAMP if sat else ())],
                                 "sm_90"))
    return out


# ---- RTX Blackwell (sm_120a): mma.sync .kind::f8f6f4 and the block-scaled kinds ------------

_LOWP = ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1")
_F8F6F4_NOTE = ("sm_120a features (sm_120/sm_121); FP6 in the lower 6 bits, FP4 in bits 2-5 of each 8-bit "
                "container (PTX ISA 9.7.14.5.14)")
_MX_NOTE = ("block scaling (PTX ISA 9.7.14.3): byte j of the scale_A register of lanes 4g / 4g+1 holds "
            "rows g / g+8, of the scale_B register of lane 4g column g (selectors 0)")


def _sass_types(fa, fb):
    return f"{PTX_TYPE[fa].upper()}\\.{PTX_TYPE[fb].upper()}"


def _f8f6f4(fa, fb, acc):
    """mma.sync m16n8k32 ``.kind::f8f6f4``: A and B each e4m3/e5m2/e3m2/e2m3/e2m1 (PTX ISA 9.7.14.5.14)."""
    ta, tb, tid = _types(fa, fb if fb != fa else None)
    tacc = PTX_TYPE[acc]
    q = rf"QMMA\.16832\.{'F32' if acc == 'fp32' else 'F16'}\.{_sass_types(fa, fb)}\b"
    return KernelSpec(f"mma_m16n8k32_{tid}_{tacc}", "mma",
                      f"mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.{tacc}.{ta}.{tb}.{tacc}", "sm_120",
                      (16, 8, 32), fa, acc, acc, (("sm_120", q),), "sm_121", _F8F6F4_NOTE,
                      b_fmt=fb if fb != fa else None, kind="f8f6f4", arch_specific=True)


def _mxf8f6f4(fa, fb):
    """mma.sync m16n8k32 ``.kind::mxf8f6f4.block_scale.scale_vec::1X`` with UE8M0 scales, one per
    32 products (PTX ISA 9.7.14.3 Table 36, 9.7.14.5.14)."""
    ta, tb, tid = _types(fa, fb if fb != fa else None)
    q = rf"QMMA\.SF\.16832\.F32\.{_sass_types(fa, fb)}\.E8\b"
    return KernelSpec(f"mma_m16n8k32_mxf8f6f4_{tid}_f32", "mma",
                      f"mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.{ta}.{tb}"
                      ".f32.ue8m0", "sm_120", (16, 8, 32), fa, "fp32", "fp32", (("sm_120", q),), "sm_121",
                      f"{_F8F6F4_NOTE}; {_MX_NOTE}", b_fmt=fb if fb != fa else None, kind="mxf8f6f4",
                      scale_fmt="e8m0", scale_vec=1, arch_specific=True)


def _mxf4(kind, vec, scale_fmt):
    """mma.sync m16n8k64 ``.kind::mxf4`` / ``.kind::mxf4nvf4`` e2m1 x e2m1 (eight FP4 per .b32, no
    padding) with ``.scale_vec::{vec}X`` scales (PTX ISA 9.7.14.3 Table 36)."""
    st = PTX_TYPE[scale_fmt]
    kid = f"mma_m16n8k64_{kind}_e2m1_f32" if kind == "mxf4" else f"mma_m16n8k64_{kind}_{vec}x_{st}_e2m1_f32"
    sf = r"UE4M3\.4X" if scale_fmt == "ue4m3" else "E8"
    return KernelSpec(kid, "mma", f"mma.sync.aligned.m16n8k64.row.col.kind::{kind}.block_scale.scale_vec::{vec}X"
                      f".f32.e2m1.e2m1.f32.{st}", "sm_120", (16, 8, 64), "fp4e2m1", "fp32", "fp32",
                      (("sm_120", rf"OMMA\.SF\.16864\.F32\.E2M1\.E2M1\.{sf}\b"),), "sm_121",
                      f"sm_120a features (sm_120/sm_121); {_MX_NOTE}", kind=kind, scale_fmt=scale_fmt,
                      scale_vec=vec, arch_specific=True)


def _sm120_kernels():
    out = [_f8f6f4(fa, fb, acc) for fa in _LOWP for fb in _LOWP for acc in ("fp32", "fp16")
           if not (fa.startswith("fp8") and fb.startswith("fp8"))]       # FP8 x FP8: the .e4m3/.e5m2 kernels
    out += [_mxf8f6f4(fa, fb) for fa in _LOWP for fb in _LOWP]
    out += [_mxf4("mxf4", 2, "e8m0"), _mxf4("mxf4nvf4", 2, "e8m0"), _mxf4("mxf4nvf4", 4, "ue4m3")]
    return out


# ---- Blackwell (sm_100a / sm_103a): tcgen05.mma, one CTA per case ------------------------------

_TC_NOTE = ("one CTA per case, M = 128, N = 8: A and B K-major without swizzle in shared memory, D in "
            "tensor memory (tcgen05.alloc, .st, .ld), tcgen05.commit onto an mbarrier")


def _tcgen05(kind, fa, fb, acc, k, sass, scale_fmt=None, vec=0):
    """tcgen05.mma.cta_group::1 (PTX ISA 9.7.16.10.9.1) of ``kind`` with A in ``fa``, B in ``fb``."""
    ta, tb, tid = _types(fa, fb if fb != fa else None)
    tacc = PTX_TYPE[acc]
    if scale_fmt is None:
        kid, q = f"tcgen05_m128n8k{k}_{tid}_{tacc}", ""
    else:
        st = PTX_TYPE[scale_fmt]
        kid = (f"tcgen05_m128n8k{k}_{kind}_{tid}_f32" if kind in ("mxf8f6f4", "mxf4")
               else f"tcgen05_m128n8k{k}_{kind}_{vec}x_{st}_{tid}_f32")
        q = f".block_scale.scale_vec::{vec}X"
    ptx = f"tcgen05.mma.cta_group::1.kind::{kind}{q} m128n8k{k} .{tacc}.{ta}.{tb}" + (f".{st}" if scale_fmt else "")
    return KernelSpec(kid, "tcgen05", ptx, "sm_100", (128, 8, k), fa, acc, acc, tuple(sass), "sm_103",
                      _TC_NOTE, b_fmt=fb if fb != fa else None, kind=kind, scale_fmt=scale_fmt, scale_vec=vec,
                      arch_specific=True)


def _tcgen05_i8(fin, sat):
    """tcgen05.mma .kind::i8 (s8 x s8 or u8 x u8 -> s32, K = 32; saturate in the instruction
    descriptor): sm_100a only. ptxas refuses .kind::i8 for sm_103a ("not supported on .target"),
    and the cuBLASDx API card lists SM 1030 with no integer tcgen05."""
    t = PTX_TYPE[fin]
    return KernelSpec(f"tcgen05_m128n8k32_{t}_s32{'_sat' if sat else ''}", "tcgen05",
                      f"tcgen05.mma.cta_group::1.kind::i8 m128n8k32 .s32.{t}.{t}" + (" saturate" if sat else ""),
                      "sm_100", (128, 8, 32), fin, "int32", "int32", (("sm_100", r"UTCIMMA\b"),), "sm_100",
                      _TC_NOTE + "; integer: exact products and sum, s32 " + ("clamped (saturate)" if sat else "wrapped")
                      + "; sm_100a only (no integer tcgen05 on sm_103)", satfinite=sat, kind="i8", arch_specific=True,
                      absent_note="no integer tcgen05 on sm_103 (B300): ptxas refuses .kind::i8 for sm_103a")


def _tcgen05_kernels():
    """SASS (nvcc 13): UTCHMMA for .kind::f16/tf32, UTCQMMA for .kind::f8f6f4/mxf8f6f4, UTCOMMA for
    .kind::mxf4/mxf4nvf4 (UTCOMMA.4X on sm_100, UTCOMMA.BLOCK16 on sm_103 for the 4X scale
    vector), UTCIMMA for .kind::i8 (sm_100 only); the operand types and the scaling live in the instruction descriptor and the
    tensor-memory operands, not in the mnemonic."""
    def tc(kind, fa, fb, acc, k, rx, rx103=None, **kw):
        return _tcgen05(kind, fa, fb, acc, k, [("sm_100", rx), ("sm_103", rx103 or rx)], **kw)
    h, q, o = r"UTCHMMA\b", r"UTCQMMA\b", r"UTCOMMA\b"
    out = [tc("f16", "fp16", "fp16", "fp32", 16, h), tc("f16", "fp16", "fp16", "fp16", 16, h),
           tc("f16", "bf16", "bf16", "fp32", 16, h), tc("tf32", "tf32", "tf32", "fp32", 8, h)]
    out += [tc("f8f6f4", fa, fb, acc, 32, q) for fa in _LOWP for fb in _LOWP for acc in ("fp32", "fp16")]
    out += [tc("mxf8f6f4", fa, fb, "fp32", 32, q, scale_fmt="e8m0", vec=1) for fa in _LOWP for fb in _LOWP]
    out += [tc("mxf4", "fp4e2m1", "fp4e2m1", "fp32", 64, o, scale_fmt="e8m0", vec=2),
            tc("mxf4nvf4", "fp4e2m1", "fp4e2m1", "fp32", 64, o, scale_fmt="e8m0", vec=2),
            tc("mxf4nvf4", "fp4e2m1", "fp4e2m1", "fp32", 64, r"UTCOMMA\.4X\b", r"UTCOMMA\.BLOCK16\b",
               scale_fmt="ue4m3", vec=4)]
    out += [_tcgen05_i8(fin, sat) for fin in ("int8", "uint8") for sat in (False, True)]
    return out


def _build_registry() -> dict[str, KernelSpec]:
    specs = [
        _mma((8, 8, 4), "fp16", "fp32", "sm_70", [("sm_70", r"HMMA\.884\.F32\.F32")], max_arch="sm_75",
             note="Volta/Turing only: on sm_80+ this PTX becomes an FMA sequence (seed 002 §3.1)"),
        _mma((8, 8, 4), "fp16", "fp16", "sm_70", [("sm_70", r"HMMA\.884\.F16\.F16")], max_arch="sm_75",
             note="Volta/Turing only: on sm_80+ this PTX becomes an FMA sequence (seed 002 §3.1)"),
        _mma((16, 8, 8), "fp16", "fp32", "sm_75", [("sm_75", _h(1688, "fp32"))]),
        _mma((16, 8, 8), "fp16", "fp16", "sm_75", [("sm_75", _h(1688, "fp16"))]),
        _mma((16, 8, 16), "fp16", "fp32", "sm_80", [("sm_80", _h(16816, "fp32"))]),
        _mma((16, 8, 16), "fp16", "fp16", "sm_80", [("sm_80", _h(16816, "fp16"))]),
        _mma((16, 8, 8), "bf16", "fp32", "sm_80", [("sm_80", _h(1688, "fp32", r"\.BF16"))]),
        _mma((16, 8, 16), "bf16", "fp32", "sm_80", [("sm_80", _h(16816, "fp32", r"\.BF16"))]),
        _mma((16, 8, 4), "tf32", "fp32", "sm_80", [("sm_80", _h(1684, "fp32", r"\.TF32"))]),
        _mma((16, 8, 8), "tf32", "fp32", "sm_80", [("sm_80", _h(1688, "fp32", r"\.TF32"))]),
        _fp8("fp8e4m3", "fp32"), _fp8("fp8e4m3", "fp16"), _fp8("fp8e5m2", "fp32"), _fp8("fp8e5m2", "fp16"),
        _mma((8, 8, 4), "fp64", "fp64", "sm_80", [("sm_80", r"DMMA\.884\b"), ("sm_90", r"DMMA\.8x8x4\b")],
             note="IEEE FMA chain c+p1, +p2, ... (seed 001 §IV-A2)"),
        _wgmma(16, "fp16", "fp32", r"HGMMA\.64x8x16\.F32\b"),
        _wgmma(16, "fp16", "fp16", r"HGMMA\.64x8x16\.F16\b"),
        _wgmma(16, "bf16", "fp32", r"HGMMA\.64x8x16\.F32\.BF16\b"),
        _wgmma(8, "tf32", "fp32", r"HGMMA\.64x8x8\.F32\.TF32\b"),
        _wgmma_fp8("fp8e4m3", "fp32"), _wgmma_fp8("fp8e4m3", "fp16"),
        _wgmma_fp8("fp8e5m2", "fp32"), _wgmma_fp8("fp8e5m2", "fp16"),
        _ffma(),
    ] + _imma_kernels()
    specs += [f(fa, acc, fb) for fa, fb in _MIXES for acc in ("fp32", "fp16") for f in (_fp8, _wgmma_fp8)]
    specs += _sm120_kernels() + _tcgen05_kernels()
    return {s.id: s for s in specs}


KERNELS: dict[str, KernelSpec] = _build_registry()


def get_kernel(kernel_id: str):
    """An NVIDIA :class:`KernelSpec` or an AMD :class:`hw_runner.amd.kernels.MfmaSpec` by id."""
    spec = KERNELS.get(kernel_id) or MFMA_KERNELS.get(kernel_id)
    if spec is None:
        raise HarnessError(f"unknown kernel {kernel_id!r}; 'mmaprobe harness list' shows them")
    return spec


def all_kernels() -> dict:
    """Every kernel id -> spec, NVIDIA's then AMD's."""
    return {**KERNELS, **MFMA_KERNELS}


def kernels_for(in_fmt: str, c_fmt: str, out_fmt: str, arch: str | None = None, satfinite: bool = False,
                scale: tuple[str, int] | None = None) -> list[InstructionSpec]:
    """Kernels computing ``in_fmt`` x ``in_fmt`` + ``c_fmt`` -> ``out_fmt`` (``in_fmt`` may be a
    mixed operand key, ``fp8e4m3xfp8e5m2``) that run on ``arch`` (an ``sm_XX`` or a ``gfx...``
    target; None: NVIDIA's kernels); integer kernels with ``.satfinite`` only when asked for;
    block-scaled kernels only for ``scale`` = (scale format, products per scale), as a model's
    ``scale_fmt``/``scale_block`` or a vector file's header give them."""
    pool = MFMA_KERNELS if arch and is_gfx(arch) else KERNELS
    return [s for s in pool.values()
            if (s.in_key, s.c_fmt, s.out_fmt) == (in_fmt, c_fmt, out_fmt)
            and (arch is None or s.supports(arch)) and s.satfinite == satfinite
            and s.scale_key == (tuple(scale) if scale else None)]


def default_kernel(in_fmt: str, c_fmt: str, out_fmt: str, arch: str,
                   scale: tuple[str, int] | None = None) -> KernelSpec:
    """The ``mma.sync`` kernel with the largest K for these formats (and block scales) on ``arch``
    (wgmma only when nothing else fits); pass a kernel id explicitly to choose another instruction."""
    cands = kernels_for(in_fmt, c_fmt, out_fmt, arch, scale=scale)
    if not cands:
        sc = f" and {scale[0]} scales per {scale[1]}" if scale else ""
        raise HarnessError(f"no kernel computes {in_fmt} inputs{sc} with {c_fmt} c -> {out_fmt} on {arch}")
    return preferred(cands)


def preferred(cands: list) -> KernelSpec:
    """Of several kernels for one computation: mma.sync before wgmma, then the largest K (MFMA:
    the 32x32 instruction before the 16x16 one, then the larger K: CDNA2's bf16 ``_1k``)."""
    return max(cands, key=lambda s: (s.family in ("mma", "mfma"), s.shape[0] if s.family == "mfma" else 0, s.k))
