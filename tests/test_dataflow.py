"""smtmodel.dataflow: the text/JSON forms, every named profile read three ways (NumPy twin,
compiled twin, SMT terms evaluated by z3 on constants: the same bits), the epilogue forms against
an exact computation with Fractions, and bad input."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import z3

from smtmodel.bv.z3_backend import Z3Backend
from smtmodel.catalog import get_model
from smtmodel.dataflow import PROFILES, Dataflow, DataflowError, element, parse_dataflow
from smtmodel.formats import bits_to_numpy
from smtmodel.gemm import epilogue_format, gemm, gemm_bits, output_format, to_bits
from smtmodel.model import ModelError
from smtmodel.sampling import round_to

# (model, K) per profile: K spans several k-tiles (and a ragged last tile) of the profile
FP8_ADA = ("ada-fp8e4m3-fp32", 208)
SETUP = {"cutlass2": ("hopper-fp16-fp32", 45), "cutlass3-sm90": ("hopper-fp16-fp32", 45),
         "cutlass-splitk-serial": ("hopper-fp16-fp32", 45), "tensile": ("hopper-fp16-fp32", 45),
         "cuda-sample-tensorcoregemm": ("volta-fp16-fp32", 20), "cuda-sample-simple-wmma": ("volta-fp16-fp32", 20),
         "instruction": ("hopper-fp16-fp32", 45), "deepgemm": ("hopper-fp8e4m3-fp32", 384),
         "cublaslt-hopper-fp8-fast": ("hopper-fp8e4m3-fp32", 304), "cublaslt-hopper-fp8-slow": ("hopper-fp8e4m3-fp32", 304)}


def mats(m, M, N, K, seed):
    rng = np.random.default_rng(seed)
    a = round_to(rng.standard_normal((M, K)), m.in_fmt)
    b = round_to(rng.standard_normal((K, N)), m.in_fmt)
    c = round_to(rng.standard_normal((M, N)), m.c_fmt)
    return a, b, c


def test_every_profile_has_a_setup_and_a_citation():
    for name, p in PROFILES.items():
        assert p.source, name
        assert name in SETUP or name.startswith("cublaslt-ada"), name
    assert all(parse_dataflow(v) for v in VARIANTS)


@pytest.mark.parametrize("name", list(PROFILES))
def test_text_and_json_forms_round_trip(name):
    p = PROFILES[name]
    assert parse_dataflow(p.text()) == p
    assert Dataflow.from_json(json.dumps(p.to_json())) == p
    v = parse_dataflow(f"{name}:S=3,combine=pairwise,assign=interleaved")
    assert v.slices == 3 and v.combine == "pairwise" and parse_dataflow(v.text()) == v


def _smt_element(m, df, a, b, c, i, j, al, be, E, block_scale_bits=None):
    B = Z3Backend()
    wi, wc, _ = m.widths
    av = [B.const(int(x), wi) for x in a[i]]
    bv = [B.const(int(x), wi) for x in b[:, j]]
    cv = B.const(int(c[i, j]), wc)
    bs = None
    if block_scale_bits is not None:
        def bs(t):
            return B.const(int(block_scale_bits[t][i, j]), 32)
    wE = 32 if E == "fp32" else 64
    d = element(m, df, av, bv, cv, alpha_bits=al, beta_bits=be, beta_zero=(be & ~(1 << (wE - 1))) == 0,
                block_scale=bs)
    return z3.simplify(d.v).as_long()


VARIANTS = {"cutlass2:S=3,bounds=1/4,tile=8": ("hopper-fp16-fp32", 45),              # stream-K style slices
            "cutlass2:S=2,combine=workspace,out=bf16": ("hopper-fp16-fp32", 45),
            "cutlass2:S=3,assign=interleaved,combine=serial0,restart=1,tile=8": ("hopper-fp16-fp32", 45),
            "cuda-sample-tensorcoregemm:c_scale=beta/alpha": ("volta-fp16-fp32", 20),
            "cutlass2:epi_fmt=fp64,out_via=fp32,out=fp16": ("hopper-fp16-fp32", 45),
            "cublaslt-ada-fp8-slow:S=5,combine=pairwise,out=fp8e5m2,saturate=no": FP8_ADA}
SETUP.update(VARIANTS)


# The cuBLASLt FP8 profiles differ in their flags only (fast/slow accumulation, split-K): the
# default run reads the Hopper fast one, the Ada slow split-K one and a slow variant; the other
# three (each a K = 208-product SMT reading over the composed chains) run with -m slow.
SAME_COMPOSITION = {"cublaslt-ada-fp8-fast", "cublaslt-ada-fp8-slow", "cublaslt-ada-fp8-fast-splitk",
                    "cublaslt-hopper-fp8-slow"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SAME_COMPOSITION else [])
                                  for n in list(PROFILES) + list(VARIANTS)])
def test_profile_numpy_compiled_and_smt_agree(name, monkeypatch):
    """Expected: the NumPy twin (the reference reading); the compiled twin and the SMT reading of
    the same composition must give identical bits. The compiled run compiles the elementwise
    steps too (their size threshold set to 0)."""
    import smtmodel.gemm as G
    monkeypatch.setattr(G, "_EW_NATIVE_MIN", 0)
    mid, K = SETUP.get(name, FP8_ADA)
    m = get_model(mid)
    df = parse_dataflow(name)
    M, N = 3, 5
    a, b, c = mats(m, M, N, K, seed=len(name))
    a[0, 3] = np.uint64(0)                                     # a zero product
    E = epilogue_format(m, df)
    al = int(to_bits(np.array(0.5 if df.c_entry == "epilogue" else 2.0), E))
    be = int(to_bits(np.array(-1.5), E))
    kw = dict(alpha_bits=al, beta_bits=be, dataflow=df)
    blocks = None
    if df.scale_a != "tensor":
        rng = np.random.default_rng(3)
        nk = -(-K // 128)
        sa = to_bits(np.float32(2.0) ** rng.integers(-3, 3, (M, nk)).astype(np.float32), "fp32")
        sb = to_bits(np.float32(2.0) ** rng.integers(-3, 3, (1, nk)).astype(np.float32) * np.float32(1.5), "fp32")
        kw.update(scale_a_bits=sa, scale_b_bits=sb)
        blocks = [(bits_to_numpy(sa[:, t], "fp32")[:, None] * bits_to_numpy(sb[0, t], "fp32")) * np.ones((M, N), np.float32)
                  for t in range(nk)]
        blocks = [to_bits(x.astype(np.float32), "fp32") for x in blocks]
    d_np = gemm_bits(m, a, b, c, backend="numpy", **kw)
    d_nat = gemm_bits(m, a, b, c, backend="native", **kw)
    assert np.array_equal(d_np, d_nat)
    for i, j in ((0, 0), (2, 4)):
        assert _smt_element(m, df, a, b, c, i, j, al, be, E, blocks) == int(d_np[i, j]), (i, j)
    # beta = 0: the profile's beta = 0 rule, in all three readings
    kw["beta_bits"] = 0
    d0 = gemm_bits(m, a, b, c, backend="numpy", **kw)
    assert np.array_equal(d0, gemm_bits(m, a, b, c, backend="native", **kw))
    assert _smt_element(m, df, a, b, c, 1, 1, al, 0, E, blocks) == int(d0[1, 1])


@pytest.mark.parametrize("mid,name,K", [
    ("ada-fp8e4m3-fp32:zero_align=ignore", "cublaslt-ada-fp8-slow-splitk", 1024),
    ("ada-fp8e4m3-fp32", "cublaslt-ada-fp8-slow-splitk", 1024),
    ("hopper-fp8e4m3-fp32", "cublaslt-ada-fp8-slow-splitk", 448)])
def test_restarted_zero_tails_match_the_chained_zeros(mid, name, K, monkeypatch):
    """Restarted interleaved slices whose last k-tiles are zero padding: the GEMM reading runs a
    chunk's zero tail as zero-product blocks folded into its combine, and a chunk of zeros only as
    a constant chain (``_zero_blocks``). Expected: the NumPy reading, which chains the padding's
    explicit zero elements; -0 rows and columns and a NaN make the zeros' sign and specials count."""
    import smtmodel.gemm as G
    from smtmodel.dataflow.plan import chains
    from smtmodel.formats import get_format
    monkeypatch.setattr(G, "_EW_NATIVE_MIN", 0)
    m, df = get_model(mid), parse_dataflow(name)
    kinds = {G._zero_blocks(m, c)[0] for sl in chains(df, m, K) for c in sl}
    assert kinds & {-1, 1, 2, 3, 4}, kinds                  # the plan has zero tails to skip
    f = get_format(m.in_fmt)
    a, b, c = mats(m, 3, 33, K, seed=K)
    a[1, :] = np.uint64(1 << (f.width - 1))                   # -0 row
    b[:, 2] = np.uint64(1 << (f.width - 1))                   # -0 column
    a[2, 5] = np.uint64(f.canonical_nan)
    kw = dict(dataflow=df, beta_bits=0)
    assert np.array_equal(gemm_bits(m, a, b, None, backend="native", **kw),
                          gemm_bits(m, a, b, None, backend="numpy", **kw))


