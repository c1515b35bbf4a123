"""AMD CDNA4 (gfx950) as a hypothesis family: UNVALIDATED catalog models and their rivals
(smtmodel.catalog.cdna4), the scaled TR/GTR-FDPA reading, the spaces that hold them, the deciding
files (generated_tests/cdna4/), the CLI's UNVALIDATED notes, and the gfx950 scaled kernels'
operand and scale packing.

Expected values: the instruction set facts are the CDNA4 ISA guide's and LLVM's (the kernels'
ISA is checked in test_hw_amd.py); the scaled reading is checked against its own unscaled
reading by scale invariance (c and the scale exponents moved by the same power of two move the
result by it: an independent property of Algorithm 8's alignment, no hardware involved); the
files' predictions are re-evaluated with the twin; the scaled kernels' round trip is compared
with the model run chunk by chunk on the cases (no layout involved)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hw_runner.amd.kernels import MFMA_KERNELS
from hw_runner.errors import HarnessError
from hw_runner.runner import run_on_device, run_vectors
from mmaprobe import cli
from smtmodel.catalog import all_models, get_model, model_for_kernel, unvalidated_note
from smtmodel.catalog.spaces import build_space
from smtmodel.sampling import validation_mix
from smtmodel.vectors import VectorFile, read_vectors, write_vectors

ROOT = Path(__file__).resolve().parent.parent / "generated_tests" / "cdna4"
CDNA4 = [m for m in all_models() if m.arch == "cdna4"]
OCP = ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1")


def test_the_family_covers_each_new_mfma_and_nothing_else():
    cat = {m.id: m for m in CDNA4 if m.kind == "catalog"}
    assert {(m.in_fmt, m.scale_fmt) for m in cat.values()} == (
        {("fp16", None), ("bf16", None)} | {(f, None) for f in OCP} | {(f, "e8m0") for f in OCP})
    assert not any(m.in_fmt in ("tf32", "fp8e4m3fnuz", "fp8e5m2fnuz") for m in CDNA4)   # no XF32, OCP FP8
    for m in CDNA4:
        assert not m.validated and m.gfx == "gfx950" and "UNVALIDATED" in m.source and unvalidated_note(m)
        assert all(MFMA_KERNELS[k].supports("gfx950") for k in m.kernels)
        if m.scale_fmt:
            assert (m.scale_fmt, m.scale_block) == ("e8m0", 32)
    for m in cat.values():             # CDNA3's reading, its NVIDIA-like rival beside it
        assert m.op in ("trfdpa", "gtrfdpa") and (m.F, m.F2, m.rho) == (24, 31, "RNE-FP32")
        (r,) = [x for x in CDNA4 if x.rival_of == m.id]
        assert r.op == ("stfdpa" if m.scale_fmt else "tfdpa") and (r.F, r.rho, r.specials) == (25, "RZ-FP32", "ieee")
        assert model_for_kernel(m.kernels[0], "gfx950").id == m.id
    # A and B independent: an override of A's model
    mixed = get_model("cdna4-fp8e4m3-fp32-mx:b_fmt=fp4e2m1")
    assert mixed.mixed and mixed.operand_fmts == ("fp8e4m3", "fp4e2m1") and not mixed.validated


def test_spaces_hold_both_readings():
    for m in CDNA4:
        sp = build_space(m.in_key, m.out_fmt, scale=(m.scale_fmt, m.scale_block) if m.scale_fmt else None)
        i = sp.locate(m)
        assert i is not None, m.id
        fam = "gtr-fdpa" if m.op == "gtrfdpa" else "tr-fdpa" if m.op == "trfdpa" else m.op.replace("fdpa", "-fdpa")
        assert fam in {p.family.name for p in sp.parts}


@pytest.mark.parametrize("mid", ["cdna4-fp8e4m3-fp32-mx", "cdna4-fp4e2m1-fp32-mx", "cdna4-fp6e3m2-fp32-mx"])
def test_scaled_reading_is_the_unscaled_one_moved_by_the_scales(mid):
    m, u = get_model(mid), get_model(mid.removesuffix("-mx"))
    n, k = 400, 32
    a, b, c, _ = validation_mix(m.in_fmt, "fp32", k, n, seed=9)
    c = np.asarray(c, np.uint64)
    ce = (c >> np.uint64(23)) & np.uint64(0xFF)
    keep = (ce > 20) & (ce < 200)                         # normal c, room to move it by 2^j
    a, b, c = a[keep], b[keep], c[keep]
    one = np.full((len(c), 1), 0x7F, np.uint64)
    base = u.evaluate(a, b, c, backend="numpy")
    assert np.array_equal(m.evaluate(a, b, c, one, one, backend="numpy"), base)      # scale 1.0 = unscaled
    for j in (-7, 5):
        moved = c + np.uint64(j << 23) if j > 0 else c - np.uint64((-j) << 23)
        d = m.evaluate(a, b, moved, one + np.uint64(j) if j > 0 else one - np.uint64(-j), one, backend="numpy")
        f = base.astype(np.uint32).view(np.float32).astype(np.float64) * 2.0 ** j
        fin = np.isfinite(f) & (np.abs(f) > 2.0 ** -100) & (np.abs(f) < 2.0 ** 100)
        got = d.astype(np.uint32).view(np.float32).astype(np.float64)
        assert fin.sum() > 50 and np.array_equal(got[fin], f[fin]), mid
    nan = m.evaluate(a[:1], b[:1], c[:1], np.full((1, 1), 0xFF, np.uint64), one[:1])
    assert np.isnan(np.asarray(nan, np.uint32).view(np.float32)[0])


def test_a_deciding_file_for_every_rival_pair():
    readme = (ROOT / "README.md").read_text()
    for r in (m for m in CDNA4 if m.kind == "rival"):
        name = f"{r.rival_of}__vs__{r.id}.jsonl"
        vf = read_vectors(ROOT / name)
        assert vf.header["models"] == [r.rival_of, r.id] and vf.header["unvalidated"] == [r.rival_of, r.id]
        assert f"`{name}`" in readme
    assert "UNVALIDATED" in readme and "mmaprobe run FILE --device rocm" in readme


def _file(tmp_path, scaled: bool) -> Path:
    vf = read_vectors(ROOT / ("cdna4-fp8e4m3-fp32-mx__vs__cdna4-fp8e4m3-fp32-mx-stfdpa.jsonl" if scaled
                              else "cdna4-fp16-fp32__vs__cdna4-fp16-fp32-tfdpa.jsonl"))
    path = tmp_path / "f.jsonl"
    write_vectors(path, VectorFile(dict(vf.header), [dict(c) for c in vf.cases]))
    return path


def test_every_cli_output_that_uses_one_says_unvalidated(tmp_path, capsys):
    f = _file(tmp_path, False)
    assert cli.main(["models", "--arch", "cdna4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all("UNVALIDATED" in line for line in lines)
    out = tmp_path / "e.jsonl"
    assert cli.main(["eval", str(f), "--model", "cdna4-fp16-fp32", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "UNVALIDATED model cdna4-fp16-fp32" in err and "(UNVALIDATED model)" in err
    assert read_vectors(out).header["unvalidated"] == ["cdna4-fp16-fp32", "cdna4-fp16-fp32-tfdpa"]
    obs = tmp_path / "o.jsonl"
    assert cli.main(["run", str(f), "--device", "twin:cdna4-fp16-fp32", "-o", str(obs)]) == 0
    assert "UNVALIDATED model cdna4-fp16-fp32" in capsys.readouterr().out
    assert cli.main(["check", str(obs), "--model", "cdna4-fp16-fp32-tfdpa"]) == 1
    io = capsys.readouterr()
    assert "0/4 match (UNVALIDATED model)" in io.out and "UNVALIDATED" in io.err
    assert cli.main(["verdict", str(obs), "--include-twins"]) == 0
    out_text = capsys.readouterr().out
    assert "survives (UNVALIDATED model)" in out_text and "refuted (UNVALIDATED model)" in out_text
    assert "note: UNVALIDATED model cdna4-fp16-fp32-tfdpa" in out_text
    assert cli.main(["verify", "cdna4-fp16-fp32", "--device", "twin:cdna4-fp16-fp32", "--cases", "50",
                     "-o", str(tmp_path / "v.jsonl")]) == 0
    assert capsys.readouterr().out.count("note: UNVALIDATED model cdna4-fp16-fp32") == 1
    cli.main(["property", "sign-symmetry", "cdna4-fp16-fp32", "--solver", "twin", "--timeout", "1"])
    assert "note: UNVALIDATED model cdna4-fp16-fp32" in capsys.readouterr().out
    np.save(tmp_path / "ga.npy", np.ones((2, 32), np.float16))
    np.save(tmp_path / "gb.npy", np.ones((32, 2), np.float16))
    assert cli.main(["gemm", "--model", "cdna4-fp16-fp32", str(tmp_path / "ga.npy"), str(tmp_path / "gb.npy"),
                     "-o", str(tmp_path / "gd.npy")]) == 0
    assert "note: UNVALIDATED model cdna4-fp16-fp32" in capsys.readouterr().err


def test_scales_missing_or_unexpected_are_one_line_errors(tmp_path, capsys):
    g = _file(tmp_path, True)             # a file with E8M0 scales per 32
    out = tmp_path / "x.jsonl"
    assert cli.main(["eval", str(g), "--model", "cdna4-fp8e4m3-fp32", "-o", str(out)]) == 2
    assert "takes no block scales but" in capsys.readouterr().err and not out.exists()
    lines = g.read_text().splitlines()
    case = json.loads(lines[1])
    del case["a_scale"]
    bad = tmp_path / "noscale.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(case)]) + "\n")
    assert cli.main(["eval", str(bad), "--model", "cdna4-fp8e4m3-fp32-mx", "-o", str(out)]) == 2
    assert "a_scale" in capsys.readouterr().err
    head = json.loads(lines[0])
    for key in ("scale_fmt", "scale_block"):
        head.pop(key)
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join([json.dumps(head)] + [json.dumps({k: v for k, v in json.loads(x).items()
                                                               if k not in ("a_scale", "b_scale")})
                                                   for x in lines[1:]]) + "\n")
    for argv in (["eval", str(plain), "--model", "cdna4-fp8e4m3-fp32-mx", "-o", str(out)],
                 ["run", str(plain), "--device", "twin:cdna4-fp8e4m3-fp32-mx", "-o", str(out)]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "e8m0 scales" in err and ("a_scale" in err or "no block scales" in err)


# ---- the gfx950 scaled kernels, end to end without a GPU -------------------------------------

class ScaledTwin:
    """An MFMA unit computing D[0][0] as ``model`` does, reading A, B, C and the per-lane scales
    back from the kernel's own buffers (row 0 of A, column 0 of B)."""

    def __init__(self, model):
        self.model, self.arch, self.name = model, "gfx950", "twin MFMA"

    def launch(self, spec, a, b, c, sa, sb):
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, m, k)
        B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, k, nn)
        D = fd.unpack(c)[:, 0]
        lanes = np.arange(64)
        for j in range(ch):
            own = lanes[lanes % m == 0]                      # the lanes holding row 0 / column 0
            s_a = sa[:, j, own].astype(np.uint64)           # one scale per 32 elements, in K order
            s_b = sb[:, j, own].astype(np.uint64)
            d = self.model.evaluate(A[:, j, 0, :], B[:, j, :, 0], D[:, 0, 0], s_a, s_b, backend="numpy")
            D[:, 0, 0] = d
        return fd.pack(D[:, None])


