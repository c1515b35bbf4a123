"""Compile kernels to cubins with nvcc, cache them, and check their SASS.

All kernels for one compile target go into one translation unit and one ``nvcc -cubin``
call; targets are compiled in parallel. Cubins are cached under ``$MMAPROBE_CACHE`` (default
``~/.cache/mmaprobe/kernels``) by a hash of the source, the target and the nvcc version.

The SASS check (seed 001 §IV-B does the same with cuobjdump) disassembles each function and
requires (1) an instruction matching the kernel's expected tensor-core mnemonic for that arch
and (2) no FFMA/DFMA/HFMA2/FMUL/DMUL/HMUL2, i.e. no FMA-pipe fallback for the MMA itself
(seed 002 §3.1: ``mma.m8n8k4`` .f16 on sm_80 becomes such a sequence), other than the expected
instruction itself (the CUDA-core kernel ``ffma_m8n4k1_f32_f32`` expects a plain FFMA).

Tools are looked up on PATH, in ``$CUDA_HOME/bin`` and ``/usr/local/cuda/bin``, then in the
PyPI wheels (``nvidia-cuda-cuobjdump``, ``nvidia-cuda-nvdisasm`` install them under
``site-packages/nvidia/*/bin``). ``$MMAPROBE_NVCC`` overrides nvcc.

The legacy toolchain: targets the main nvcc lacks (CUDA 13 dropped Volta, sm_70; its
cuobjdump prints no SASS for an SM70 cubin and its nvdisasm refuses one) are built with an older
CUDA's tools, searched in this order: the folders of ``$MMAPROBE_LEGACY_CUDA``
(``os.pathsep``-separated: a CUDA 12 toolkit's ``bin``, or the folders holding a CUDA 12 ptxas and
cuobjdump/nvdisasm), then the CUDA 12 layouts of PyPI packages on ``sys.path``
(``nvidia/cuda_nvcc/bin``: ``nvidia-cuda-nvcc-cu12``, whose only driver is ptxas;
``triton/backends/nvidia/bin``: the ptxas, cuobjdump and nvdisasm that triton's wheels bundle). A
legacy nvcc builds the target itself. With only a ptxas the main nvcc writes the PTX for its oldest
virtual target (compute_75), the PTX header is retargeted (``.target sm_70``, ``.version`` lowered
to the ISA version that ptxas reads, :func:`retarget_ptx`) and the legacy ptxas assembles it: the
kernels' PTX uses nothing newer than Volta's instructions, and ptxas refuses any instruction the
target or the ISA version lacks. The legacy cuobjdump/nvdisasm then checks the SASS.

Prebuilt kernels: ``prebuild(specs, arch, folder)`` compiles the kernels a GPU of ``arch`` runs,
checks their SASS, and writes the cubins with an ``index.json`` into ``folder``, keyed by the
kernel source and target only (not the nvcc version). :func:`cubin_for` loads those cubins and
the recorded SASS check instead of compiling, so no GPU time goes to nvcc: from
``$MMAPROBE_PREBUILT`` where it is set (set and empty: none), else from the committed
``hw_runner/prebuilt`` (:data:`PREBUILT`; it travels with the working tree to a GPU machine). A
kernel whose source changed since is compiled as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from smtmodel.io import atomic_open
from smtmodel.workers import default_jobs, thread_pool

from .cache import cache_dir
from .errors import HarnessError
from .kernels import KERNELS, KernelSpec, arch_num, translation_unit

CHECK_ARCHS = ("sm_70", "sm_75", "sm_80", "sm_89", "sm_90", "sm_100", "sm_103", "sm_120")
FALLBACK = re.compile(r"^(FFMA|DFMA|HFMA2|FMUL|DMUL|HMUL2)\b")
CONST_MOVE = re.compile(r"^HFMA2(\.MMA)? R\d+, -?RZ, RZ, [-\w.]+, [-\w.]+$")
"""``HFMA2[.MMA] Rd, -RZ, RZ, x, y``: ptxas writing a constant into a register (the zero of an
accumulator or a loop counter), no arithmetic on data, so no fallback (seen in ptxas 13's sm_80
and sm_120 SASS of the FFMA kernel)."""
NVCC_FLAGS = ("-cubin", "-O3", "-std=c++17")


def find_tool(name: str) -> str | None:
    """Path of a CUDA tool (nvcc, cuobjdump, nvdisasm) or None; ``$MMAPROBE_NVCC`` wins for nvcc."""
    env = os.environ.get("MMAPROBE_NVCC") if name == "nvcc" else None
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    return _search_tool(name)


@lru_cache(maxsize=None)
def _search_tool(name: str) -> str | None:
    hit = shutil.which(name)
    if hit:
        return hit
    dirs = [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs.append(Path("/usr/local/cuda/bin"))
    for sp in sys.path:
        nv = Path(sp) / "nvidia"
        if nv.is_dir():
            dirs.extend(sorted(nv.glob("*/bin")))
    for d in dirs:
        if (d / name).is_file() and os.access(d / name, os.X_OK):
            return str(d / name)
    return None


def _run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"{Path(cmd[0]).name} failed to run: {exc}") from None


def nvcc_info() -> tuple[str, frozenset[str]] | None:
    """(version line, supported ``sm_XX`` targets) of nvcc, or None without nvcc."""
    nvcc = find_tool("nvcc")
    return None if nvcc is None else _nvcc_info(nvcc)


@lru_cache(maxsize=None)
def _nvcc_info(nvcc: str) -> tuple[str, frozenset[str]]:
    ver = _run([nvcc, "--version"])
    codes = _run([nvcc, "--list-gpu-code"])
    if ver.returncode or codes.returncode:
        raise HarnessError(f"nvcc at {nvcc} does not answer --version/--list-gpu-code")
    version = ver.stdout.strip().splitlines()[-1]
    return version, frozenset(re.findall(r"\bsm_\d+[af]?\b", codes.stdout))


LEGACY_ENV = "MMAPROBE_LEGACY_CUDA"
LEGACY_HINT = ("set MMAPROBE_LEGACY_CUDA to a CUDA 12 toolkit's bin, or to the folders of a CUDA 12 ptxas "
               "and cuobjdump (pip: nvidia-cuda-nvcc-cu12 has ptxas 12.9; triton 3.3's wheel bundles ptxas, "
               "cuobjdump and nvdisasm 12.x)")


def legacy_dirs() -> list[Path]:
    """The folders searched for the legacy toolchain, in order (module docstring)."""
    dirs = [Path(d) for d in os.environ.get(LEGACY_ENV, "").split(os.pathsep) if d]
    for sp in sys.path:
        for sub in ("nvidia/cuda_nvcc/bin", "triton/backends/nvidia/bin"):
            if sp and (Path(sp) / sub).is_dir():
                dirs.append(Path(sp) / sub)
    return dirs


def legacy_tool(name: str, target: str | None = None) -> str | None:
    """The first ``name`` (nvcc, ptxas, cuobjdump, nvdisasm) in :func:`legacy_dirs`; for nvcc and
    ptxas with ``target``, the first that builds that target."""
    for d in legacy_dirs():
        p = d / name
        if not (p.is_file() and os.access(p, os.X_OK)):
            continue
        if target is None or (name == "nvcc" and f"sm_{arch_num(target)}" in _nvcc_info(str(p))[1]) or \
                (name == "ptxas" and ptxas_isa(str(p), f"sm_{arch_num(target)}")):
            return str(p)
    return None


@lru_cache(maxsize=None)
def ptxas_isa(ptxas: str, target: str) -> str | None:
    """The newest PTX ISA version ``ptxas`` reads (``"8.8"``) when it assembles for ``target``,
    else None: it is asked to assemble an empty module of an impossible version, and answers
    with the version it has ("current version is '8.8'") or that it does not know the target."""
    with tempfile.TemporaryDirectory(prefix="mmaprobe-ptxas-") as tmp:
        src = Path(tmp) / "probe.ptx"
        src.write_text(f".version 99.9\n.target {target}\n.address_size 64\n")
        res = _run([ptxas, f"-arch={target}", "-o", str(Path(tmp) / "probe.cubin"), str(src)], timeout=60)
    m = re.search(r"current version is '(\d+\.\d+)'", res.stderr)
    return m.group(1) if m else None


def retarget_ptx(ptx: str, target: str, isa: str) -> str:
    """PTX written for another target, for ``target``: its ``.target`` replaced and its
    ``.version`` lowered to ``isa`` where newer (the assembler refuses what the target lacks)."""
    def version(m):
        have, cap = tuple(map(int, m.group(1).split("."))), tuple(map(int, isa.split(".")))
        return f".version {'.'.join(map(str, min(have, cap)))}"
    out, n_t = re.subn(r"^\.target\s+sm_\d+[af]?\b", f".target {target}", ptx, flags=re.M)
    out, n_v = re.subn(r"^\.version\s+(\d+\.\d+)", version, out, flags=re.M)
    if n_t != 1 or n_v != 1:
        raise HarnessError("PTX without one .version and one .target line: cannot retarget it")
    return out


def legacy_route(target: str) -> tuple[str, str] | None:
    """How a target the main nvcc lacks is built: ("nvcc", path) or ("ptxas", path), or None."""
    nvcc = legacy_tool("nvcc", target)
    if nvcc:
        return "nvcc", nvcc
    ptxas = legacy_tool("ptxas", target)
    return ("ptxas", ptxas) if ptxas else None


def toolchain_lacks(target: str) -> str | None:
    """Why ``target`` cannot be built here, or None when it can (by the main nvcc, or by the
    legacy toolchain for a target the main one lacks)."""
    info = nvcc_info()
    if info is None:
        return "nvcc not found (install the CUDA toolkit or set MMAPROBE_NVCC)"
    base = f"sm_{arch_num(target)}"
    if base not in info[1]:
        route = legacy_route(target)
        if route is not None and (route[0] == "nvcc" or _oldest_virtual(info[1])):
            return None
        hint = f" (CUDA 13 dropped it: {LEGACY_HINT})" if arch_num(target) < 75 else ""
        return f"toolchain lacks {base}{hint}"
    return None


def _oldest_virtual(codes) -> str | None:
    """The main nvcc's oldest target as a virtual one (compute_75), to write PTX for a legacy ptxas."""
    nums = sorted(arch_num(c) for c in codes if re.fullmatch(r"sm_\d+", c))
    return f"compute_{nums[0]}" if nums else None


