"""Compile an LLVM module for the host CPU with llvmlite (MCJIT) and hand back a ctypes function.

The pass pipeline is LLVM's -O3 with loop and SLP vectorisation, for the host's CPU name and
features. The ctypes call releases the GIL, so chunks of cases can run on a thread pool.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading

_LOCK = threading.Lock()
_READY = False
_TM = None
_DATA_LAYOUT = ""

KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p)
"""The C signature of every generated kernel (see :mod:`smtmodel.native.codegen`)."""

KERNEL_CHECKED = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                  ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
"""A kernel emitted with ``check=True``: :data:`KERNEL` and the ``chk`` buffer."""


def llvm_binding():
    """llvmlite.binding, initialised once; raises ImportError/OSError if it cannot load."""
    global _READY, _TM, _DATA_LAYOUT
    import llvmlite.binding as llvm
    with _LOCK:
        if not _READY:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _TM = _target_machine(llvm)
            _DATA_LAYOUT = str(_TM.target_data)      # once: the string is read back from LLVM
            _READY = True
    return llvm


def _target_machine(llvm):
    """A target machine for the host CPU. An MCJIT engine takes ownership of the one it is
    given (and frees it with the engine), so every engine gets its own; the shared one only
    runs passes and prints assembly."""
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3, jit=True)


class Compiled:
    """A compiled kernel: keeps its execution engine alive and exposes the ctypes function."""

    def __init__(self, engine, fn, seconds: float, ir_text: str):
        self.engine, self.fn, self.seconds, self.ir = engine, fn, seconds, ir_text

    def asm(self) -> str:
        return _TM.emit_assembly(llvm_binding().parse_assembly(self.ir))


PIPELINE = "light"
"""``light``: instcombine + DCE before instruction selection (the body is already vector code,
folded and shared by the tracer); ``O3``: LLVM's full -O3 pipeline (slow on big bodies)."""


def cache_dir() -> str | None:
    """Where compiled objects are kept between runs: ``$MMAPROBE_CACHE`` (empty: no disk cache),
    else ``~/.cache/mmaprobe/native``."""
    d = os.environ.get("MMAPROBE_CACHE")
    if d == "":
        return None
    return d or os.path.join(os.path.expanduser("~"), ".cache", "mmaprobe", "native")


def _cache_file(ir_text: str, pipeline: str) -> str | None:
    d = cache_dir()
    if d is None:
        return None
    llvm = llvm_binding()
    key = "\n".join((ir_text, pipeline, llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
                     ".".join(map(str, llvm.llvm_version_info))))
    return os.path.join(d, hashlib.sha256(key.encode()).hexdigest() + ".o")


def _store(path: str, data: bytes) -> None:
    """Write atomically (a temporary file renamed), never a half-written object; errors ignored."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass


def compile_ir(ir_text: str, name: str = "kernel", pipeline: str | None = None, signature=KERNEL) -> Compiled:
    """Optimise and JIT-compile ``ir_text`` for the host CPU; return its ``name`` function.

    The object code is cached on disk (:func:`cache_dir`) under a hash of the IR, the pipeline,
    the CPU and the LLVM version, so a second process loads it instead of compiling."""
    engine, addrs, seconds = _compile(ir_text, (name,), pipeline)
    return Compiled(engine, signature(addrs[name]), seconds, ir_text)


def compile_functions(ir_text: str, signatures: dict, pipeline: str | None = None) -> Compiled:
    """:func:`compile_ir` for a module of several functions: ``signatures`` maps each function's
    name to its ctypes prototype; the result's ``fn`` is a dict name -> ctypes function."""
    engine, addrs, seconds = _compile(ir_text, tuple(signatures), pipeline)
    return Compiled(engine, {n: sig(addrs[n]) for n, sig in signatures.items()}, seconds, ir_text)


def _compile(ir_text: str, names: tuple, pipeline: str | None):
    import time
    t = time.perf_counter()
    llvm = llvm_binding()
    pipeline = pipeline or PIPELINE
    path = _cache_file(ir_text, pipeline)
    cached = None
    if path and os.path.exists(path):
        try:
            with open(path, "rb") as f:
                cached = f.read()
        except OSError:
            cached = None
    with _LOCK:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        mod.triple = _TM.triple
        mod.data_layout = _DATA_LAYOUT
        if cached:
            pipeline = "cached"
        if pipeline == "O3":
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pb = llvm.create_pass_builder(_TM, pto)
            pb.getModulePassManager().run(mod, pb)
        elif pipeline == "light":
            pto = llvm.create_pipeline_tuning_options(speed_level=2)
            pb = llvm.create_pass_builder(_TM, pto)
            mpm = llvm.create_new_module_pass_manager()
            mpm.add_instruction_combine_pass()
            mpm.add_dead_code_elimination_pass()
            mpm.run(mod, pb)
        engine = llvm.create_mcjit_compiler(mod, _target_machine(llvm))
        if path:
            engine.set_object_cache(lambda m, data: cached is None and _store(path, data),
                                    lambda m: cached)
        engine.finalize_object()
        addrs = {n: engine.get_function_address(n) for n in names}
    return engine, addrs, time.perf_counter() - t
