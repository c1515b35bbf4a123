"""mmaprobe.torch.emulate: inside ``emulate(gpu="h100")`` every emulated op gives the bits of an
independent ``smtmodel.gemm.gemm_bits`` call on the same operands with the model and dataflow the
GPU's dispatch rule (``smtmodel.dataflow.hopper_gemmex.predict``) or the named default gives
(expected values: those calls, made here); unsupported calls run natively and are reported, or are
refused with one line. Skips cleanly without torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mmaprobe.torch import diff, emulate, from_bits, to_bits_tensor, ulp_distance  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402
from smtmodel.dataflow import DataflowError, hopper_gemmex  # noqa: E402
from smtmodel.dataflow.plan import chains  # noqa: E402
from smtmodel.dataflow.dispatch import DispatchError, get_table  # noqa: E402
from smtmodel.gemm import gemm_bits, resolve_dataflow  # noqa: E402
from smtmodel.model import ModelError  # noqa: E402

FMT = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def rand(*shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def choice(M, N, K, dtype):
    """The (model, dataflow) H100 should use: the dispatch rule's where it answers, else the
    default cutlass3-sm90 with the output in the input's format; TF32 for fp32 inputs."""
    fmt = FMT[dtype]
    model = "hopper-tf32-fp32:tf32_low=RNE" if fmt == "fp32" else f"hopper-{fmt}-fp32"
    try:
        p = hopper_gemmex.predict(M, N, K, "tf32" if fmt == "fp32" else fmt, fmt)
        chains(p.dataflow, get_model(p.model), K)             # an answer that does not fit K: the default
        return p.model, p.dataflow
    except (DispatchError, DataflowError):
        return model, resolve_dataflow(f"cutlass3-sm90:out={fmt}")


def ref(A, B, C=None, alpha=None, beta=None, choose=None):
    """gemm_bits on 2-D operands (C converted to fp32, alpha/beta as fp32 bits)."""
    M, K = A.shape
    N = B.shape[1]
    model, df = (choose or choice)(M, N, K, A.dtype)
    f32 = lambda x: None if x is None else int(np.array(x, np.float32).view(np.uint32))   # noqa: E731
    cb = None if C is None else to_bits_tensor(C.to(torch.float32).expand(M, N))
    d = gemm_bits(get_model(model), to_bits_tensor(A), to_bits_tensor(B), cb, alpha_bits=f32(alpha),
                  beta_bits=f32(beta), dataflow=df)
    return from_bits(d, df.out if df.out != "model" else "fp32")


