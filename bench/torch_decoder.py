"""A 1B-class decoder's emulated forward: the plain-torch Llama-style ``Decoder`` of
docs/torch.md at Llama 3.2 1B's shape (width 2048, 16 layers, 32 heads with 8 key/value heads,
MLP 8192, vocabulary 128,256; seeded random weights, bf16), one prompt of 128 tokens, emulated as
one GPU, beside the same forward run natively in bf16 on the CPU.

Run: python bench/torch_decoder.py [--width 2048] [--layers 16] [--heads 32] [--kv-heads 8]
[--inner 8192] [--vocab 128256] [--tokens 128] [--gpu h100] [--jobs N] [--reps 1] [--json OUT].
Needs the ``torch`` extra and about 8 GB of memory (the weights are made in fp32, then kept in
bf16). Prints the parameters, the GEMM work (G MAC, from the mode's report), the emulated
forward's wall and CPU seconds (best of ``--reps`` after one untimed forward that compiles the
kernels), per token, the twin's G MAC per wall second, the native bf16 forward (one thread) and
the 1-minute load average before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--inner", type=int, default=8192)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch
    from mmaprobe.torch import emulate
    from mmaprobe.torch.example import Decoder

    torch.set_num_threads(1)      # torch's own ops on one thread; the twin on --jobs
    load0 = os.getloadavg()[0]
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = Decoder(a.vocab, a.width, a.layers, a.heads, a.kv_heads, a.inner).to(torch.bfloat16).eval()
    ids = torch.randint(0, a.vocab, (1, a.tokens), generator=torch.Generator().manual_seed(1))
    params = sum(p.numel() for p in model.parameters())
    print(f"decoder: width {a.width}, {a.layers} layers, {a.heads} heads ({a.kv_heads} kv), MLP {a.inner}, "
          f"vocabulary {a.vocab}: {params / 1e9:.2f} G parameters (built in {time.perf_counter() - t0:.0f} s); "
          f"{a.tokens} tokens; emulated as {a.gpu} on {a.jobs} jobs")
    runs = []
    for i in range(a.reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad(), emulate(gpu=a.gpu, module=model, jobs=a.jobs, warn=False) as mode:
            model(ids)
        runs.append((time.perf_counter() - t0, time.process_time() - c0, mode.report()))
        print(f"  {'first (compiles)' if i == 0 else f'run {i}'}: {runs[-1][0]:.1f} s wall, {runs[-1][1]:.1f} s CPU",
              flush=True)
    wall, cpu, rep = min(runs[1:], key=lambda r: r[0]) if a.reps else runs[0]
    macs = sum(c.batch * c.M * c.N * c.K for c in rep.emulated)
    t0 = time.perf_counter()
    with torch.no_grad():
        model(ids)
    native = time.perf_counter() - t0
    out = {"width": a.width, "layers": a.layers, "heads": a.heads, "kv_heads": a.kv_heads, "inner": a.inner,
           "vocab": a.vocab, "tokens": a.tokens, "gpu": a.gpu, "jobs": a.jobs, "params": params, "macs": macs,
           "calls": len(rep.emulated), "native_calls": sum(rep.native.values()), "forward_s": wall, "forward_cpu_s": cpu,
           "per_token_s": wall / a.tokens, "gmac_per_s": macs / wall / 1e9, "native_bf16_s": native,
           "load_before": load0, "load_after": os.getloadavg()[0]}
    print(f"GEMM work {macs / 1e9:.1f} G MAC in {len(rep.emulated)} emulated calls ({sum(rep.native.values())} native); "
          f"forward {wall:.1f} s wall, {cpu:.1f} s CPU, {1e3 * wall / a.tokens:.0f} ms per token, "
          f"{out['gmac_per_s']:.2f} G MAC/s; native bf16 forward (1 thread) {native:.1f} s; "
          f"load average {out['load_before']:.1f} -> {out['load_after']:.1f}")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
