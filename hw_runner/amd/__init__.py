"""The AMD half of the harness: MFMA kernels for CDNA1-3 (gfx908, gfx90a, gfx942) written as LLVM
IR, compiled with the AMDGPU target of llvmlite's LLVM (no ROCm), their ISA checked for the
intended ``v_mfma_*`` instruction, linked into HSA code objects with ``ld.lld``, and launched
through the HIP runtime (``hip-python``, the optional ``.[rocm]`` extra)."""