def same(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
    assert np.array_equal(to_bits_tensor(x), to_bits_tensor(y))


def test_mm_matmul_out_and_transposed_inputs_equal_gemm_bits():
    A, B = rand(16, 64), rand(24, 64, seed=1).T             # B transposed: not contiguous
    A2 = rand(40, 10, dtype=torch.float16, seed=2).T[:, ::2]   # (10, 20) strided, unaligned: default dataflow
    B2 = rand(20, 12, dtype=torch.float16, seed=3)
    out = torch.empty(0, dtype=torch.bfloat16)
    with emulate(gpu="h100") as mode:
        d1 = torch.mm(A, B)
        d2 = A @ B
        d3 = torch.matmul(A2, B2)
        d4 = torch.matmul(A, B, out=out)
        d5 = torch.matmul(A[0], B)                          # 1-D @ 2-D: M = 1
    for d in (d1, d2, d4):
        same(d, ref(A, B))
    assert d4 is out
    same(d3, ref(A2.contiguous(), B2))
    same(d5, ref(A[:1], B)[0])
    r = mode.report()
    assert [c.op for c in r.emulated] == ["mm", "matmul", "matmul", "matmul", "matmul"]
    assert r.emulated[0].source.startswith(hopper_gemmex.NAME) and r.emulated[2].source == "default cutlass3-sm90"
    # the rule actually splits K here (M*N small): the dataflow is not the plain default
    assert choice(16, 24, 64, torch.bfloat16)[1].slices == 1 and choice(16, 24, 320, torch.bfloat16)[1].slices == 3


def test_split_k_from_the_rule():
    A, B = rand(8, 320), rand(320, 16, seed=4)
    with emulate(gpu="h100") as mode:
        d = A @ B
    same(d, ref(A, B))
    assert mode.report().emulated[0].dataflow == choice(8, 16, 320, torch.bfloat16)[1].text()
    assert "slices=3" in mode.report().emulated[0].dataflow


def test_batch_dims_broadcasting_and_folding():
    A, B = rand(2, 1, 5, 16, dtype=torch.float16), rand(3, 16, 8, dtype=torch.float16, seed=5)
    W = rand(16, 8, dtype=torch.float16, seed=6)
    X = rand(2, 5, 16, dtype=torch.float16, seed=7)
    with emulate(gpu="h100") as mode:
        d = A @ B                                            # broadcast to (2, 3) batches of bmm
        f = X @ W                                            # folded: one (10, 16) x (16, 8) GEMM
        g = torch.bmm(X, X.mT)
    for i in range(2):
        for j in range(3):
            same(d[i, j], ref(A[i, 0], B[j]))
    same(f, ref(X.reshape(10, 16), W).reshape(2, 5, 8))
    for i in range(2):
        same(g[i], ref(X[i], X[i].T.contiguous()))
    calls = mode.report().emulated
    assert (calls[0].batch, calls[0].M) == (6, 5) and (calls[1].batch, calls[1].M) == (1, 10)


def test_addmm_baddbmm_linear_with_bias():
    A, B = rand(6, 32), rand(32, 8, seed=8)
    bias = rand(8, seed=9)
    C3 = rand(3, 6, 8, seed=10)
    X3, Y3 = rand(3, 6, 32, seed=11), rand(3, 32, 8, seed=12)
    W = rand(8, 32, seed=13)
    lin = torch.nn.Linear(32, 8, dtype=torch.bfloat16)
    out = torch.empty(6, 8, dtype=torch.bfloat16)
    with emulate(gpu="h100"):
        d1 = torch.addmm(bias, A, B, beta=2.0, alpha=0.5)
        d2 = torch.baddbmm(C3, X3, Y3, alpha=-1.0)
        d3 = F.linear(X3, W, bias)                           # contiguous 3-D: addmm on the flattened input
        d4 = lin(A)
        d5 = torch.addmm(bias, A, B, out=out)
        d6 = F.linear(X3.transpose(0, 1), W)                 # no bias, non-contiguous
    same(d1, ref(A, B, bias, 0.5, 2.0))
    for i in range(3):
        same(d2[i], ref(X3[i], Y3[i], C3[i], -1.0, 1.0))
    same(d3, ref(X3.reshape(18, 32), W.T.contiguous(), bias, 1.0, 1.0).reshape(3, 6, 8))
    same(d4, ref(A, lin.weight.detach().T.contiguous(), lin.bias.detach(), 1.0, 1.0))
    assert d5 is out
    same(d5, ref(A, B, bias, 1.0, 1.0))
    Xt = X3.transpose(0, 1)
    for i in range(6):
        same(d6[i], ref(Xt[i].contiguous(), W.T.contiguous()))


def test_einsum_lowers_to_bmm():
    Q, K = rand(2, 3, 4, 16, seed=14), rand(2, 3, 5, 16, seed=15)
    X, W = rand(4, 16, seed=16), rand(8, 16, seed=17)
    with emulate(gpu="h100") as mode:
        s = torch.einsum("bhqd,bhkd->bhqk", Q, K)
        y = torch.einsum("id,jd", X, W)                     # implicit output "ij"
        z = torch.einsum("...d,jd->...j", Q, W)
    for b in range(2):
        for h in range(3):
            same(s[b, h], ref(Q[b, h], K[b, h].T.contiguous()))
    same(y, ref(X, W.T.contiguous()))
    same(z, ref(Q.reshape(-1, 16), W.T.contiguous()).reshape(2, 3, 4, 8))
    assert [c.op for c in mode.report().emulated] == ["einsum"] * 3


def test_fp32_follows_the_tf32_flag():
    A, B = rand(8, 16, dtype=torch.float32), rand(16, 8, dtype=torch.float32, seed=18)
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        with emulate(gpu="h100") as m1:
            d = A @ B
        torch.backends.cuda.matmul.allow_tf32 = False
        with emulate(gpu="h100") as m2:
            s = A @ B
        with emulate(gpu="a100") as m4:                     # no Ampere SGEMM model: native, reported
            n = A @ B
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    same(d, ref(A, B))
    assert m1.report().emulated[0].model == "hopper-tf32-fp32:tf32_low=RNE"
    sgemm = lambda M, N, K, dt: ("hopper-fp32-fp32", resolve_dataflow("cutlass3-sm90:out=fp32"))   # noqa: E731
    same(s, ref(A, B, choose=sgemm))
    assert m2.report().emulated[0].model == "hopper-fp32-fp32"
    assert not m4.report().emulated and torch.equal(n, A @ B)
    (op, why), = m4.report().unsupported
    assert "fp32 without TF32" in why
    with emulate(gpu="h100", tf32=True) as m3:
        same(A @ B, d)
    assert m3.report().emulated[0].model == "hopper-tf32-fp32:tf32_low=RNE"


def test_scaled_mm_fp8():
    g = torch.Generator().manual_seed(3)
    A = torch.randn(16, 32, generator=g).to(torch.float8_e4m3fn)
    B = torch.randn(16, 32, generator=g).to(torch.float8_e4m3fn).T        # column-major, as torch wants it
    sa, sb = torch.tensor(0.5), torch.tensor(3.0)
    with emulate(gpu="h100") as mode:
        d = torch._scaled_mm(A, B, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)
    t = get_table("cublaslt-h100pcie-fp8")
    try:
        df = t.lookup(16, 16, 32, "fp8e4m3", "fp8e4m3", "bf16", True).dataflow
    except DispatchError:
        df = resolve_dataflow("cublaslt-hopper-fp8-fast:out=bf16")
    want = gemm_bits(get_model(t.model_id("fp8e4m3", "fp8e4m3")), to_bits_tensor(A), to_bits_tensor(B), None,
                     beta_bits=0, dataflow=df, scale_a_bits=0x3F000000, scale_b_bits=0x40400000)
    same(d, from_bits(want, "bf16"))
    c = mode.report().emulated[0]
    assert c.op == "_scaled_mm" and c.model.startswith("hopper-fp8e4m3-fp32")


def test_sdpa_reading():
    q, k, v = rand(1, 2, 4, 16, seed=20), rand(1, 2, 6, 16, seed=21), rand(1, 2, 6, 8, seed=22)
    mask = torch.ones(4, 6, dtype=torch.bool).tril(2)
    with emulate(gpu="h100") as mode:
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    att = lambda M, N, K, dt: ("hopper-bf16-fp32", resolve_dataflow("cutlass3-sm90:out=fp32"))   # noqa: E731
    for h in range(2):
        s = ref(q[0, h], k[0, h].T.contiguous(), choose=att) * torch.tensor(0.25)
        p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1).to(torch.bfloat16)
        same(o[0, h], ref(p, v[0, h], choose=att).to(torch.bfloat16))
    assert [c.op for c in mode.report().emulated] == ["sdpa q@k^T", "sdpa p@v"]


