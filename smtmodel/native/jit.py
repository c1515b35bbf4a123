"""Compile an LLVM module for the host CPU with llvmlite (MCJIT) and hand back a ctypes function.

The pass pipeline is LLVM's -O3 with loop and SLP vectorisation, for the host's CPU name and
features. The ctypes call releases the GIL, so chunks of cases can run on a thread pool.
"""

from __future__ import annotations

import ctypes
import threading

_LOCK = threading.Lock()
_READY = False
_TM = None

KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p)
"""The C signature of every generated kernel (see :mod:`smtmodel.native.codegen`)."""


def _binding():
    """llvmlite.binding, initialised once; raises ImportError/OSError if it cannot load."""
    global _READY, _TM
    import llvmlite.binding as llvm
    with _LOCK:
        if not _READY:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            target = llvm.Target.from_default_triple()
            _TM = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                               features=llvm.get_host_cpu_features().flatten(),
                                               opt=3, jit=True)
            _READY = True
    return llvm


class Compiled:
    """A compiled kernel: keeps its execution engine alive and exposes the ctypes function."""

    def __init__(self, engine, fn, seconds: float, ir_text: str):
        self.engine, self.fn, self.seconds, self.ir = engine, fn, seconds, ir_text

    def asm(self) -> str:
        return _TM.emit_assembly(_binding().parse_assembly(self.ir))


PIPELINE = "light"
"""``light``: instcombine + DCE before instruction selection (the body is already vector code,
folded and shared by the tracer); ``O3``: LLVM's full -O3 pipeline (slow on big bodies)."""


def compile_ir(ir_text: str, name: str = "kernel", pipeline: str | None = None) -> Compiled:
    """Optimise and JIT-compile ``ir_text`` for the host CPU; return its ``name`` function."""
    import time
    t = time.perf_counter()
    llvm = _binding()
    with _LOCK:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        mod.triple = _TM.triple
        mod.data_layout = str(_TM.target_data)
        pipeline = pipeline or PIPELINE
        if pipeline == "O3":
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pb = llvm.create_pass_builder(_TM, pto)
            pb.getModulePassManager().run(mod, pb)
        elif pipeline == "light":
            pb = llvm.create_pass_builder(_TM, llvm.create_pipeline_tuning_options(speed_level=2))
            mpm = llvm.create_new_module_pass_manager()
            mpm.add_instruction_combine_pass()
            mpm.add_dead_code_elimination_pass()
            mpm.run(mod, pb)
        engine = llvm.create_mcjit_compiler(mod, _TM)
        engine.finalize_object()
        addr = engine.get_function_address(name)
    return Compiled(engine, KERNEL(addr), time.perf_counter() - t, ir_text)
