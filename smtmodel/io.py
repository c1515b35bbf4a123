"""The project's one file writer: atomic (a temporary file beside the target, renamed into place),
so a file appears complete or not at all, even when a run is interrupted; and the one reader of
``.npy`` arrays and ``.npz`` archives (:func:`read_npy`, :func:`read_npz`), whose every failure
on a damaged file is one :class:`ArrayFileError` line naming the file (vector files:
:func:`smtmodel.vectors.read_vectors`, whose errors are :class:`DataFileError` too)."""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import secrets
import zipfile
import zlib
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def atomic_open(path, mode: str = "w", gz: bool | None = None):
    """Open a temporary file beside ``path`` for writing (``"w"`` UTF-8 text or ``"wb"``; gzip
    when ``gz``, by default when the name ends in ``.gz``); on a clean exit it replaces ``path``,
    on an exception it is removed and ``path`` is left as it was."""
    path = Path(path)
    gz = path.suffix == ".gz" if gz is None else gz
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)     # the umask applies, as for open()
    except OSError as exc:              # name the user's path, not the temporary file
        raise type(exc)(exc.errno, f"cannot write {path}: {_reason(exc)}") from None
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
            raise OSError(exc.errno, f"cannot write {path}: {_reason(exc)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _reason(exc: OSError) -> str:
    """An OS error's reason in words (no errno, no file name): "no such folder", "permission denied"."""
    if exc.errno in (errno.ENOENT,):
        return "no such folder"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a folder"
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP = b"PK\x05\x06"


class DataFileError(ValueError):
    """An input file that cannot be read as what it should be (a damaged, empty, cut-short or
    foreign file): the message is one line naming the file and what is wrong. The command line
    reports it as a user error (exit 2)."""


class ArrayFileError(DataFileError):
    """A file that is not a readable ``.npy`` array or ``.npz`` archive; the message is one line
    naming the file (``path``: ``reason``)."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {' '.join(str(reason).split())}")
        self.path, self.reason = str(path), reason


NpyError = ArrayFileError
"""The name :func:`read_npy`'s callers catch (the same class as :class:`ArrayFileError`)."""


def _head(path, n: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except IsADirectoryError:
        raise ArrayFileError(path, "is a folder, not a file") from None
    except OSError as exc:
        raise ArrayFileError(path, str(exc.strerror or exc)) from None


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if "pickle" in text.lower():
        return "an object array (only numeric arrays are read)"
    return text or type(exc).__name__


# What NumPy, zipfile and zlib raise on a damaged file (zipfile.BadZipFile and zlib.error are
# not OSError or ValueError).
_DAMAGED = (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, UnicodeDecodeError, OverflowError, MemoryError)


def read_npy(path) -> np.ndarray:
    """The array in the ``.npy`` file ``path`` (never unpickled). A missing file, a text or other
    file, a ``.npz`` archive, an object array or a cut-short file raise :class:`ArrayFileError`.

    Arrays of ml_dtypes types (bfloat16, the FP8/FP6/FP4 types) come back as NumPy void arrays
    (``V1``, ``V2``): ``np.save`` writes their bytes but not their type's name;
    :func:`smtmodel.gemm.to_bits` reads those as raw bits of the format they are given as."""
    head = _head(path, len(NPY_MAGIC))
    if head != NPY_MAGIC:
        kind = ("a .npz archive (np.savez); save one array with np.save" if head.startswith(b"PK")
                else "empty" if not head else "no NumPy header (np.save writes .npy files)")
        raise ArrayFileError(path, f"not a .npy file: {kind}")
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is not None:
                shape, _, dtype = read_header(fh)
                _check_fits(path, int(np.prod(shape, dtype=object)) * dtype.itemsize,
                            os.fstat(fh.fileno()).st_size - fh.tell())
        return np.load(path, allow_pickle=False)
    except ArrayFileError:
        raise
    except _DAMAGED as exc:
        raise ArrayFileError(path, f"cannot read the .npy array: {_why(exc) or 'cut short'}") from None


def _check_fits(path, need: int, have: int | None) -> None:
    """Refuse an array whose header promises more bytes than the file holds (a cut-short file)."""
    if have is not None and need > have:
        raise ArrayFileError(path, f"cannot read the .npy array: cut short (its header promises {need} bytes of data, "
                                   f"the file holds {have})")


def read_npz(path, required: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` archive ``path``, read in full (never unpickled), by name.

    A missing, empty, cut-short or corrupt file (a bad zip directory, a CRC error, a member that is
    not an array), an archive whose arrays would not fit in the memory available, or one lacking
    a name in ``required`` raises :class:`ArrayFileError`: one line naming the file and what is
    wrong."""
    from .limits import memory_available

    head = _head(path, 4)
    if not head:
        raise ArrayFileError(path, "empty file (expected a .npz archive written by np.savez)")
    if head not in (ZIP_MAGIC, EMPTY_ZIP):
        kind = "a .npy array (np.save)" if head == NPY_MAGIC[:4] else "not a zip archive"
        raise ArrayFileError(path, f"not a .npz archive: {kind}")
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
            total = sum(m.file_size for m in members)
            have = memory_available()
            if have is not None and total > have:
                raise ArrayFileError(path, f"its arrays need {total / 2 ** 30:.1f} GiB of memory; "
                                           f"{have / 2 ** 30:.1f} GiB are available")
            out = {}
            for m in members:
                if m.is_dir():
                    continue
                if not m.filename.endswith(".npy"):
                    raise ArrayFileError(path, f"member {m.filename!r} is not a .npy array")
                with zf.open(m) as fh:
                    out[m.filename[:-4]] = np.lib.format.read_array(fh, allow_pickle=False)
    except ArrayFileError:
        raise
    except _DAMAGED as exc:
        raise ArrayFileError(path, f"cannot read the .npz archive: {_why(exc)}") from None
    missing = [k for k in required if k not in out]
    if missing:
        raise ArrayFileError(path, f"the archive lacks {', '.join(missing)}")
    return out


def json_objects(lines, path, error: type = DataFileError) -> list[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSON Lines file (text or bytes lines):
    the one line reader of vector files and journals. A line that is not JSON, or not a JSON
    object, raises ``error`` naming ``path`` and the line."""
    out = []
    for no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
            raise error(f"{path}:{no}: not JSON ({why})") from None
        if not isinstance(obj, dict):
            raise error(f"{path}:{no}: not a JSON object (a JSON {type(obj).__name__})")
        out.append((no, obj))
    return out