def test_unsupported_calls_are_named_and_run_natively():
    i = torch.arange(6).reshape(2, 3)
    z = torch.randn(2, 2, dtype=torch.complex64)
    meta = torch.empty(4, 4, device="meta", dtype=torch.bfloat16)
    with pytest.warns(UserWarning, match="int64"):
        with emulate(gpu="h100") as mode:
            ii = i @ i.T
            zz = z @ z
            mm = meta @ meta
            v = rand(4, 8) @ rand(8)                         # gemv: not a tensor-core GEMM
    assert torch.equal(ii, i @ i.T) and torch.equal(zz, z @ z) and mm.device.type == "meta" and v.shape == (4,)
    why = {w for (_, w) in mode.report().unsupported}
    assert any("int64" in w for w in why) and any("complex64" in w for w in why)
    assert any("meta" in w for w in why) and any("gemv" in w for w in why)
    assert not mode.report().emulated
    text = mode.report().text()
    assert "not emulated, ran natively" in text and "int64" in text
    with pytest.raises(ModelError, match="on meta"):
        with emulate(gpu="h100", strict=True):
            meta @ meta


def test_unknown_gpu_lists_names_and_no_model_runs_natively():
    with pytest.raises(ModelError, match="unknown gpu 'h1000'.*b200.*h100.*mi300x"):
        emulate(gpu="h1000")
    with emulate(gpu="V100") as mode:                       # Volta has no bf16 model
        rand(4, 8) @ rand(8, 4)
    assert any("volta has no model volta-bf16-fp32" in w for (_, w) in mode.report().unsupported)
    with emulate(gpu="mi300x") as m2:
        d = rand(4, 8, dtype=torch.float16) @ rand(8, 4, dtype=torch.float16)
    assert m2.report().emulated[0].model == "cdna3-fp16-fp32" and m2.report().emulated[0].dataflow == "tensile:out=fp16"
    same(d, ref(rand(4, 8, dtype=torch.float16), rand(8, 4, dtype=torch.float16),
                choose=lambda M, N, K, dt: ("cdna3-fp16-fp32", resolve_dataflow("tensile:out=fp16"))))


