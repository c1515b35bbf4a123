"""The ``mmaprobe`` subcommands: one module per family, each with ``register(subparsers)``.

:data:`COMMANDS` is the one registry: :func:`mmaprobe.cli.build_parser` adds these modules'
parsers in this order, and a module that fails to import fails the whole command line (it is
never skipped). Each parser sets ``func``, a handler ``fn(args) -> exit code``.
"""

from . import (bound, catalog, crossgpu, explain, features, gemm, harness, identify, invariance, plot, property, query,
               report, schemes, suite, survey)
from . import torch as torch_cmd     # mmaprobe torch ...: imports torch only when it runs

COMMANDS = (catalog, query, crossgpu, features, property, suite, schemes, bound, harness, survey, gemm, identify, explain,
            plot, report, invariance, torch_cmd)
