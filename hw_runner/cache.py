"""Where built kernels are cached: ``$MMAPROBE_CACHE``, default ``~/.cache/mmaprobe/kernels``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("MMAPROBE_CACHE") or Path.home() / ".cache" / "mmaprobe" / "kernels")
