"""Compile MFMA kernels to HSA code objects without ROCm, and check their ISA.

The LLVM bundled with llvmlite (a default dependency) has the AMDGPU target: for each gfx
target one module holding every kernel of that target is compiled twice from the same IR text,
to assembly (the ISA check) and to an ELF relocatable object. The HIP runtime loads only a
linked code object (an ``ET_DYN`` ELF, as ``hipcc --genco`` writes), and llvmlite has no linker,
so the object is linked by ``ld.lld -shared``: ``$MMAPROBE_LLD``, ``ld.lld`` / ``ld.lld-NN`` on
PATH (Debian: ``apt-get install lld``), or ROCm's own (``$ROCM_PATH/llvm/bin``,
``/opt/rocm/llvm/bin``). Without one the ISA is still checked; only running needs the link.

The ISA check (the AMD counterpart of the SASS check in :mod:`hw_runner.build`) requires the
kernel's function to hold the intended ``v_mfma_*`` mnemonic for its target and no other MFMA;
for the gfx950 ``f8f6f4`` kernels also the operand-format fields (``cbsz:N blgp:N``, absent for
FP8) and no ``op_sel`` (the scale in byte 0).
Code objects are cached under ``$MMAPROBE_CACHE`` by a hash of the IR, the target, the LLVM
version and the linker.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from smtmodel.io import atomic_open

from ..cache import cache_dir
from ..errors import HarnessError
from .kernels import CDNA, GFX, MFMA_KERNELS, MfmaSpec, module_ir

TRIPLE = "amdgcn-amd-amdhsa"
LLD_HINT = "install lld (Debian: apt-get install lld) or ROCm, or set MMAPROBE_LLD"


def check_gfx(gfx: str) -> str:
    """``gfx`` itself when the harness has kernels for it, else a one-line error."""
    base = gfx.split(":")[0]               # gcnArchName carries features: gfx90a:sramecc+:xnack-
    if base not in GFX:
        raise HarnessError(f"unknown gfx target {gfx!r}: the MFMA kernels cover {', '.join(GFX)} "
                           f"({', '.join(CDNA[g] for g in GFX)})")
    return base


@lru_cache(maxsize=None)
def _llvm():
    import llvmlite.binding as llvm
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def llvm_version() -> str:
    return ".".join(map(str, _llvm().llvm_version_info))


@lru_cache(maxsize=None)
def _target_machine(gfx: str):
    llvm = _llvm()
    try:
        target = llvm.Target.from_triple(TRIPLE)
    except RuntimeError as exc:
        raise HarnessError(f"llvmlite's LLVM lacks the AMDGPU target ({exc})") from None
    return target.create_target_machine(cpu=gfx, opt=2, reloc="pic")


def _compile(ir: str, gfx: str, what: str) -> str | bytes:
    """Assembly text (``what="asm"``) or object bytes of ``ir`` for ``gfx``; a fresh parse each
    time, as code generation rewrites the module it is given."""
    llvm = _llvm()
    try:
        mod = llvm.parse_assembly(ir)
        mod.verify()
    except RuntimeError as exc:
        raise HarnessError(f"LLVM rejected the kernel IR for {gfx}: {str(exc).splitlines()[0]}") from None
    tm = _target_machine(gfx)
    return tm.emit_assembly(mod) if what == "asm" else tm.emit_object(mod)


# ---- the linker ----------------------------------------------------------------------------

def find_lld() -> str | None:
    env = os.environ.get("MMAPROBE_LLD")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    return _search_lld()


@lru_cache(maxsize=None)
def _search_lld() -> str | None:
    hit = shutil.which("ld.lld")
    if hit:
        return hit
    for d in os.environ.get("PATH", "").split(os.pathsep):
        vers = sorted(Path(d).glob("ld.lld-*")) if d and Path(d).is_dir() else []
        if vers:
            return str(vers[-1])
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root and (Path(root) / "llvm/bin/ld.lld").is_file():
            return str(Path(root) / "llvm/bin/ld.lld")
    return None


@lru_cache(maxsize=None)
def lld_version(lld: str) -> tuple[str, int]:
    """(version line, major version) of an ld.lld."""
    try:
        out = subprocess.run([lld, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"{lld} does not run: {exc}") from None
    m = re.search(r"LLD (\d+)\.", out)
    if not m:
        raise HarnessError(f"{lld} is not an LLVM linker (ld.lld --version: {out.strip()[:80]!r})")
    return out.strip().splitlines()[0], int(m.group(1))


def code_object_version(lld_major: int | None) -> int:
    """HSA code object v5 where the linker knows it (LLVM >= 15), else v4 (lld 12-14)."""
    return 500 if lld_major is None or lld_major >= 15 else 400


def link(obj: bytes, out: Path, lld: str) -> None:
    """``ld.lld -shared`` one relocatable object into the code object ``out`` (atomically)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mmaprobe-lld-") as tmp:
        o, so = Path(tmp) / "kernels.o", Path(tmp) / "kernels.hsaco"
        o.write_bytes(obj)
        try:
            res = subprocess.run([lld, "-shared", "-o", str(so), str(o)], capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HarnessError(f"ld.lld failed to run: {exc}") from None
        if res.returncode:
            first = (res.stderr.strip().splitlines() or ["no message"])[0]
            raise HarnessError(f"ld.lld could not link the code object: {first}")
        with atomic_open(out, "wb", gz=False) as fh:
            fh.write(so.read_bytes())


# ---- the ISA check -------------------------------------------------------------------------

_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_INSN = re.compile(r"^\s+([a-z][a-z0-9_]*)\b")


def parse_isa(asm: str) -> dict[str, list[str]]:
    """Function name -> its instructions (mnemonic and operands) from LLVM's AMDGPU assembly."""
    funcs: dict[str, list[str]] = {}
    cur = None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m:
            name = m.group(1)
            if name.startswith(".Lfunc_end"):
                cur = None
            elif not name.startswith("."):
                cur = funcs.setdefault(name, [])
            continue
        code = line.split(";")[0]
        if cur is not None and _INSN.match(code) and not code.strip().startswith("."):
            cur.append(" ".join(code.split()))
    return funcs


@dataclass
class IsaCheck:
    ok: bool
    found: list[str] = field(default_factory=list)   # distinct v_mfma mnemonics
    problem: str = ""


def check_isa(spec: MfmaSpec, gfx: str, insns: list[str]) -> IsaCheck:
    """Does ``insns`` (one function's ISA) run ``spec``'s intended MFMA instruction on ``gfx``?"""
    want = spec.mnemonic(gfx)
    found = sorted({i.split()[0] for i in insns if i.startswith("v_mfma")})
    if not insns:
        return IsaCheck(False, found, f"function {spec.function} not in the assembly")
    if want not in found:
        return IsaCheck(False, found, f"no {want} in the ISA" + (f" (found {', '.join(found)})" if found else ""))
    if found != [want]:
        return IsaCheck(False, found, f"other MFMA instructions beside {want}: {', '.join(found)}")
    if spec.fmt_code is not None:       # f8f6f4: the operand formats and the scale byte, as fields
        for line in (i for i in insns if i.split()[0] == want):
            fields = set(line.replace(",", " ").split())
            need = set(spec.isa_fields())
            have = {f for f in fields if f.startswith(("cbsz:", "blgp:", "op_sel:"))}
            if have != need:
                return IsaCheck(False, found, f"{want} carries {' '.join(sorted(have)) or 'no format fields'}, "
                                              f"not {' '.join(sorted(need)) or 'none'} ({line})")
    return IsaCheck(True, found)


# ---- building ------------------------------------------------------------------------------

@dataclass
class Unit:
    """One compiled target: the assembly, and the linked code object (None without a linker)."""

    gfx: str
    asm: str
    code_object: Path | None
    linker: str          # the ld.lld version line, or why nothing was linked


def build_unit(specs: list[MfmaSpec], gfx: str, want_link: bool = True) -> Unit:
    """Compile ``specs`` for ``gfx`` into one module; check-ready assembly and, with a linker, a
    cached code object."""
    gfx = check_gfx(gfx)
    bad = [s.id for s in specs if not s.supports(gfx)]
    if bad:
        raise HarnessError(f"{', '.join(bad)} does not run on {gfx}")
    lld = find_lld() if want_link else None
    lld_line, major = lld_version(lld) if lld else (None, None)
    cov = code_object_version(major)
    ir = module_ir(specs, cov)
    key = hashlib.sha256("\0".join([ir, gfx, llvm_version(), lld_line or "-"]).encode()).hexdigest()[:24]
    base = cache_dir() / f"amd-{key}"
    asm_path, co_path = base.with_suffix(".s"), base.with_suffix(".hsaco")
    if asm_path.exists():
        asm = asm_path.read_text()
    else:
        asm = _compile(ir, gfx, "asm")
        asm_path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(asm_path, "w", gz=False) as fh:
            fh.write(asm)
    if not lld:
        why = "not linked (no ld.lld: " + LLD_HINT + ")" if want_link else "not linked"
        return Unit(gfx, asm, None, why)
    if not co_path.exists():
        link(_compile(ir, gfx, "obj"), co_path, lld)
    return Unit(gfx, asm, co_path, lld_line)


@dataclass
class BuildRow:
    """One (kernel, gfx) line of ``harness build`` / ``harness list``."""

    spec: MfmaSpec
    arch: str
    target: str
    status: str            # "ok", "checked: ...", "failed: ..."
    sass: list[str] = field(default_factory=list)     # the MFMA mnemonics found (name kept for the CLI)
    cubin: Path | None = None                         # the code object

    @property
    def ok(self) -> bool:
        return self.status == "ok" or self.status.startswith("checked")


def check_archs(spec: MfmaSpec) -> list[str]:
    return list(spec.gfx)


def build(specs: list[MfmaSpec] | None = None, link_objects: bool = True) -> list[BuildRow]:
    """Compile every kernel for each of its targets, check the ISA, link where a linker exists."""
    specs = list(MFMA_KERNELS.values()) if specs is None else specs
    rows = []
    for gfx in GFX:
        mine = [s for s in specs if s.supports(gfx)]
        if not mine:
            continue
        try:
            unit = build_unit(mine, gfx, link_objects)
        except HarnessError as exc:
            rows += [BuildRow(s, gfx, gfx, f"failed: {exc}") for s in mine]
            continue
        funcs = parse_isa(unit.asm)
        for s in mine:
            res = check_isa(s, gfx, funcs.get(s.function, []))
            if not res.ok:
                status = f"failed: {res.problem}"
            else:
                status = "ok" if unit.code_object else f"checked: ISA ok; {unit.linker}"
            rows.append(BuildRow(s, gfx, gfx, status, res.found, unit.code_object))
    return rows


def code_object_for(spec: MfmaSpec, gfx: str, check: bool = True) -> Path:
    """A linked code object holding ``spec`` for ``gfx``; with ``check``, refuse one whose ISA does
    not hold the intended MFMA instruction."""
    gfx = check_gfx(gfx)
    if not spec.supports(gfx):
        raise HarnessError(f"{spec.id} does not run on {gfx} (runs on {', '.join(spec.gfx)})")
    unit = build_unit([spec], gfx)
    if unit.code_object is None:
        raise HarnessError(f"cannot link an HSA code object for {gfx}: no ld.lld ({LLD_HINT})")
    if check:
        res = check_isa(spec, gfx, parse_isa(unit.asm).get(spec.function, []))
        if not res.ok:
            raise HarnessError(f"{spec.id} for {gfx}: {res.problem}")
    return unit.code_object
