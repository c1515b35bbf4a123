"""The project's one file writer: atomic (a temporary file beside the target, renamed into place),
so a file appears complete or not at all, even when a run is interrupted; and the one reader of
``.npy`` matrices (:func:`read_npy`), whose every failure is one :class:`NpyError` line."""

from __future__ import annotations

import contextlib
import gzip
import os
import secrets
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def atomic_open(path, mode: str = "w", gz: bool | None = None):
    """Open a temporary file beside ``path`` for writing (``"w"`` UTF-8 text or ``"wb"``; gzip
    when ``gz``, by default when the name ends in ``.gz``); on a clean exit it replaces ``path``,
    on an exception it is removed and ``path`` is left as it was."""
    path = Path(path)
    gz = path.suffix == ".gz" if gz is None else gz
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)     # the umask applies, as for open()
    text = "b" not in mode
    try:
        with os.fdopen(fd, "wb") as raw:
            if gz:
                with gzip.open(raw, "wt" if text else "wb", encoding="utf-8" if text else None) as fh:
                    yield fh
            elif text:
                with open(raw.fileno(), "w", encoding="utf-8", closefd=False) as fh:
                    yield fh
            else:
                yield raw
        try:
            os.replace(tmp, path)
        except OSError as exc:          # name the user's path, not the temporary file
            raise OSError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


NPY_MAGIC = b"\x93NUMPY"


class NpyError(ValueError):
    """A file that is not a readable ``.npy`` array; the message is one line naming the file
    (``path``: ``reason``)."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = str(path), reason


def read_npy(path) -> np.ndarray:
    """The array in the ``.npy`` file ``path`` (never unpickled). A missing file, a text or other
    file, a ``.npz`` archive, an object array or a cut-short file raise :class:`NpyError`.

    Arrays of ml_dtypes types (bfloat16, the FP8/FP6/FP4 types) come back as NumPy void arrays
    (``V1``, ``V2``): ``np.save`` writes their bytes but not their type's name;
    :func:`smtmodel.gemm.to_bits` reads those as raw bits of the format they are given as."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(NPY_MAGIC))
    except OSError as exc:
        raise NpyError(path, str(exc.strerror or exc)) from None
    if head != NPY_MAGIC:
        kind = ("a .npz archive (np.savez); save one array with np.save" if head.startswith(b"PK")
                else "empty" if not head else "no NumPy header (np.save writes .npy files)")
        raise NpyError(path, f"not a .npy file: {kind}")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        why = ("an object array (only numeric arrays are read)" if "pickle" in str(exc).lower()
               else " ".join(str(exc).split()))
        raise NpyError(path, f"cannot read the .npy array: {why}") from None
    except (OSError, EOFError) as exc:
        raise NpyError(path, f"cannot read the .npy array: {' '.join(str(exc).split()) or 'cut short'}") from None
