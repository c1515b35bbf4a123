"""The mmaemu-hwmini/1 reader (smtmodel.mmaemu) on the RTX 4060 recordings in ../shared/hwdata.

Expected values: the folder's own index (counts, sha256s) and the README's description of the two
kinds of recording; the bits themselves are the GPU's outputs.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.mmaemu import HwminiError, is_hwmini, open_hwmini

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "hwdata", "rtx4060_mmaemu")
pytestmark = pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/hwdata/rtx4060_mmaemu missing")


@pytest.fixture(scope="module")
def hw():
    return open_hwmini(ROOT)


def test_mma_recordings_flatten_to_the_issue_counts(hw):
    recs = hw.mma()
    assert len(recs) == 116
    by_pair = {}
    for r in recs:
        assert r.a.shape == r.b.shape == (len(r), r.K) and r.c.shape == r.expect.shape == (len(r),)
        by_pair[(r.fmt_a, r.fmt_b)] = by_pair.get((r.fmt_a, r.fmt_b), 0) + len(r)
    # 616,077 outputs, 315,019 of them with a and b in the same format
    assert sum(by_pair.values()) == 616077
    assert by_pair[("fp8e4m3", "fp8e4m3")] + by_pair[("fp8e5m2", "fp8e5m2")] == 315019
    assert {r.layout for r in recs} == {"tile", "vector"}


def test_tile_rows_pair_a_row_i_with_b_row_j(hw):
    """d[t, i, j] pairs a[t, i, :] with b[t, j, :] and c[t, i, j] (row-major (t, i, j))."""
    r = next(r for r in hw.mma() if r.layout == "tile")
    case = next(c for c in hw.index["cases"] if c["id"] == r.id)
    a, b, c = (hw.array(case["inputs"][k]) for k in "abc")
    T, M, K = a.shape
    N = b.shape[1]
    t, i, j = T - 1, M - 1, 1
    row = (t * M + i) * N + j
    assert (r.a[row] == a[t, i]).all() and (r.b[row] == b[t, j]).all() and r.c[row] == c[t, i, j]


def test_gemm_outputs_plain_data(hw):
    outs = hw.gemm_outputs()
    assert len(outs) == 4270          # README: "about 4,300 output values carry numerics"
    for o in outs:
        assert o.error is None and o.expect is not None
        assert o.a.shape[1] == o.b.shape[1]
        assert o.fmt_a in ("fp8e4m3", "fp8e5m2") and o.fmt_b in ("fp8e4m3", "fp8e5m2")
        assert o.scale_a_bits is not None and o.scale_b_bits is not None
        if o.select == "grid":
            assert o.expect.shape == (o.a.shape[0], o.b.shape[0])
    rejected = [o for o in hw.gemm_outputs(with_errors=True) if o.error]
    assert rejected and all(o.expect is None for o in rejected)


def test_is_hwmini(tmp_path):
    assert is_hwmini(ROOT) and is_hwmini(os.path.join(ROOT, "index.json")) and not is_hwmini(tmp_path)


def _copy(tmp_path):
    dst = tmp_path / "hw"
    shutil.copytree(ROOT, dst)
    for f in dst.iterdir():
        os.chmod(f, 0o644)
    return dst


def test_corrupted_shard_fails_its_sha256(tmp_path):
    dst = _copy(tmp_path)
    data = bytearray((dst / "c6.npz").read_bytes())
    data[len(data) // 2] ^= 0x01
    (dst / "c6.npz").write_bytes(bytes(data))
    with pytest.raises(HwminiError, match="c6.npz: sha256"):
        open_hwmini(dst)


def test_array_that_does_not_match_its_index_entry_fails(tmp_path):
    """A shard whose bytes match index.json but whose expected array differs from the hash the
    index gives it (here: the index names another array of the same shape) is refused."""
    dst = _copy(tmp_path)
    idx = json.loads((dst / "index.json").read_text())
    mma = [c for c in idx["cases"] if c["kind"] == "mma" and c["params"]["layout"] == "tile"]
    mma[0]["expect"]["sha256"] = "0" * 64
    (dst / "index.json").write_text(json.dumps(idx))
    with pytest.raises(HwminiError, match="does not match the index"):
        open_hwmini(dst).mma()


def test_not_a_hwmini_folder(tmp_path):
    with pytest.raises(HwminiError, match="no index.json"):
        open_hwmini(tmp_path)
    (tmp_path / "index.json").write_text('{"format": "other/1"}')
    with pytest.raises(HwminiError, match="this reader knows"):
        open_hwmini(tmp_path)


# ---- every recorded mma output, bit for bit ---------------------------------------------------

def _ada_model(r):
    """The Ada FP8 catalog model of a recording's operand formats, zeros left out of the
    alignment (``zero_align=ignore``: what the RTX 4060 shows)."""
    pair = r.fmt_a if r.fmt_a == r.fmt_b else f"{r.fmt_a}x{r.fmt_b}"
    return get_model(f"ada-{pair}-fp32:zero_align=ignore")


def test_every_recorded_mma_output_bit_exact(hw):
    """616,077 RTX 4060 outputs (the GPU's own bits) against the Ada FP8 models, the compiled twin
    where a batch is large (Model.evaluate backend auto)."""
    counts = {}
    for r in hw.mma():
        m = _ada_model(r)
        d = m.evaluate(r.a, r.b, r.c)
        bad = np.flatnonzero(d != r.expect)
        assert len(bad) == 0, (f"{r.id} with {m.id}: {len(bad)}/{len(r)} differ, first #{bad[0]}: "
                               f"model {int(d[bad[0]]):#x} GPU {int(r.expect[bad[0]]):#x}")
        counts[m.id] = counts.get(m.id, 0) + len(r)
    assert sum(counts.values()) == 616077 and len(counts) == 4


def test_check_command_reads_the_folder(capsys):
    from mmaprobe.cli import main
    rc = main(["check", ROOT, "--model", "ada-fp8e5m2xfp8e4m3-fp32:zero_align=ignore"])
    out = capsys.readouterr().out
    assert rc == 0 and "150786/150786 match" in out


def test_check_command_corrupted_copy_one_line_exit_2(tmp_path, capsys):
    from mmaprobe.cli import main
    dst = _copy(tmp_path)
    data = bytearray((dst / "c2.npz").read_bytes())
    data[100] ^= 0xFF
    (dst / "c2.npz").write_bytes(bytes(data))
    rc = main(["check", str(dst), "--model", "ada-fp8e4m3-fp32"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("mmaprobe: error: ") and "sha256" in err[0]


def test_recording_as_vector_file(hw, tmp_path, capsys):
    """A mixed recording converted to a vector file (a_fmt/b_fmt header, observed = the GPU's
    bits) passes `mmaprobe check` with its model, like the folder itself."""
    from mmaprobe.cli import main
    from smtmodel.vectors import read_vectors, write_vectors
    r = next(r for r in hw.mma() if r.fmt_a != r.fmt_b and r.layout == "vector")
    p = tmp_path / "rec.jsonl.gz"
    write_vectors(p, r.vector_file())
    vf = read_vectors(p)
    assert (vf.a_fmt.name, vf.b_fmt.name, vf.k, len(vf.cases)) == (r.fmt_a, r.fmt_b, r.K, len(r))
    assert main(["check", str(p), "--model", _ada_model(r).id]) == 0
    assert f"{len(r)}/{len(r)} match" in capsys.readouterr().out
