"""Time of the emulated forward of docs/torch.md's Llama-style decoder (mmaprobe.torch.example,
bf16, seeded weights) against its width: per token and per layer, emulated as one GPU, beside the
same forward run natively in bf16 on the CPU.

Run: python bench/torch_width.py [--widths 64 128 256 512] [--layers 2] [--tokens 32] [--gpu h100]
[--impl torch|transformers] [--jobs N] [--reps R] [--json OUT.json] [--plot OUT.png]. Needs the
``torch`` extra (and ``transformers`` for ``--impl transformers``); ``--plot`` needs matplotlib.
Each figure is the best of R warm runs (a first untimed run compiles the kernels); the 1-minute
load average before and after is printed: the machine may be shared. Per layer: the emulated
calls' seconds inside ``model.layers.i`` (the GEMMs only), averaged over the layers; per token:
the whole forward's wall seconds over the tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128, 256, 512])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--impl", default="torch", choices=("torch", "transformers"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--plot")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch
    from mmaprobe.torch import emulate
    from mmaprobe.torch.example import build, mlp_width

    torch.set_num_threads(1)      # torch's own ops on one thread (see bench/torch_emulate.py); the twin on --jobs
    out = {"gpu": a.gpu, "impl": a.impl, "layers": a.layers, "tokens": a.tokens, "jobs": a.jobs,
           "load_before": os.getloadavg()[0], "rows": []}
    print(f"{'width':>5} {'mlp':>5} {'G MAC':>7} {'forward s':>10} {'ms/token':>9} {'ms/layer':>9} "
          f"{'native ms':>10} {'ratio':>7} {'M MAC/s':>8}")
    for w in a.widths:
        model, ids = build(width=w, layers=a.layers, tokens=a.tokens, impl=a.impl)
        best, rep = float("inf"), None
        for i in range(a.reps + 1):
            t0 = time.perf_counter()
            with torch.no_grad(), emulate(gpu=a.gpu, module=model, jobs=a.jobs, warn=False) as mode:
                model(ids)
            dt = time.perf_counter() - t0
            if i and dt < best:
                best, rep = dt, mode.report()
        nat = float("inf")
        for _ in range(a.reps):
            t0 = time.perf_counter()
            with torch.no_grad():
                model(ids)
            nat = min(nat, time.perf_counter() - t0)
        per_layer = [sum(c.seconds for c in rep.emulated if c.scope.startswith(f"model.layers.{i}.")
                         or c.scope == f"model.layers.{i}") for i in range(a.layers)]
        macs = sum(c.batch * c.M * c.N * c.K for c in rep.emulated)
        row = {"width": w, "mlp": mlp_width(w), "macs": macs, "forward_s": best, "per_token_s": best / a.tokens,
               "per_layer_s": sum(per_layer) / a.layers, "gemm_s": sum(c.seconds for c in rep.emulated),
               "calls": len(rep.emulated), "native_bf16_s": nat, "ratio": best / nat}
        out["rows"].append(row)
        print(f"{w:5d} {mlp_width(w):5d} {macs / 1e9:7.3f} {best:10.3f} {1e3 * best / a.tokens:9.2f} "
              f"{1e3 * row['per_layer_s']:9.1f} {1e3 * nat:10.2f} {best / nat:7.0f} {macs / best / 1e6:8.1f}")
    out["load_after"] = os.getloadavg()[0]
    print(f"{a.gpu}, {a.impl} decoder, {a.layers} layers, {a.tokens} tokens, {a.jobs} jobs; "
          f"load average {out['load_before']:.1f} -> {out['load_after']:.1f}")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ws = [r["width"] for r in out["rows"]]
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        ax.plot(ws, [1e3 * r["per_token_s"] for r in out["rows"]], "o-", label="emulated, per token")
        ax.plot(ws, [1e3 * r["per_layer_s"] / a.tokens for r in out["rows"]], "s-", label="emulated GEMMs, per layer and token")
        ax.plot(ws, [1e3 * r["native_bf16_s"] / a.tokens for r in out["rows"]], "^-", label="native bf16, per token")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("model width")
        ax.set_ylabel("ms")
        ax.set_title(f"emulate(gpu={a.gpu!r}): {a.layers}-layer decoder, {a.tokens} tokens, {a.jobs} cores", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
        print(f"wrote {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
