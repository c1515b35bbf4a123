"""The native reading of the semantic core: a model traced to core primitives, compiled to
machine code with LLVM (llvmlite), run over all cores. The NumPy reading stays the reference."""

from .kernel import AUTO_MIN_WORK, BIG_BATCH, BIG_LANES, GEMM_ROW, MAX_WIDTH, ROW_LANES, ROWS, Kernel, NativeError, TooWide, VECTOR_WIDTH, WIDE_ELEMENT_LANES, available, default_jobs, function, is_cached, kernel, model_widths, narrow_bits, param_kernel, pool, row_lanes, row_layout, run_cases, run_rows, vector_lanes

__all__ = ["AUTO_MIN_WORK", "BIG_BATCH", "BIG_LANES", "GEMM_ROW", "MAX_WIDTH", "ROW_LANES", "ROWS", "Kernel", "NativeError", "TooWide", "VECTOR_WIDTH", "WIDE_ELEMENT_LANES", "available", "default_jobs", "function", "is_cached", "kernel", "model_widths", "narrow_bits", "param_kernel", "pool", "row_lanes", "row_layout", "run_cases", "run_rows", "vector_lanes"]