def test_interrupted_forward_leaves_no_mode_and_memory_is_checked(monkeypatch):
    net = torch.nn.Sequential(torch.nn.Linear(8, 8, dtype=torch.bfloat16), torch.nn.ReLU())

    def stop(*_):
        raise KeyboardInterrupt
    h = net[1].register_forward_pre_hook(stop)
    with pytest.raises(KeyboardInterrupt):
        with emulate(gpu="h100", module=net) as mode:
            net(rand(2, 8))
    h.remove()
    assert torch._C._len_torch_function_stack() == 0
    assert not net[0]._forward_pre_hooks and not net[0]._forward_hooks
    assert mode.report().emulated[0].scope == "0"
    import smtmodel.native.gemm as ng
    monkeypatch.setattr(ng, "memory_available", lambda: 1000)
    with pytest.raises(ModelError, match=r"needs about .* GiB of memory"):
        with emulate(gpu="h100"):
            rand(1024, 1024) @ rand(1024, 1024)        # refused before anything is computed


def test_diff_between_two_gpus(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).to(torch.bfloat16)
    x = rand(4, 64, seed=30) * 8
    r = diff(net, x, "h100", "mi300x")
    assert [c.scope for c in r.calls] == ["0", "2"]
    # expected: the first layer's outputs compared directly, each from gemm_bits
    l0 = net[0]
    a = ref(x, l0.weight.detach().T.contiguous(), l0.bias.detach(), 1.0, 1.0)
    b = ref(x, l0.weight.detach().T.contiguous(), l0.bias.detach(), 1.0, 1.0,
            choose=lambda M, N, K, dt: ("cdna3-bf16-fp32", resolve_dataflow("tensile:out=bf16")))
    d = ulp_distance(a, b)
    assert r.calls[0].differ == int((d > 0).sum()) and r.calls[0].max_ulp == d.max()
    assert r.output is not None and "first difference" in r.text()
    same_run = diff(net, x, "h100", {"gpu": "h100"})
    assert all(c.differ == 0 for c in same_run.calls) and same_run.first_call is None
    pytest.importorskip("matplotlib")
    assert (tmp_path / "d.png").exists() is False
    r.plot(str(tmp_path / "d.png"))
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_dask_row_blocks_give_the_same_bits():
    """A client: GEMMs from ``distribute_min`` multiply-adds run as row blocks on the workers of an
    in-process Dask cluster; expected: the same ops without a client (and gemm_bits)."""
    from distributed import Client, LocalCluster
    A, B = rand(37, 320), rand(320, 24, seed=5)              # split-K from the rule; 37 rows in uneven blocks
    Xb, Yb = rand(3, 9, 64, seed=6), rand(3, 64, 16, seed=7)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl, \
            Client(cl, set_as_default=False) as client:
        with emulate(gpu="h100", client=client, distribute_min=1) as mode:
            d, db = A @ B, torch.bmm(Xb, Yb)
    with emulate(gpu="h100") as local:
        same(d, A @ B)
        same(db, torch.bmm(Xb, Yb))
    same(d, ref(A, B))
    assert [c.source.endswith("row blocks on Dask") for c in mode.report().emulated] == [True, True]
    assert not any("Dask" in c.source for c in local.report().emulated)
