"""Real cuBLASLt GEMMs: the RTX 4060 ``torch._scaled_mm`` recordings (../shared/hwdata/
rtx4060_mmaemu, mmaemu-hwmini/1) reproduced bit for bit by the Ada FP8 models and the Ada
cuBLASLt dataflow profiles, each call's fast/slow accumulation, split-K (S, combine) and output
format read from its recording. Expected values: the hardware's. The default run replays the
first recorded output of every kind (fast/slow accumulation x split x output format x mixed
operands: 74 kinds); ``-m slow`` all 4,270."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from queries.cublaslt import call_dataflow, replay
from smtmodel.mmaemu import open_hwmini

ROOT = Path(__file__).resolve().parents[1] / ".." / "shared" / "hwdata" / "rtx4060_mmaemu"


@pytest.fixture(scope="module")
def outputs():
    if not (ROOT / "index.json").is_file():
        pytest.skip("no ../shared/hwdata/rtx4060_mmaemu")
    return open_hwmini(ROOT).gemm_outputs()


def _replay_all(outs):
    cache, bad = {}, []
    for o in outs:
        if len(cache) > 4000:
            cache.clear()
        if not np.array_equal(replay(o, cache=cache), o.expect):
            bad.append(f"{o.id} ({call_dataflow(o).text()})")
    return bad


def _kind(o):
    return o.fast, o.splitk[1] if o.splitk else None, o.out_fmt, o.fmt_a == o.fmt_b


def test_one_recorded_output_of_every_kind_is_bit_exact(outputs):
    first = {}
    for o in outputs:
        first.setdefault(_kind(o), o)
    assert len(first) == len({_kind(o) for o in outputs}) > 70
    assert _replay_all(list(first.values())) == []


@pytest.mark.slow
def test_all_recorded_outputs_are_bit_exact(outputs):
    assert len(outputs) == 4270
    assert _replay_all(outputs) == []
