"""Import/export the text files of the MATLAB Tensor Core toolbox (seed 001, north-numerical-
computing/MATLAB-tensor-core, ``model_validation/<GPU>/<format>/``).

Layout of those files, one dot product per line, line i of each file belonging together:

- ``a_<GPU>_<in>.txt``, ``b_<GPU>_<in>.txt``: k space-separated 8-digit hex numbers, the
  binary32 bit patterns of the input values (which are exact values of the input format);
- ``c_<GPU>_fp32.txt``: the 32-character binary string of c as binary32 (the capture rounded c
  to fp16 with round-to-nearest-even when the output is fp16);
- ``d_<GPU>_<out>.txt``: the 32-character binary string of d widened exactly to binary32.

``<in>`` is fp16, bf16, tf32, E4M3 or E5M2; ``<out>`` fp32 or fp16.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smtmodel.formats import bits_to_numpy, get_format, numpy_to_bits
from smtmodel.io import atomic_open
from smtmodel.vectors import VectorFile, make_header

from .errors import HarnessError

TOOLBOX_NAME = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp8e4m3": "E4M3", "fp8e5m2": "E5M2",
                "fp32": "fp32"}


def _to_fp32_bits(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Widen raw bits of ``fmt`` exactly to binary32 bits."""
    if fmt in ("fp32", "tf32"):
        return bits.astype(np.uint32)
    return bits_to_numpy(bits, fmt).astype(np.float32).view(np.uint32)


def _from_fp32_bits(bits32: np.ndarray, fmt: str, what: str, exact: bool = True) -> np.ndarray:
    """binary32 bits -> raw bits of ``fmt`` (checked exact unless ``exact`` is False: RNE)."""
    vals = bits32.astype(np.uint32).view(np.float32)
    if fmt == "fp32":
        return bits32.astype(np.uint64)
    if fmt == "tf32":
        out = bits32.astype(np.uint64)
        if np.any(out & np.uint64(0x1FFF)):
            raise HarnessError(f"{what}: values are not TF32 values (low 13 bits set)")
        return out
    out = numpy_to_bits(vals, fmt)
    if exact:
        back = bits_to_numpy(out, fmt).astype(np.float32)
        bad = ~((back == vals) | (np.isnan(back) & np.isnan(vals)))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise HarnessError(f"{what}: value {vals.flat[i]!r} (entry {i}) is not exact in {fmt}")
    return out


def file_names(gpu: str, in_fmt: str, out_fmt: str) -> dict[str, str]:
    try:
        fin, fout = TOOLBOX_NAME[in_fmt], TOOLBOX_NAME[out_fmt]
    except KeyError as exc:
        raise HarnessError(f"the MATLAB toolbox files have no name for format {exc.args[0]}") from None
    return {"a": f"a_{gpu}_{fin}.txt", "b": f"b_{gpu}_{fin}.txt",
            "c": f"c_{gpu}_fp32.txt", "d": f"d_{gpu}_{fout}.txt"}


def export_matlab(vf, directory, gpu: str, source: str | None = None) -> dict[str, Path]:
    """Write ``vf``'s cases as toolbox files in ``directory``; d comes from ``observed[source]``
    or ``expect[source]`` (default: the file's only observed key). Returns the written paths."""
    h = vf.header
    names = file_names(gpu, h["in_fmt"], h["out_fmt"])
    keys = {k for case in vf.cases for k in case.get("observed", {})}
    if source is None and len(keys) > 1:
        raise HarnessError(f"several observed devices; choose one with --source: {', '.join(sorted(keys))}")
    source = source if source is not None else next(iter(keys), None)
    a, b, c = vf.arrays()
    fo = get_format(h["out_fmt"])
    d = None
    if source is not None:
        try:
            d = np.array([fo.parse_hex(case.get("observed", {}).get(source) or case["expect"][source])
                          for case in vf.cases], dtype=np.uint64)
        except KeyError:
            raise HarnessError(f"not every case has an observed or expected value for {source!r}") from None
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    a32, b32 = _to_fp32_bits(a, h["in_fmt"]), _to_fp32_bits(b, h["in_fmt"])
    written = {}
    for key, rows in (("a", a32), ("b", b32)):
        written[key] = out / names[key]
        with atomic_open(written[key], gz=False) as fh:
            fh.write("".join(" ".join(f"{int(x):08x}" for x in row) + "\n" for row in rows))
    series = [("c", _to_fp32_bits(c, h["c_fmt"]))] + ([("d", _to_fp32_bits(d, h["out_fmt"]))] if d is not None else [])
    for key, vals in series:
        written[key] = out / names[key]
        with atomic_open(written[key], gz=False) as fh:
            fh.write("".join(f"{int(x):032b}\n" for x in vals))
    return written


