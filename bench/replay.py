"""Replays end to end with the GEMM reading: recorded GPU GEMMs, and a transformer block's matmuls.

Run: python bench/replay.py [--largest N] [--jobs J] [--seq 512 --d 1024 --heads 16 --ffn 4096]
[--model hopper-bf16-fp32] [--dataflow cutlass3-sm90:out=bf16] [--check-rows 2] [--out DIR]

1. **RTX 4060 recordings** (../shared/hwdata/rtx4060_mmaemu, ``torch._scaled_mm`` through
   cuBLASLt, read by :mod:`smtmodel.mmaemu`): the ``--largest`` recorded GEMM outputs by M·N·K
   (the largest are Evo2 1B's FP8 projections, 32 x 128 x 1920, with their fp32 accumulator and
   bf16 outputs) replayed with the Ada model and the call's cuBLASLt dataflow
   (:mod:`queries.cublaslt`: fast or slow accumulation and the split-K read from the recording);
   each output compared bit for bit with what the GPU wrote.
2. **A transformer block** (pre-norm, ``--seq`` tokens, width ``--d``, ``--heads`` heads, MLP
   width ``--ffn``): its seven matmuls (Q, K, V and output projections, attention scores and
   attention times V per head, MLP up and down) emulated as the model and dataflow compute them
   (default Hopper bf16 -> fp32 tensor cores, CUTLASS 3.x SM90 epilogue, bf16 outputs); what lies
   between them (layer norm, softmax with 1/sqrt(d_head), GELU, residual additions) is float32
   NumPy rounded to bf16, and is not timed. Inputs and weights are seeded standard normal values
   (weights scaled by 1/sqrt(fan-in)). The first ``--check-rows`` rows of every matmul are
   recomputed with the NumPy reading (the reference) and compared bit for bit; the time per
   layer (matmul) and per block is printed with the machine's load.

``--out DIR`` writes the block's output (bf16 bits, ``block_out.npy``) atomically: an interrupted
run leaves no partial file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smtmodel import native  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402
from smtmodel.formats import bits_to_numpy  # noqa: E402
from smtmodel.gemm import gemm_bits, output_format, resolve_dataflow  # noqa: E402
from smtmodel.io import atomic_open  # noqa: E402
from smtmodel.sampling import round_to  # noqa: E402

HWMINI = Path(__file__).resolve().parents[1] / ".." / "shared" / "hwdata" / "rtx4060_mmaemu"


def load() -> float:
    return os.getloadavg()[0]


def recordings(root: Path, largest: int, jobs) -> None:
    from queries.cublaslt import call_dataflow, replay
    from smtmodel.mmaemu import open_hwmini
    if not root.exists():
        print(f"{root}: no recordings here; part 1 skipped")
        return
    outs = open_hwmini(root).gemm_outputs()
    outs.sort(key=lambda o: -o.a.shape[0] * o.a.shape[1] * o.b.shape[0])
    print(f"RTX 4060 cuBLASLt recordings: the {largest} largest of {len(outs)} recorded GEMM outputs "
          f"(load {load():.1f})")
    cache: dict = {}
    ok = 0
    t_all = c_all = 0.0
    for o in outs[:largest]:
        M, K = o.a.shape
        N = o.b.shape[0]
        replay(o, jobs=jobs)                            # compile (first output of its kind)
        t, c = time.perf_counter(), time.process_time()
        d = replay(o, jobs=jobs, cache=cache)
        w, cp = time.perf_counter() - t, time.process_time() - c
        t_all, c_all = t_all + w, c_all + cp
        same = np.array_equal(d, o.expect)
        ok += same
        print(f"  {o.id:<58} {M}x{N}x{K} {call_dataflow(o).text():<34} "
              f"{'bit-exact' if same else 'DIFFERS'}  {1e3 * w:6.1f} ms ({1e3 * cp:.1f} CPU-ms)")
    print(f"  {ok} of {min(largest, len(outs))} bit-exact, {1e3 * t_all:.0f} ms wall, {1e3 * c_all:.0f} CPU-ms "
          f"(warm; load {load():.1f})\n")


def _bf16(x: np.ndarray) -> np.ndarray:
    """float values rounded (RNE) to bf16 bits."""
    return round_to(np.asarray(x, dtype=np.float64), "bf16")


def _f32(bits: np.ndarray, fmt: str) -> np.ndarray:
    return bits_to_numpy(bits, fmt).astype(np.float32)


def _layer_norm(x: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + np.float32(1e-5))


def _gelu(x: np.ndarray) -> np.ndarray:
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x ** 3)))


def block(args) -> None:
    m = get_model(args.model)
    df = resolve_dataflow(args.dataflow)
    fmt = m.in_fmt
    out = output_format(m, df)
    S, D, H, F = args.seq, args.d, args.heads, args.ffn
    dh = D // H
    rng = np.random.default_rng(0)

    def weight(k, n):
        return _bf16(rng.standard_normal((k, n)) / np.sqrt(k))
    Wq, Wk, Wv, Wo = (weight(D, D) for _ in range(4))
    W1, W2 = weight(D, F), weight(F, D)
    x = _bf16(rng.standard_normal((S, D)))
    times: dict = {}
    checked = [0, 0]

    def mm(name, a, b):
        """bits of a @ b (a (M, K), b (K, N) bits of the input format) in the output format."""
        gemm_bits(m, a[:1], b, None, beta_bits=0, dataflow=df, jobs=args.jobs)        # compile
        t, c = time.perf_counter(), time.process_time()
        d = gemm_bits(m, a, b, None, beta_bits=0, dataflow=df, jobs=args.jobs)
        w, cp = time.perf_counter() - t, time.process_time() - c
        r = min(args.check_rows, a.shape[0])
        if r:
            ref = gemm_bits(m, a[:r], b, None, beta_bits=0, dataflow=df, backend="numpy")
            checked[0] += 1
            checked[1] += bool(np.array_equal(ref, d[:r]))
        tw, tc, macs = times.get(name, (0.0, 0.0, 0))
        times[name] = (tw + w, tc + cp, macs + a.shape[0] * a.shape[1] * b.shape[1])
        return d

    def to_in(bits):              # an output (bf16 here) as the next matmul's input format
        return bits if out == fmt else _bf16(_f32(bits, out))

    t_block = time.perf_counter()
    h = _bf16(_layer_norm(_f32(x, fmt)))
    q, k, v = (to_in(mm(n, h, W)) for n, W in (("Q projection", Wq), ("K projection", Wk), ("V projection", Wv)))
    heads = []
    for i in range(H):
        sl = slice(i * dh, (i + 1) * dh)
        s = _f32(mm("scores Q.K^T", np.ascontiguousarray(q[:, sl]), np.ascontiguousarray(k[:, sl].T)), out)
        s = s / np.float32(np.sqrt(dh))
        p = np.exp(s - s.max(-1, keepdims=True))
        p = _bf16(p / p.sum(-1, keepdims=True))
        heads.append(to_in(mm("attention P.V", p, np.ascontiguousarray(v[:, sl]))))
    attn = to_in(mm("output projection", np.ascontiguousarray(np.concatenate(heads, axis=1)), Wo))
    x1 = _f32(x, fmt) + _f32(attn, fmt)
    u = to_in(mm("MLP up", _bf16(_layer_norm(x1)), W1))
    y = to_in(mm("MLP down", _bf16(_gelu(_f32(u, fmt))), W2))
    x2 = _bf16(x1 + _f32(y, fmt))
    wall = time.perf_counter() - t_block
    print(f"transformer block: {S} tokens, width {D}, {H} heads of {dh}, MLP {F}; {m.id}, dataflow {df.text()} "
          f"({df.describe()}); {args.jobs or native.default_jobs()} threads, load {load():.1f}")
    tot_w = tot_c = tot_m = 0
    for name, (w, c, macs) in times.items():
        tot_w, tot_c, tot_m = tot_w + w, tot_c + c, tot_m + macs
        print(f"  {name:<20} {macs / 1e6:8.0f} M MAC {w:7.3f} s wall {c:7.3f} CPU-s ({macs / w / 1e6:6.0f} M MAC/s)")
    print(f"  {'all matmuls':<20} {tot_m / 1e6:8.0f} M MAC {tot_w:7.3f} s wall {tot_c:7.3f} CPU-s "
          f"({tot_m / tot_w / 1e6:6.0f} M MAC/s); the block {wall:.2f} s wall with compiling and the NumPy checks")
    print(f"  {checked[1]} of {checked[0]} matmuls bit-identical to the NumPy reading on their first "
          f"{args.check_rows} rows")
    if args.out:
        with atomic_open(Path(args.out) / "block_out.npy", "wb", gz=False) as fh:
            np.save(fh, x2.astype(np.uint16), allow_pickle=False)
        print(f"  block output (bf16 bits) -> {Path(args.out) / 'block_out.npy'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hwmini", default=str(HWMINI))
    ap.add_argument("--largest", type=int, default=9, help="recorded outputs to replay, largest first")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--model", default="hopper-bf16-fp32")
    ap.add_argument("--dataflow", default="cutlass3-sm90:out=bf16")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--ffn", type=int, default=4096)
    ap.add_argument("--check-rows", type=int, default=2)
    ap.add_argument("--out", default=None, help="directory for the block's output (bf16 bits, .npy)")
    args = ap.parse_args()
    if args.largest:
        recordings(Path(args.hwmini), args.largest, args.jobs)
    block(args)


if __name__ == "__main__":
    main()