@pytest.mark.parametrize("mid,name,K", [("hopper-fp8e4m3-fp32", "deepgemm", 384),
                                        ("ada-fp8e4m3-fp32:zero_align=ignore", "cublaslt-ada-fp8-slow-splitk", 704)])
@pytest.mark.parametrize("jobs", [1, 2])
def test_restarted_chains_combined_across_vectors_rows_and_threads(mid, name, K, jobs, monkeypatch):
    """The GEMM reading runs a chunk's combine among the next chunk's first block: of the same
    column vector, of the next vector (three vectors here, the last one partial), of the next
    row, or after the last row; each thread's rectangle on its own. Expected: the NumPy reading
    (each chunk's chain, then its combine, in order). Scales with a mantissa (x1.5, x1.25) make
    the FFMA round; -0 and a NaN make the specials count."""
    import smtmodel.gemm as G
    from smtmodel.formats import get_format
    monkeypatch.setattr(G, "_EW_NATIVE_MIN", 0)
    m, df = get_model(mid), parse_dataflow(name)
    f = get_format(m.in_fmt)
    M, N = 5, 70
    a, b, _ = mats(m, M, N, K, seed=K + jobs)
    a[3, :] = np.uint64(1 << (f.width - 1))
    a[1, 7] = np.uint64(f.canonical_nan)
    kw = dict(dataflow=df, beta_bits=0, jobs=jobs)
    if df.scale_a != "tensor":
        rng = np.random.default_rng(K)
        nk = -(-K // 128)
        kw.update(scale_a_bits=to_bits(np.float32(1.5) * np.float32(2.0) ** rng.integers(-8, 8, (M, nk)).astype(np.float32), "fp32"),
                  scale_b_bits=to_bits(np.float32(1.25) * np.float32(2.0) ** rng.integers(-8, 8, (1, nk)).astype(np.float32), "fp32"))
    assert np.array_equal(gemm_bits(m, a, b, None, backend="native", **kw),
                          gemm_bits(m, a, b, None, backend="numpy", **kw))


def _exact(bits, fmt):
    from smtmodel.fp.classify import exact_value
    return exact_value(int(bits), fmt)


def _rne32(x: Fraction) -> Fraction:
    """Round a rational to fp32 RNE (normal range), independently of the project's core."""
    if x == 0:
        return Fraction(0)
    s = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    ulp = Fraction(2) ** (e - 23)
    q, r = divmod(x, ulp)
    q = int(q)
    if r > ulp / 2 or (r == ulp / 2 and q % 2 == 1):
        q += 1
    return s * q * ulp


def test_epilogue_forms_differ():
    """fma(alpha, acc, RN(beta*C)) and fma(beta, C, RN(alpha*acc)) on inputs they round differently, each
    checked against exact rational arithmetic (Fractions, an independent rounding)."""
    m = get_model("hopper-fp16-fp32")
    # found by a random search over fp16 a, b and fp32 alpha, beta, C with this Fraction rounding
    A = np.array([[1.8046875]], np.float16)
    Bm = np.array([[1.8076171875]], np.float16)
    C = np.array([[-1.1617921590805054]], np.float32)
    alpha, beta = np.float32(1.5153255462646484), np.float32(1.2858014106750488)
    acc = Fraction(float(A[0, 0])) * Fraction(float(Bm[0, 0]))        # one exact product
    al, be, c = Fraction(float(alpha)), Fraction(float(beta)), Fraction(float(C[0, 0]))
    want_acc = _rne32(al * acc + _rne32(be * c))
    want_c = _rne32(be * c + _rne32(al * acc))
    assert want_acc != want_c
    for name, want in (("cutlass2", want_acc), ("cutlass3-sm90", want_c), ("tensile", want_c)):
        D = gemm(m, A, Bm, C, alpha=float(alpha), beta=float(beta), dataflow=name)
        assert Fraction(float(D[0, 0])) == want, name


def test_beta_zero_rules_and_canonical_nan():
    """beta = 0, alpha = -1, acc = +0: cutlass2 does not read C (RN(alpha*acc) = -0); cuBLASLt's
    fma(alpha, acc, +0) gives +0 (RTX 4060 recordings, epilogue.* in ../shared/hwdata/rtx4060_mmaemu; IEEE: -0 + +0
    = +0 in RNE). NaN outputs carry NVIDIA's canonical pattern."""
    m = get_model("ada-fp8e4m3-fp32")
    Az = bits_to_numpy(np.array([[0x80]], np.uint64), "fp8e4m3")
    Bz = bits_to_numpy(np.array([[0x38]], np.uint64), "fp8e4m3")
    C = np.array([[np.nan]], np.float32)
    d1 = gemm(m, Az, Bz, C, alpha=-1.0, beta=0.0, dataflow="cutlass2")
    d2 = gemm(m, Az, Bz, C, alpha=-1.0, beta=0.0, dataflow="cublaslt-ada-fp8-fast:k_multiple=0")
    assert d1.view(np.uint32)[0, 0] == 0x80000000 and d2.view(np.uint32)[0, 0] == 0
    d3 = gemm(m, Az, Bz, C, beta=0.0, dataflow="cutlass2:beta0=read")     # C read: NaN * 0 = NaN
    assert d3.view(np.uint32)[0, 0] == 0x7FFFFFFF
    assert gemm(m, Az, Bz, C, beta=0.0, dataflow="cutlass2:beta0=read,nan=ieee").view(np.uint32)[0, 0] == 0x7FC00000


def test_outputs_fp8_saturate_and_empty_shapes():
    m = get_model("ada-fp8e4m3-fp32")
    A = np.full((1, 32), 16.0, dtype=bits_to_numpy(np.zeros(1, np.uint64), "fp8e4m3").dtype)
    B = np.full((32, 1), 16.0, dtype=A.dtype)
    d = gemm(m, A, B, None, dataflow="cublaslt-ada-fp8-fast:out=fp8e4m3")       # 8192 -> 448
    assert to_bits(d, "fp8e4m3")[0, 0] == 0x7E
    d = gemm(m, A, B, None, dataflow="cublaslt-ada-fp8-fast:out=fp8e4m3,saturate=no")
    assert to_bits(d, "fp8e4m3")[0, 0] == 0x7F                                 # NaN (no infinities)
    d = gemm(m, A, B, None, scale_result=2.0 ** -5, dataflow="cublaslt-ada-fp8-fast:out=fp8e4m3")
    assert float(d[0, 0]) == 256.0
    e = gemm(m, A[:, :0], B[:0, :], None, dataflow="cublaslt-ada-fp8-fast:out=bf16")
    assert e.shape == (1, 1) and to_bits(e, "bf16")[0, 0] == 0                  # K = 0: +0
    assert gemm(m, A[:0], B, None).shape == (0, 1)
    nan_alpha = dict(alpha=float("nan"), beta=0.0)                                   # K = 0 with a NaN alpha:
    assert to_bits(gemm(m, A[:, :0], B[:0, :], None, dataflow="cutlass2", **nan_alpha), "fp32")[0, 0] == 0x7FFFFFFF
    assert to_bits(gemm(m, A[:, :0], B[:0, :], None, dataflow="cublaslt-ada-fp8-fast", **nan_alpha),
                   "fp32")[0, 0] == 0                                                # k0=zero: no epilogue
    assert output_format(m, parse_dataflow("cublaslt-ada-fp8-fast:out=fp16")) == "fp16"


def test_bad_dataflows_are_one_line_errors():
    with pytest.raises(DataflowError, match="did you mean cublaslt-ada-fp8-fast"):
        parse_dataflow("cublaslt-ada-fp8-fst")
    with pytest.raises(DataflowError, match="contradictory"):
        parse_dataflow("cutlass2:c_entry=accumulator,epilogue=fma_c")
    assert parse_dataflow("cutlass2:c=accumulator").epilogue == "alpha_acc"
    with pytest.raises(DataflowError, match="bad dataflow item"):
        parse_dataflow("cutlass2:frobnicate=1")
    m = get_model("hopper-fp16-fp32")
    a, b, c = mats(m, 2, 2, 45, 1)
    with pytest.raises(ModelError, match="S > number of k-tiles|only 3 k-tiles"):
        gemm_bits(m, a, b, c, dataflow="cutlass-splitk-serial:tile=16,S=4")
    with pytest.raises(ModelError, match="bounds"):
        gemm_bits(m, a, b, c, dataflow="cutlass2:S=2,bounds=7")
    with pytest.raises(ModelError, match="not a multiple of 16"):
        gemm_bits(m, a, b, c, dataflow="cublaslt-ada-fp8-fast")


def test_gemm_command_states_its_dataflow(tmp_path, capsys):
    from mmaprobe import cli
    m = get_model("hopper-fp16-fp32")
    a, b, c = (bits_to_numpy(x, f) for x, f in zip(mats(m, 3, 4, 40, 7), (m.in_fmt, m.in_fmt, m.c_fmt)))
    paths = []
    for name, x in (("A", a), ("B", b), ("C", c)):
        np.save(tmp_path / f"{name}.npy", x)
        paths.append(str(tmp_path / f"{name}.npy"))
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", *paths, "--model", m.id, "-o", str(out), "--alpha", "2",
                     "--dataflow", "cutlass3-sm90:S=2", "-j", "1"]) == 0
    side = json.loads((tmp_path / "D.npy.json").read_text())
    assert side["dataflow_text"] == "cutlass3-sm90:slices=2" and side["dataflow"]["epilogue"] == "fma_c"
    assert "cutlass3-sm90" in capsys.readouterr().err
    want = gemm(m, a, b, c, alpha=2.0, dataflow="cutlass3-sm90:S=2", backend="numpy")
    assert np.array_equal(np.load(out).view(np.uint32), want.view(np.uint32))
    # bad input: one line, exit 2, nothing written
    for bad in ("cutlass3-sm9", "cutlass-splitk-serial:S=6", "cutlass2:epilogue=alpha_acc", "cutlass2:S=2,bounds=9"):
        o2 = tmp_path / "E.npy"
        assert cli.main(["gemm", *paths, "--model", m.id, "-o", str(o2), "--dataflow", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("mmaprobe: error:") and "\n" not in err, err
        assert not o2.exists() and not (tmp_path / "E.npy.json").exists()
