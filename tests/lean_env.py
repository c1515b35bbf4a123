"""Run a command as if only numpy, ml_dtypes and llvmlite were installed beside the project (the
GPU machine's packages that mmaprobe's device path may use): every other third-party import
raises ImportError. ``python tests/lean_env.py -m mmaprobe ...``."""

import runpy
import sys

ALLOWED = {"numpy", "ml_dtypes", "llvmlite", "smtmodel", "queries", "hw_runner", "survey", "mmaprobe"}


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in ALLOWED or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        raise ImportError(f"{top} is not installed in the lean environment", name=name)


sys.meta_path.insert(0, _Blocker())
if __name__ == "__main__":
    if sys.argv[1] == "-m":
        mod, sys.argv = sys.argv[2], [sys.argv[2]] + sys.argv[3:]
        runpy.run_module(mod, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(sys.argv[1], run_name="__main__")
