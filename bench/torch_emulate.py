"""Cost of ``mmaprobe.torch.emulate``: one emulated call (within one mode, as a model's forward
makes them) against the same ``gemm_bits`` call (the mode's overhead), the GEMM twin's rate at
``--big``³ beside, a batch of small GEMMs (``bmm``) as one call, and the emulated forward of
docs/torch.md's worked example against the same forward run natively in fp32 on the CPU.

Run: python bench/torch_emulate.py [--sizes 16 256] [--big 1024] [--jobs N] [--reps R] [--json OUT.json].
Needs the ``torch`` extra. Every figure is the best of R warm runs (the first, untimed runs
compile the kernels), as wall seconds and CPU seconds of this process (all threads), with the
1-minute load average before and after: the machine may be shared. bf16 on ``gpu="h100"`` (the
dispatch rule, or the default dataflow where it does not answer; both runs use the same one).
torch's own ops run on one thread, the twin on ``--jobs``. MAC/s per core = M·N·K / wall
seconds / jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings


def timed(f, reps):
    best_w = best_c = float("inf")
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        f()
        best_w, best_c = min(best_w, time.perf_counter() - w), min(best_c, time.process_time() - c)
    return best_w, best_c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 256])
    ap.add_argument("--big", type=int, default=1024, help="the GEMM twin's reference size (0: skip)")
    ap.add_argument("--calls", type=int, default=200, help="calls per timing of a 16^3-sized call")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch
    from mmaprobe.torch import emulate, raw_bits
    from smtmodel.catalog import get_model
    from smtmodel.gemm import gemm_bits, resolve_dataflow

    torch.set_num_threads(1)       # torch's own ops: one thread (its OpenMP pool on a shared machine
                                   # spins: 2 threads under load make the native forward 300x slower);
                                   # the twin uses --jobs threads
    out = {"jobs": a.jobs, "load_before": os.getloadavg()[0], "calls": [], "forward": None}
    g = torch.Generator().manual_seed(0)
    for n in a.sizes:
        A = torch.randn(n, n, generator=g).to(torch.bfloat16)
        B = torch.randn(n, n, generator=g).to(torch.bfloat16)
        mode = emulate(gpu="h100", jobs=a.jobs)
        with mode:
            A @ B
        rec = mode.report().emulated[0]
        m, df = get_model(rec.model), resolve_dataflow(rec.dataflow)
        ab, bb = raw_bits(A), raw_bits(B)
        calls = max(1, a.calls * 16 ** 3 // n ** 3)        # per timing: enough calls to time a small one

        def emulated():
            for _ in range(calls):
                A @ B

        def direct():
            for _ in range(calls):
                gemm_bits(m, ab, bb, None, dataflow=df, jobs=a.jobs)
        with mode:
            emulated()                                      # warm: the mode's choices, compiled steps
            we, ce = timed(emulated, a.reps)
        direct()
        wd, cd = timed(direct, a.reps)
        we, ce, wd, cd = we / calls, ce / calls, wd / calls, cd / calls
        row = {"n": n, "dataflow": rec.dataflow, "calls": calls, "emulated_s": we, "emulated_cpu_s": ce,
               "gemm_bits_s": wd, "gemm_bits_cpu_s": cd, "overhead_ms": 1e3 * (we - wd),
               "mac_per_s_per_core": n ** 3 / we / a.jobs, "mac_per_cpu_s": n ** 3 / ce, "load": os.getloadavg()[0]}
        out["calls"].append(row)
        print(f"{n}^3 bf16 {rec.dataflow}: emulated {1e3 * we:.3f} ms a call (CPU {1e3 * ce:.3f}), gemm_bits "
              f"{1e3 * wd:.3f} ms (CPU {1e3 * cd:.3f}): overhead {1e3 * (we - wd):+.3f} ms wall, "
              f"{1e3 * (ce - cd):+.3f} ms CPU; {row['mac_per_s_per_core'] / 1e9:.3f} G MAC/s/core, "
              f"{row['mac_per_cpu_s'] / 1e9:.3f} G MAC per CPU second "
              f"(mean of {calls} calls; load {row['load']:.1f})")

    # a batch of small GEMMs: one bmm call, against the same GEMMs one call each
    nb, n = 64, 16
    A = torch.randn(nb, n, n, generator=g).to(torch.bfloat16)
    B = torch.randn(nb, n, n, generator=g).to(torch.bfloat16)
    mode = emulate(gpu="h100", jobs=a.jobs)

    def batched():
        torch.bmm(A, B)

    def looped():
        for i in range(nb):
            A[i] @ B[i]
    with mode:
        batched(), looped()
        wb, cb = timed(batched, a.reps)
        wl, cl = timed(looped, a.reps)
    out["bmm"] = {"batch": nb, "n": n, "emulated_s": wb, "emulated_cpu_s": cb, "looped_s": wl, "looped_cpu_s": cl,
                  "load": os.getloadavg()[0]}
    print(f"bmm of {nb} x {n}^3 bf16: one call {1e3 * wb:.2f} ms (CPU {1e3 * cb:.2f}) = {1e3 * wb / nb:.3f} ms a GEMM; "
          f"{nb} calls {1e3 * wl:.2f} ms (CPU {1e3 * cl:.2f}) (load {os.getloadavg()[0]:.1f})")

    if a.big:
        n = a.big
        m, df, _ = emulate(gpu="h100", warn=False)._choice("matmul", n, n, n, "bf16", "bf16", False)  # as emulate picks
        ab, bb = (raw_bits(torch.randn(n, n, generator=g).to(torch.bfloat16)) for _ in range(2))
        gemm_bits(m, ab[:64, :64], bb[:64, :64], None, dataflow=df, jobs=a.jobs)
        wg, cg = timed(lambda: gemm_bits(m, ab, bb, None, dataflow=df, jobs=a.jobs), 1)
        out["big"] = {"n": n, "dataflow": df.text(), "gemm_bits_s": wg, "gemm_bits_cpu_s": cg,
                      "mac_per_s_per_core": n ** 3 / wg / a.jobs, "mac_per_cpu_s": n ** 3 / cg,
                      "load": os.getloadavg()[0]}
        print(f"GEMM twin {n}^3 bf16 {df.text()}: {wg:.2f} s (CPU {cg:.2f}); "
              f"{n ** 3 / wg / a.jobs / 1e9:.3f} G MAC/s/core, {n ** 3 / cg / 1e9:.3f} G MAC per CPU second "
              f"(load {os.getloadavg()[0]:.1f})")
        big = out["big"]
        for row in out["calls"]:
            print(f"  {row['n']}^3 emulated: {row['mac_per_s_per_core'] / big['mac_per_s_per_core']:.0%} of the twin's "
                  f"{n}^3 rate per wall second, {row['mac_per_cpu_s'] / big['mac_per_cpu_s']:.0%} per CPU second")

    # docs/torch.md's worked example
    from torch import nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, d=64, heads=4):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
            at = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(at.transpose(1, 2).reshape(B, T, D))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).to(torch.bfloat16).eval()
    x = torch.randn(1, 32, 64).to(torch.bfloat16)
    m32, x32 = nn.Sequential(Block(), Block()).eval(), x.float()
    m32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})

    def fwd():
        with torch.no_grad(), emulate(gpu="h100", jobs=a.jobs):
            model(x)

    def native():
        with torch.no_grad():
            m32(x32)
    fwd()
    wf, cf = timed(fwd, a.reps)
    wn, cn = timed(native, a.reps)
    macs = 2 * 32 * 64 * (3 * 64 + 64 + 8 * 64) + 2 * 2 * 4 * 32 * 32 * 16
    out["forward"] = {"emulated_s": wf, "emulated_cpu_s": cf, "native_fp32_s": wn, "native_fp32_cpu_s": cn,
                      "ratio": wf / wn, "ratio_cpu": cf / cn, "macs": macs, "per_token_s": wf / 32}
    out["load_after"] = os.getloadavg()[0]
    print(f"worked example (2 blocks, d=64, 32 tokens, {macs / 1e6:.2f} M MAC): emulated {wf:.3f} s (CPU {cf:.3f}), "
          f"native fp32 {1e3 * wn:.2f} ms (CPU {1e3 * cn:.2f}): {wf / wn:.0f}x wall, {cf / cn:.0f}x CPU; "
          f"{1e3 * wf / 32:.1f} ms per token")
    print(f"load average {out['load_before']:.1f} -> {out['load_after']:.1f}, {a.jobs} jobs")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