def uses_legacy(target: str) -> bool:
    """Is ``target`` built (and its SASS read) by the legacy toolchain?"""
    info = nvcc_info()
    return info is not None and f"sm_{arch_num(target)}" not in info[1] and legacy_route(target) is not None


PREBUILT_INDEX = "index.json"
PREBUILT = Path(__file__).resolve().parent / "prebuilt"
"""The committed prebuilt cubins (written by :func:`prebuild`, ``mmaprobe harness prebuild``)."""


def prebuilt_key(spec: KernelSpec, target: str) -> str:
    """A prebuilt cubin's key: the kernel's source, the target and the flags (no nvcc version)."""
    return hashlib.sha256("\0".join([translation_unit([spec]), target, *NVCC_FLAGS]).encode()).hexdigest()[:24]


def _prebuilt_index() -> tuple[Path, dict] | None:
    folder = os.environ.get("MMAPROBE_PREBUILT", str(PREBUILT))
    if not folder:
        return None
    path = Path(folder) / PREBUILT_INDEX
    try:
        return Path(folder), json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def prebuilt(spec: KernelSpec, arch: str) -> tuple[Path, dict] | None:
    """(cubin, its index entry) from ``$MMAPROBE_PREBUILT`` (default :data:`PREBUILT`) for ``spec``
    on ``arch``, or None."""
    found = _prebuilt_index()
    if found is None:
        return None
    folder, index = found
    entry = index.get("kernels", {}).get(prebuilt_key(spec, spec.compile_target(arch)))
    if not entry or entry.get("arch") != arch or not (folder / entry["cubin"]).is_file():
        return None
    return folder / entry["cubin"], entry


