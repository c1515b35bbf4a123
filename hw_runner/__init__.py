"""GPU harness: instruction kernels, their build and SASS check, launching vector files on a GPU
(CuPy) or a twin model, verdicts, and MATLAB tensor-core toolbox file exchange; ``amd/``: the MFMA
kernels of CDNA1-3, their ISA check, HSA code objects and the HIP launcher."""

from .errors import HarnessError
from .kernels import KERNELS, KernelSpec, default_kernel, get_kernel
from .runner import RunReport, ModelVerdict, run_vectors, verdict

__all__ = ["HarnessError", "KERNELS", "KernelSpec", "default_kernel", "get_kernel",
           "RunReport", "ModelVerdict", "run_vectors", "verdict"]