def _read_rows(path: Path, parse) -> list:
    if not path.exists():
        raise HarnessError(f"{path}: no such file")
    return [parse(line.split(), path, no) for no, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]


def _hex_row(tokens, path, no):
    try:
        return [int(t, 16) for t in tokens]
    except ValueError:
        raise HarnessError(f"{path}:{no}: expected hex binary32 patterns, got {' '.join(tokens)[:40]!r}") from None


def _bin_row(tokens, path, no):
    if len(tokens) != 1 or len(tokens[0]) != 32 or set(tokens[0]) - {"0", "1"}:
        raise HarnessError(f"{path}:{no}: expected one 32-character binary string")
    return int(tokens[0], 2)


def import_matlab(directory, gpu: str, in_fmt: str, out_fmt: str, c_fmt: str | None = None,
                  id_prefix: str | None = None) -> VectorFile:
    """Read toolbox files into a vector file. ``c_fmt`` defaults to ``out_fmt`` (fp16-output
    captures rounded c to fp16 with RNE, so the fp32 c is rounded the same way); without a c
    file c is +0. The d file, when present, becomes ``observed[gpu]``."""
    c_fmt = c_fmt or out_fmt
    names = file_names(gpu, in_fmt, out_fmt)
    d_ir = Path(directory)
    a_rows = _read_rows(d_ir / names["a"], _hex_row)
    b_rows = _read_rows(d_ir / names["b"], _hex_row)
    if len(a_rows) != len(b_rows) or not a_rows:
        raise HarnessError(f"{names['a']} and {names['b']} must have the same, non-zero number of lines")
    k = len(a_rows[0])
    if any(len(r) != k for r in a_rows + b_rows):
        raise HarnessError(f"every line of {names['a']} and {names['b']} must hold {k} values")
    n = len(a_rows)
    a = _from_fp32_bits(np.array(a_rows, dtype=np.uint64), in_fmt, names["a"])
    b = _from_fp32_bits(np.array(b_rows, dtype=np.uint64), in_fmt, names["b"])
    c = np.zeros(n, dtype=np.uint64)
    if (d_ir / names["c"]).exists():
        c32 = np.array(_read_rows(d_ir / names["c"], _bin_row)[:n], dtype=np.uint64)
        if len(c32) < n:
            raise HarnessError(f"{names['c']} has {len(c32)} lines, fewer than the {n} of {names['a']}")
        c = _from_fp32_bits(c32, c_fmt, names["c"], exact=False)
    d = None
    if (d_ir / names["d"]).exists():
        d32 = np.array(_read_rows(d_ir / names["d"], _bin_row)[:n], dtype=np.uint64)
        d = _from_fp32_bits(d32, out_fmt, names["d"])
    prefix = id_prefix or f"{gpu.lower()}-{in_fmt}-{out_fmt}"
    header = make_header(in_fmt, c_fmt, out_fmt, k, source={"tool": "mmaprobe import-matlab",
                                                           "data": f"MATLAB tensor-core toolbox files in {d_ir}"})
    vf = VectorFile.from_arrays(header, a[:n], b[:n], c[:n], ids=prefix)
    if d is not None:                    # a d file shorter than a's: the cases past its end have no observed
        for case, t in zip(vf.cases, get_format(out_fmt).hex_list(d[:n])):
            case["observed"] = {gpu: t}
    return vf
