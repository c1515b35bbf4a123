"""Disputes: where public sources disagree on a model's parameters, as data.

Each :class:`Dispute` names a GPU and an instruction, and its sides: model ids (catalog models,
rivals or overrides), each with the sources that back it, in the order of the parameter in
dispute. ``generated_tests/disputes/<name>/`` holds one deciding vector file per pair of
adjacent sides (:meth:`Dispute.pairs`): on every case of it the two sides' models give different
bits, so running it on the GPU (``mmaprobe run FILE --device cuda -o obs.jsonl && mmaprobe verdict
obs.jsonl``) refutes at least one of them. docs/disputes.md lists the disputes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rivals import DEEPGEMM, HUWEIM

MMASIM_BLOCK = ("seed 000 Table 5; MMA-Sim 2.1.1 nv_ptx/sim.py:89-104, 180-195 (k = 64 block-scaled MMA: "
                "GST-FDPA F = 35; k = 32: ST-FDPA F = 25)")


@dataclass(frozen=True)
class Side:
    model: str          # a model id (or ID:overrides)
    sources: str


@dataclass(frozen=True)
class Dispute:
    name: str           # the folder under generated_tests/disputes/
    gpu: str
    instruction: str
    question: str
    sides: tuple

    def pairs(self) -> list[tuple[Side, Side]]:
        """Adjacent sides: the pairs that have a deciding file."""
        return list(zip(self.sides, self.sides[1:]))

    def file_name(self, a: Side, b: Side) -> str:
        return f"{a.model}__vs__{b.model}.jsonl".replace(":", "_").replace(",", "_").replace("=", "")


DISPUTES: tuple[Dispute, ...] = (
    Dispute("rtx50-nvfp4", "RTX 50 series (RTX Blackwell, sm_120a; RTX 5090)",
            "mma.sync.aligned.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X (UE4M3 scales per 16)",
            "fraction bits F kept by the k = 64 NVFP4 accumulator: 35 or 25?",
            (Side("rtx-blackwell-fp4e2m1-fp32-nvfp4", MMASIM_BLOCK),
             Side("rtx-blackwell-fp4e2m1-fp32-nvfp4-f25", HUWEIM))),
    Dispute("rtx50-mxf4nvf4-2x", "RTX 50 series (RTX Blackwell, sm_120a; RTX 5090)",
            "mma.sync.aligned.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::2X (UE8M0 scales per 32): the form "
            "huweim/emulation_sys probed",
            "fraction bits F kept by the k = 64 MXFP4 accumulator: 35 or 25?",
            (Side("rtx-blackwell-fp4e2m1-fp32-mxgst", MMASIM_BLOCK),
             Side("rtx-blackwell-fp4e2m1-fp32-mxgst-f25", HUWEIM))),
    Dispute("b200-mxf4", "B200 (Blackwell, sm_100a)",
            "tcgen05.mma.cta_group::1.kind::mxf4.block_scale (UE8M0 scales per 32)",
            "fraction bits F kept by the k = 64 MXFP4 accumulator: 34, 35, 36 or 37?",
            (Side("blackwell-fp4e2m1-fp32-mxgst-f34", DEEPGEMM),
             Side("blackwell-fp4e2m1-fp32-mxgst", MMASIM_BLOCK + "; " + DEEPGEMM),
             Side("blackwell-fp4e2m1-fp32-mxgst-f36", DEEPGEMM),
             Side("blackwell-fp4e2m1-fp32-mxgst-f37", DEEPGEMM))),
)
"""The disputes, each with its deciding files in ``generated_tests/disputes/<name>/``."""