def prebuild(specs: list[KernelSpec], arch: str, folder: "str | Path") -> list[BuildRow]:
    """Compile each kernel of ``specs`` that runs on ``arch`` into its own cubin in ``folder``,
    check its SASS, and record both in ``folder/index.json`` (module docstring)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows, entries = [], {}
    index_path = folder / PREBUILT_INDEX
    try:
        old = json.loads(index_path.read_text()).get("kernels", {})
    except (OSError, ValueError):
        old = {}
    nvcc = nvcc_info()
    for spec in specs:
        if not spec.supports(arch):
            continue
        target = spec.compile_target(arch)
        key = prebuilt_key(spec, target)
        try:
            cubin = compile_unit([spec], target)
            res = check_sass(spec, arch, disassemble(cubin, target).get(spec.function, []))
        except HarnessError as exc:
            rows.append(BuildRow(spec, arch, target, f"failed: {exc}"))
            continue
        name = f"{spec.id}.{target}.cubin"
        with atomic_open(folder / name, "wb", gz=False) as fh, open(cubin, "rb") as src_fh:
            shutil.copyfileobj(src_fh, fh)
        entries[key] = {"kernel": spec.id, "arch": arch, "target": target, "cubin": name,
                        "sass_ok": res.ok, "sass": res.found, "problem": res.problem, "nvcc": nvcc[0] if nvcc else ""}
        rows.append(BuildRow(spec, arch, target, "ok" if res.ok else f"failed: {res.problem}", res.found, folder / name))
    kept = {k: v for k, v in old.items() if v.get("arch") != arch}
    with atomic_open(index_path, "w", gz=False) as fh:
        json.dump({"kind": "mmaprobe.prebuilt-kernels", "kernels": {**kept, **entries}}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    return rows


def compile_unit(specs: list[KernelSpec], target: str) -> Path:
    """Compile ``specs`` into one cubin for ``target`` (with the legacy toolchain for a target the
    main nvcc lacks); return the cached path."""
    why = toolchain_lacks(target)
    if why:
        raise HarnessError(f"cannot build for {target}: {why}")
    version, codes = nvcc_info()
    route = legacy_route(target) if uses_legacy(target) else None
    tools = [version] if route is None else [version, *route, _tool_version(route[1])]
    src = translation_unit(specs)
    key = hashlib.sha256("\0".join([src, target, *tools, *NVCC_FLAGS]).encode()).hexdigest()[:24]
    out = cache_dir() / f"{key}.cubin"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mmaprobe-nvcc-") as tmp:
        cu, cubin = Path(tmp) / "kernels.cu", Path(tmp) / "kernels.cubin"
        cu.write_text(src)
        if route is None or route[0] == "nvcc":
            nvcc = find_tool("nvcc") if route is None else route[1]
            _check(_run([nvcc, *NVCC_FLAGS, f"-arch={target}", "-o", str(cubin), str(cu)]), "nvcc", target)
        else:                                   # the main nvcc's PTX, retargeted, through the legacy ptxas
            ptx = Path(tmp) / "kernels.ptx"
            flags = [f for f in NVCC_FLAGS if f != "-cubin"]
            _check(_run([find_tool("nvcc"), "-ptx", *flags, f"-arch={_oldest_virtual(codes)}", "-o", str(ptx),
                         str(cu)]), "nvcc", target)
            ptx.write_text(retarget_ptx(ptx.read_text(), target, ptxas_isa(route[1], target)))
            _check(_run([route[1], f"-arch={target}", "-O3", "-o", str(cubin), str(ptx)]), "ptxas", target)
        with atomic_open(out, "wb", gz=False) as fh, open(cubin, "rb") as src_fh:
            shutil.copyfileobj(src_fh, fh)
    return out


def _check(res: subprocess.CompletedProcess, tool: str, target: str) -> None:
    if res.returncode:
        first = next((ln for ln in res.stderr.splitlines() if "error" in ln or "fatal" in ln), res.stderr.strip()[:200])
        raise HarnessError(f"{tool} failed for {target}: {first}")


@lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    res = _run([tool, "--version"])
    return (res.stdout.strip().splitlines() or ["?"])[-1]


def disassemble(cubin: Path, target: str | None = None) -> dict[str, list[str]]:
    """Function name -> its SASS instructions (opcode and operands, predicate stripped); a cubin
    of a ``target`` built by the legacy toolchain is read by the legacy cuobjdump/nvdisasm."""
    legacy = target is not None and uses_legacy(target)
    find = (lambda n: legacy_tool(n)) if legacy else find_tool
    tool = find("cuobjdump")
    cmd = [tool, "-sass", str(cubin)] if tool else None
    if cmd is None and find("nvdisasm"):
        cmd = [find("nvdisasm"), "-c", str(cubin)]
    if cmd is None:
        raise HarnessError(f"no SASS disassembler for {target}: {LEGACY_HINT}" if legacy else
                           "no SASS disassembler: install nvidia-cuda-cuobjdump or nvidia-cuda-nvdisasm")
    res = _run(cmd)
    if res.returncode:
        raise HarnessError(f"{Path(cmd[0]).name} failed on {cubin.name}: {res.stderr.strip()[:200]}")
    funcs = parse_sass(res.stdout)
    if not any(funcs.values()):             # CUDA 13's cuobjdump prints an SM70 cubin's header, no code
        raise HarnessError(f"{cmd[0]} printed no SASS for {cubin.name}" + (f" ({target})" if target else "")
                           + ": a disassembler too new for the target?")
    return funcs


_FUNC = re.compile(r"Function : (\S+)|^\.text\.(\S+):")
_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([^;]+);")


def parse_sass(text: str) -> dict[str, list[str]]:
    """Parse cuobjdump -sass or nvdisasm output into function -> instructions."""
    funcs: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        m = _FUNC.search(line)
        if m:
            cur = funcs.setdefault(m.group(1) or m.group(2), [])
            continue
        m = _INSN.match(line)
        if m and cur is not None:
            cur.append(" ".join(m.group(1).split()))
    return funcs


@dataclass
class SassCheck:
    ok: bool
    found: list[str] = field(default_factory=list)   # distinct tensor-core mnemonics
    problem: str = ""


def check_sass(spec: KernelSpec, arch: str, insns: list[str]) -> SassCheck:
    """Does ``insns`` (one function) run ``spec`` on the tensor cores as expected for ``arch``?"""
    want = re.compile(spec.expected_sass(arch))
    ops = [i.split()[0] for i in insns]
    mma = sorted({o for o in ops if o.split(".")[0].endswith("MMA") or want.search(o)})   # HMMA, QGMMA, ... (not HFMA2.MMA)
    fallback = sorted({i.split()[0] for i in insns if FALLBACK.match(i) and not want.search(i.split()[0])
                       and not CONST_MOVE.match(i)})      # an FFMA kernel's own FFMA is none
    if not any(want.search(o) for o in ops):
        return SassCheck(False, mma, f"no instruction matches {want.pattern}"
                         + (f"; FMA fallback: {', '.join(fallback)}" if fallback else ""))
    if fallback:
        return SassCheck(False, mma, f"FMA-pipe instructions present: {', '.join(fallback)}")
    for rx in spec.also_expected(arch):          # the other parts of an emulation (the .satfinite clamp)
        if not any(re.search(rx, i) for i in insns):
            return SassCheck(False, mma, f"no instruction matches {rx} (the emulation on {arch} needs it)")
    return SassCheck(True, mma)


@dataclass
class BuildRow:
    """One (kernel, arch) line of ``harness build`` / ``harness list``."""

    spec: KernelSpec
    arch: str
    target: str
    status: str            # "ok", "built", "skipped: ...", "failed: ..."
    sass: list[str] = field(default_factory=list)
    cubin: Path | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "built") or self.status.startswith("skipped")


def check_archs(spec: KernelSpec) -> list[str]:
    """The archs a kernel is compiled and checked for by ``harness build``."""
    if spec.family == "wgmma":
        return ["sm_90a"]
    archs = {a for a, _ in spec.sass} | {a for a in CHECK_ARCHS if spec.supports(a)}
    return sorted(archs, key=arch_num)


def build(specs: list[KernelSpec] | None = None, check: bool = True, jobs: int | None = None) -> list[BuildRow]:
    """Build (and with ``check`` verify the SASS of) each kernel for each of its check archs."""
    specs = list(KERNELS.values()) if specs is None else specs
    plan: dict[str, list[tuple[KernelSpec, str]]] = {}
    for s in specs:
        for a in check_archs(s):
            plan.setdefault(s.compile_target(a), []).append((s, a))

    def one_target(target: str) -> list[BuildRow]:
        pairs = plan[target]
        why = toolchain_lacks(target)
        if why:
            return [BuildRow(s, a, target, f"skipped: {why}") for s, a in pairs]
        try:
            cubin = compile_unit([s for s, _ in pairs], target)
        except HarnessError as exc:
            return [BuildRow(s, a, target, f"failed: {exc}") for s, a in pairs]
        if not check:
            return [BuildRow(s, a, target, "built", cubin=cubin) for s, a in pairs]
        try:
            funcs = disassemble(cubin, target)
        except HarnessError as exc:
            return [BuildRow(s, a, target, f"built; SASS not checked: {exc}", cubin=cubin) for s, a in pairs]
        rows = []
        for s, a in pairs:
            res = check_sass(s, a, funcs.get(s.function, []))
            rows.append(BuildRow(s, a, target, "ok" if res.ok else f"failed: {res.problem}", res.found, cubin))
        return rows

    results = list(thread_pool(jobs or min(8, default_jobs())).map(one_target, sorted(plan, key=arch_num)))
    return [row for rows in results for row in rows]


def cubin_for(spec: KernelSpec, arch: str, check: bool = True) -> Path:
    """A cubin holding ``spec`` for a device of ``arch``; with ``check``, refuse one whose SASS
    does not run the MMA on the tensor cores."""
    if not spec.supports(arch):
        raise HarnessError(f"{spec.id} does not run on {arch} (needs {spec.arch}"
                           + (f"..{spec.max_arch})" if spec.max_arch else ")")
                           + (f": {spec.absent_note}" if spec.absent_note else ""))
    target = spec.compile_target(arch)
    pre = prebuilt(spec, arch)
    if pre is not None:
        cubin, entry = pre
        if check and not entry.get("sass_ok"):
            raise HarnessError(f"{spec.id} for {target}: {entry.get('problem') or 'SASS check failed'} (prebuilt)")
        return cubin
    cubin = compile_unit([spec], target)
    if check:
        if not uses_legacy(target) and not (find_tool("cuobjdump") or find_tool("nvdisasm")):
            raise HarnessError("no SASS disassembler to check the kernel with: pip install "
                               "nvidia-cuda-cuobjdump, or pass --no-sass-check")
        res = check_sass(spec, arch, disassemble(cubin, target).get(spec.function, []))
        if not res.ok:
            raise HarnessError(f"{spec.id} for {target}: {res.problem}")
    return cubin
