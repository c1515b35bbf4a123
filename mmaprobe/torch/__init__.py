"""Optional PyTorch adapter (the ``torch`` extra; docs/torch.md). Nothing else in mmaprobe imports
torch.

- :func:`matmul`, :func:`scaled_mm`: one GEMM on CPU tensors by a named model and dataflow
  (:mod:`mmaprobe.torch.adapter`);
- :class:`emulate`: a context manager under which a module's matmuls on CPU tensors compute a
  chosen GPU's bits (:mod:`mmaprobe.torch.emulate`);
- :func:`diff`: the same module and inputs under two GPU choices, compared call by call
  (:mod:`mmaprobe.torch.diff`; ``mmaprobe torch diff`` on the command line);
- :func:`capture`, :func:`replay`: a module's ``nn.Linear`` calls recorded where it runs (a GPU)
  and each replayed on the CPU under :class:`emulate`, per layer (:mod:`mmaprobe.torch.capture`);
- :mod:`mmaprobe.torch.example`: the worked example's Llama-style decoder (``build()``).
"""

from .adapter import ADA_FP8_MODEL, from_bits, matmul, raw_bits, scaled_mm, to_bits_tensor
from .emulate import GPUS, EmulatedCall, EmulationWarning, Report, emulate, gpu_arch
from .diff import CallDiff, DiffResult, diff, load_build, parse_choice, ulp_distance
from .capture import ReplayResult, capture, replay

__all__ = ["ADA_FP8_MODEL", "GPUS", "CallDiff", "DiffResult", "EmulatedCall", "EmulationWarning", "Report", "ReplayResult", "capture", "diff",
           "emulate", "from_bits", "gpu_arch", "load_build", "matmul", "parse_choice", "raw_bits", "replay", "scaled_mm", "to_bits_tensor", "ulp_distance"]