@pytest.mark.parametrize("kid", ["mfma_scale_f32_16x16x128_f8f6f4_fp6", "mfma_scale_f32_32x32x64_f8f6f4_fp4"])
def test_scaled_kernel_round_trip_is_bit_exact(kid):
    spec = MFMA_KERNELS[kid]
    model = model_for_kernel(kid, "gfx950")
    k = spec.k + 32                                         # two chunks, the second padded with +0
    a, b, c, _ = validation_mix(spec.in_fmt, "fp32", k, 5, seed=4)
    rng = np.random.default_rng(2)
    sa, sb = (rng.integers(118, 136, (5, k // 32)).astype(np.uint64) for _ in range(2))
    res = run_on_device(ScaledTwin(model), spec, a, b, c, scales=(sa, sb), batch=3)
    d = c.copy()
    for lo in range(0, k, spec.k):                          # chunk by chunk, padding +0 with scale 1.0
        aj, bj = np.zeros((5, spec.k), np.uint64), np.zeros((5, spec.k), np.uint64)
        aj[:, :min(spec.k, k - lo)], bj[:, :min(spec.k, k - lo)] = a[:, lo:lo + spec.k], b[:, lo:lo + spec.k]
        sj = [np.full((5, spec.k // 32), 0x7F, np.uint64) for _ in range(2)]
        nb = min(spec.k, k - lo) // 32
        sj[0][:, :nb], sj[1][:, :nb] = sa[:, lo // 32:lo // 32 + nb], sb[:, lo // 32:lo // 32 + nb]
        d = model.evaluate(aj, bj, d, sj[0], sj[1], backend="numpy")
    assert np.array_equal(res.d, d)


def test_a_scaled_file_needs_a_scaled_kernel(tmp_path):
    f = _file(tmp_path, True)
    with pytest.raises(HarnessError, match="takes no block scales"):
        run_vectors(read_vectors(f), "rocm", kernel="mfma_f32_16x16x128_f8f6f4_fp8", launcher=ScaledTwin(None))
    with pytest.raises(HarnessError, match="need a_scale and b_scale"):
        run_on_device(ScaledTwin(None), MFMA_KERNELS["mfma_scale_f32_16x16x128_f8f6f4_fp8"],
                      *(np.zeros((1, 32), np.uint64),) * 2, np.zeros(1, np.uint64))


@pytest.mark.slow
def test_identify_recovers_a_scaled_cdna4_hypothesis():
    """The scaled CDNA3-like reading is a point of its pair's scaled space, and identify finds it
    from a twin device computing it (about a minute)."""
    from queries.identify import Settings, identify
    from queries.identify.devices import TwinDevice
    dev = TwinDevice("cdna4-fp6e2m3-fp32-mx")
    space = build_space(dev.in_fmt, dev.out_fmt, scale=(dev.scale_fmt, dev.scale_block))
    out = identify(space, dev, Settings(k=32, verify=500, solver_pairs=0, pool_random=256))
    assert out.status == "identified" and space.locate(dev.model) in out.live


def test_scaled_reading_is_one_semantics_in_every_reading():
    """The scaled GTR-FDPA path: compiled twin = NumPy twin, and the z3 term = the twin (the
    UNVALIDATED models are not representatives of the catalog-wide runs)."""
    from test_catalog_smt_twin import check_model
    from test_native import cases
    m = get_model("cdna4-fp4e2m1-fp32-mx")
    a, b, c, sa, sb = cases(m, 32, 600)
    assert np.array_equal(m.evaluate(a, b, c, sa, sb, backend="native", jobs=1),
                          m.evaluate(a, b, c, sa, sb, backend="numpy"))
    check_model(m, 40)
