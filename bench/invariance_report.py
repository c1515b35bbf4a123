"""Batch invariance of torch._scaled_mm (FP8 e4m3 x e4m3 -> bf16, cuBLASLt 12.8.3.14, torch's
1 MiB workspace) for common LLM layer shapes on the H100 PCIe and the RTX 4060, from the dispatch
tables, each change of dataflow settled by the GEMM twin (queries.invariance.batch); printed as
the Markdown table of docs/invariance.md, with the witnesses after it.

Run: python -m bench.invariance_report [--m 1:4096] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

from queries.invariance import batch, parse_m, witness_lines

SHAPES = [
    ("cublaslt-h100pcie-fp8", "Llama-3-8B q/o proj", 4096, 4096),
    ("cublaslt-h100pcie-fp8", "Llama-3-8B k/v proj", 1024, 4096),
    ("cublaslt-h100pcie-fp8", "Llama-3-8B qkv fused", 6144, 4096),
    ("cublaslt-h100pcie-fp8", "Llama-3-8B gate+up fused", 28672, 4096),
    ("cublaslt-h100pcie-fp8", "Llama-3-8B down proj", 4096, 14336),
    ("cublaslt-h100pcie-fp8", "Llama-3.2-1B down proj", 2048, 8192),
    ("cublaslt-h100pcie-fp8", "Qwen2-7B down proj", 3584, 18944),
    ("cublaslt-h100pcie-fp8", "Llama-3-70B down proj", 8192, 28672),
    ("cublaslt-rtx4060-fp8", "Llama-3-8B q/o proj", 4096, 4096),
    ("cublaslt-rtx4060-fp8", "Llama-3-8B k/v proj", 1024, 4096),
    ("cublaslt-rtx4060-fp8", "Llama-3-8B qkv fused", 6144, 4096),
    ("cublaslt-rtx4060-fp8", "Llama-3-70B q/o proj", 8192, 8192),
    ("cublaslt-rtx4060-fp8", "Llama-3-70B k/v proj", 1024, 8192),
    ("cublaslt-rtx4060-fp8", "Evo 2 7B qkv", 12288, 4096),
]
GPU = {"cublaslt-h100pcie-fp8": "H100 PCIe", "cublaslt-rtx4060-fp8": "RTX 4060"}


def _runs(r) -> str:
    return "; ".join(f"{lo}..{hi}: {'S=1' if d.splitk == 1 else f'S={d.splitk} {d.scheme}'}" for lo, hi, d in r.segments)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--m", default="1:4096")
    ap.add_argument("--json")
    args = ap.parse_args()
    Ms = parse_m(args.m)
    rows, notes, dump = [], [], []
    t0 = time.process_time()
    for table, layer, N, K in SHAPES:
        for fast in (True, False):
            r = batch(table, N, K, Ms, fast_=fast)
            dump.append(r.to_json())
            acc = "fast" if fast else "slow"
            if not r.groups:
                verdict = "invariant (one dataflow: identical-dataflow proof)"
            else:
                parts = []
                for g in r.groups:
                    where = ", ".join(f"{a}->{b}" for a, b in g.where)
                    parts.append(f"{g.verdict.status} at M {where}")
                    if g.verdict.status == "differ":
                        notes.append(f"- {GPU[table]} {layer} ({N}x{K}, {acc}), "
                                     f"{g.left.split_text()} vs {g.right.split_text()}: "
                                     + "; ".join(witness_lines(g.verdict, "fp8e4m3", "fp8e4m3", "bf16")))
                verdict = "; ".join(parts)
            rows.append(f"| {GPU[table]} | {layer} | {N} x {K} | {acc} | {len(r.covered)} | {_runs(r)} | "
                        f"{r.kernel_changes} | {verdict} |")
    print("| GPU | layer | N x K | accumulation | M in the table (of "
          f"{Ms[1] - Ms[0] + 1}) | dataflow by M | kernel changes, same dataflow | row bits |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nWitnesses (one row of A and one column of B; every other term zero; scales 1):\n")
    print("\n".join(notes))
    print(f"\n(CPU time {time.process_time() - t0:.1f} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dump, fh, indent=1)


if __name__ == "__main__":
    main()
