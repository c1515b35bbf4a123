"""Run a vector file on a GPU or on a twin model, and judge the models against observations.

Devices:

- ``cuda`` / ``cuda:N``: the file's cases go through one instruction kernel
  (:mod:`hw_runner.kernels`) in batches; each output lands in the case's ``observed`` under
  ``"<GPU name> / sm_XX / <PTX instruction>"``.
- ``rocm`` / ``rocm:N``: the same through one MFMA kernel (:mod:`hw_runner.amd`) on an AMD GPU,
  under ``"<GPU name> / gfx9xx / <v_mfma instruction>"``.
- ``twin:MODEL_ID``: the catalog model answers (``smtmodel.catalog.get_model``: ``.id``,
  ``.in_fmt``, ``.c_fmt``, ``.out_fmt``, ``.evaluate(a, b, c)`` on uint64 raw bits), under
  ``"twin:MODEL_ID"``.

``verdict`` compares every observation with every model's ``expect`` value (bitwise); a model
with no contradiction survives (seed 001 Algorithm 1: a mismatch sends the model back for
refinement).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from smtmodel.formats import bits_to_numpy, get_format, operand_key
from smtmodel.sampling import scale_one

from .errors import HarnessError
from .kernels import KernelSpec, default_kernel, get_kernel
from .launch import CupyLauncher, Launcher, parse_cuda_device
from .mix import layout_probe
from .pack import kernel_buffers, operands, unpack_d

BATCH = 8192


def make_launcher(device: str, check_sass: bool = True) -> Launcher:
    """The launcher for a ``cuda[:N]`` or ``rocm[:N]`` device string (tests replace this
    function); ``check_sass`` also stands for the MFMA kernels' ISA check."""
    kind = device.split(":")[0]
    if kind not in ("cuda", "rocm"):
        raise HarnessError(f"bad device {device!r}: expected cuda, cuda:N, rocm, rocm:N or twin:MODEL_ID")
    if kind == "rocm":
        from .amd.launch import HipLauncher, parse_rocm_device
        return HipLauncher(parse_rocm_device(device), check_isa=check_sass)
    return CupyLauncher(parse_cuda_device(device), check_sass=check_sass)


def default_model_lookup(model_id: str):
    try:
        from smtmodel.catalog import get_model
    except ImportError as exc:
        raise HarnessError(f"smtmodel.catalog is not available ({exc}); cannot run twin:{model_id}") from None
    try:
        return get_model(model_id)
    except (KeyError, ValueError) as exc:
        msg = str(exc).strip("'\"")
        raise HarnessError(msg if model_id in msg else f"model {model_id!r}: {msg}") from None


@dataclass
class DeviceResult:
    d: np.ndarray                                   # D[0][0] bits per case, uint64 (N,)
    uniform: np.ndarray | None = None               # replicate mode: all of D identical? (N,)
    distinct: dict[int, list[int]] = field(default_factory=dict)  # case -> distinct D values


def check_scales(what: str, scale_key, scales) -> None:
    """One clear error where cases and a block-scaled computation (``scale_key`` = (format,
    products per scale), None for an unscaled one) do not fit: scales missing, or given to an
    unscaled one."""
    if scale_key and scales is None:
        raise HarnessError(f"{what} is block-scaled ({scale_key[0]} scales, one per {scale_key[1]} products): "
                           "the cases need a_scale and b_scale (a vector file's scale_fmt/scale_block header "
                           "and per-case a_scale/b_scale)")
    if not scale_key and scales is not None:
        raise HarnessError(f"{what} takes no block scales, but the cases carry a_scale/b_scale")


def run_on_device(launcher: Launcher, spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                  replicate: bool = False, batch: int = BATCH, a_scale: np.ndarray | None = None,
                  b_scale: np.ndarray | None = None, scales: tuple | None = None) -> DeviceResult:
    """Run cases (uint64 bits: a, b ``(N, k)``, c ``(N,)``; a block-scaled kernel: a_scale,
    b_scale ``(N, k / scale_block)``, or ``scales`` = (a_scale, b_scale)) through ``spec`` on
    ``launcher``. NVIDIA kernels take the scales in their operand buffers (:mod:`hw_runner.pack`),
    gfx950's ``v_mfma_scale_*`` in buffers of their own (:func:`hw_runner.amd.layouts.scale_buffers`)."""
    if scales is not None:
        a_scale, b_scale = scales
    check_scales(f"kernel {spec.id}", spec.scale_key, None if a_scale is None else (a_scale, b_scale))
    if (a_scale is None) != (b_scale is None):
        raise HarnessError("a_scale and b_scale go together")
    n = a.shape[0]
    d = np.zeros(n, dtype=np.uint64)
    uniform = np.ones(n, dtype=bool) if replicate else None
    distinct: dict[int, list[int]] = {}
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        sc = {} if a_scale is None else {"a_scale": a_scale[lo:hi], "b_scale": b_scale[lo:hi]}
        if a_scale is not None and hasattr(spec, "gfx"):             # MFMA: scale buffers beside A, B, C
            from .amd.layouts import scale_buffers
            bufs = (*kernel_buffers(spec, operands(spec, a[lo:hi], b[lo:hi], c[lo:hi], replicate)),
                    *scale_buffers(spec, sc["a_scale"], sc["b_scale"], a.shape[1], replicate))
        else:
            bufs = kernel_buffers(spec, operands(spec, a[lo:hi], b[lo:hi], c[lo:hi], replicate, **sc))
        dmat = unpack_d(spec, launcher.launch(spec, *bufs))
        d[lo:hi] = dmat[:, 0, 0, 0]
        if replicate:
            flat = dmat.reshape(hi - lo, -1)
            same = np.all(flat == flat[:, :1], axis=1)
            uniform[lo:hi] = same
            for i in np.flatnonzero(~same):
                distinct[lo + int(i)] = sorted({int(x) for x in flat[i]})
    return DeviceResult(d, uniform, distinct)


def layout_self_test(launcher: Launcher, spec: KernelSpec, k: int | None = None,
                     scale: tuple[str, int] | None = None) -> int:
    """The layout self-test (:func:`hw_runner.mix.layout_probe`: exact probes whose result no
    arithmetic model changes) of ``spec`` over ``k`` products on ``launcher``; ``scale`` =
    (scale format, scales per case) for a block-scaled kernel, every scale 1.0. Returns the number
    of probes; raises :class:`HarnessError` naming the first wrong probe: the kernel packs its
    operands wrongly and its outputs would be meaningless."""
    k = k or spec.k
    fa, fb = spec.operand_fmts
    pa, pb, pc, pd = layout_probe(fa, spec.c_fmt, spec.out_fmt, k, b_fmt=fb)
    ones = (None, None)
    if scale:
        ones = tuple(np.full((len(pd), scale[1]), scale_one(scale[0]), np.uint64) for _ in "ab")
    probe = run_on_device(launcher, spec, pa, pb, pc, a_scale=ones[0], b_scale=ones[1])
    bad = np.flatnonzero(probe.d != pd)
    if bad.size:
        i, j = divmod(int(bad[0]), k)
        raise HarnessError(f"layout self-test failed on {bad.size}/{len(pd)} exact probes (first: a=e{i}, b=2e{j}); "
                           f"kernel {spec.id} packs its operands wrongly, results would be meaningless")
    return len(pd)


def _check_formats(what: str, fmts: tuple, header: dict) -> None:
    """``fmts``: (in, c, out) or (a, b, c, out) format names, against the file's header (whose
    a_fmt/b_fmt default to in_fmt)."""
    fmts = tuple(get_format(f).name for f in fmts)
    if len(fmts) == 3:
        fmts = (fmts[0],) + fmts
    ins = header.get("in_fmt")
    want = tuple(get_format(f).name for f in (header.get("a_fmt") or ins, header.get("b_fmt") or ins,
                                              header["c_fmt"], header["out_fmt"]))
    if fmts != want:
        raise HarnessError(f"{what} computes {fmts[0]} x {fmts[1]} + {fmts[2]} -> {fmts[3]}, "
                           f"but the file is {want[0]} x {want[1]} + {want[2]} -> {want[3]}")


def scales_of(x) -> tuple | None:
    """(scale format, elements per scale) of a vector file header (a dict) or a model, None unscaled."""
    fmt, blk = (x.get("scale_fmt"), x.get("scale_block")) if isinstance(x, dict) else \
        (getattr(x, "scale_fmt", None), getattr(x, "scale_block", None))
    return (get_format(fmt).name, int(blk)) if fmt else None


def scale_text(s) -> str:
    return f"{s[0]} scales per {s[1]}" if s else "no block scales"


def _model_scale(model):
    """A model's (scale format, products per scale), None for an unscaled one."""
    fmt = getattr(model, "scale_fmt", None)
    return (get_format(fmt).name, int(model.scale_block)) if fmt else None


def _check_scale_fit(what: str, want, have, scales) -> None:
    """A vector file's block scales (``have``: (format, block) or None) against what ``what``
    computes with (``want``): one clear error for a missing, unexpected or different scaling."""
    check_scales(what, want, scales)
    if want and have != want:
        raise HarnessError(f"{what} takes {want[0]} scales, one per {want[1]} products, but the file has "
                           f"{have[0]} scales per {have[1]}")


@dataclass
class RunReport:
    key: str                     # the ``observed`` key written
    cases: int
    kernel: str | None           # kernel id (None for a twin)
    replicate_failures: dict[str, list[str]] = field(default_factory=dict)  # case id -> distinct hex
    seconds: float = 0.0


def case_id(case: dict, i: int) -> str:
    return str(case.get("id", f"#{i}"))


def run_vectors(vf, device: str, *, kernel: str | None = None, replicate: bool = False,
                batch: int = BATCH, model_lookup=None, launcher: Launcher | None = None,
                check_sass: bool = True, twin: dict | None = None) -> RunReport:
    """Run every case of ``vf`` (a ``smtmodel.vectors.VectorFile``) on ``device`` and record
    the outputs in each case's ``observed``; the caller writes the file. ``twin``: keywords of
    a ``twin:`` model's ``evaluate`` (``backend``, ``jobs``)."""
    t0 = time.perf_counter()
    a, b, c = vf.arrays()
    scales = vf.scales()
    h = vf.header
    file_scale = (get_format(h["scale_fmt"]).name, int(h["scale_block"])) if scales is not None else None
    sc = {} if scales is None else {"a_scale": scales[0], "b_scale": scales[1]}
    fo = get_format(vf.header["out_fmt"])
    if device.startswith("twin:"):
        model = (model_lookup or default_model_lookup)(device[len("twin:"):])
        _check_formats(f"model {model.id}", getattr(model, "formats", None) or (model.in_fmt, model.c_fmt, model.out_fmt),
                       vf.header)
        _check_scale_fit(f"model {model.id}", _model_scale(model), file_scale, scales)
        d = np.asarray(model.evaluate(a, b, c, **sc, **(twin or {})), dtype=np.uint64)
        if d.shape != (len(vf.cases),):
            raise HarnessError(f"model {model.id} returned shape {d.shape}, expected ({len(vf.cases)},)")
        key, spec, res = f"twin:{model.id}", None, DeviceResult(d)
    else:
        launcher = launcher or make_launcher(device, check_sass)
        key = h.get("in_fmt") or operand_key(h.get("a_fmt"), h.get("b_fmt"))
        spec = (get_kernel(kernel) if kernel else
                default_kernel(key, h["c_fmt"], h["out_fmt"], launcher.arch, scale=file_scale))
        _check_formats(f"kernel {spec.id}", (*spec.operand_fmts, spec.c_fmt,
                                             spec.out_fmt), h)
        _check_scale_fit(f"kernel {spec.id}", spec.scale_key, file_scale, scales)
        if not spec.supports(launcher.arch):
            why = getattr(spec, "absent_note", "")
            raise HarnessError(f"kernel {spec.id} does not run on {launcher.name} ({launcher.arch})"
                               + (f": {why}" if why else ""))
        key = f"{launcher.name} / {launcher.arch} / {spec.instruction_for(launcher.arch)}"
        res = run_on_device(launcher, spec, a, b, c, replicate, batch, **sc)
        vf.header.setdefault("devices", {})[key] = {"kernel": spec.id, "replicate": replicate}
    report = RunReport(key, len(vf.cases), spec.id if spec else None)
    for i, case in enumerate(vf.cases):
        case.setdefault("observed", {})[key] = fo.hex(int(res.d[i]))
        if i in res.distinct:
            vals = [fo.hex(v) for v in res.distinct[i]]
            case.setdefault("replicate_mismatch", {})[key] = vals
            report.replicate_failures[case_id(case, i)] = vals
    report.seconds = time.perf_counter() - t0
    return report


# ---- verdict -------------------------------------------------------------------------------

@dataclass
class ModelVerdict:
    """One model against observed outputs: the one verdict type of ``verdict``, ``run`` and the
    survey's kernel judgement (which also keeps per-set counts and the first contradiction's
    inputs, and writes :meth:`card` into its card)."""
    model: str
    matches: int = 0
    total: int = 0
    first_contradiction: str | None = None   # case id
    detail: str = ""                         # "on DEVICE: expected X, observed Y"
    sets: dict | None = field(default=None, repr=False)   # set -> [bitwise, NaN-equal, cases]
    case: dict | None = field(default=None, repr=False)   # the first contradiction's inputs and outputs
    kind: str = field(default="", repr=False)             # the model's kind (catalog, rival, ...)

    @property
    def contradictions(self) -> int:
        return self.total - self.matches

    @property
    def status(self) -> str:
        if self.total == 0:
            return "untested"
        return "survives" if self.contradictions == 0 else "refuted"

    def count(self, name: str, ok: np.ndarray, ok_nan: np.ndarray, case=None) -> None:
        """Add one set's agreement (bitwise ``ok``, NaN-equal ``ok_nan``); ``case(i)`` gives the
        record of case i, kept for the first contradiction."""
        self.sets = self.sets if self.sets is not None else {}
        self.sets[name] = [int(ok.sum()), int(ok_nan.sum()), int(ok.size)]
        self.total += int(ok.size)
        self.matches += int(ok.sum())
        if self.case is None and not ok.all() and case is not None:
            self.case = case(int(np.flatnonzero(~ok)[0]))

    def card(self) -> dict:
        """The survey card's entry (docs/survey.md)."""
        return {"matches": self.matches, "total": self.total, "survives": self.contradictions == 0,
                "sets": self.sets or {}, "first_contradiction": self.case, "kind": self.kind}


def agree(x, y, fmt, nan_equal: bool = False) -> np.ndarray:
    """Elementwise: are raw bits ``x`` and ``y`` of ``fmt`` the same output? Bitwise, or with
    ``nan_equal`` any NaN equals any NaN."""
    x, y = np.asarray(x, dtype=np.uint64), np.asarray(y, dtype=np.uint64)
    eq = x == y
    if nan_equal:
        fmt = get_format(fmt)
        with np.errstate(invalid="ignore"):
            eq |= np.isnan(bits_to_numpy(x, fmt).astype(np.float64)) & np.isnan(bits_to_numpy(y, fmt).astype(np.float64))
    return eq


def verdict(vf, *, device: str | None = None, nan_equal: bool = False,
            include_twins: bool = False) -> dict[str, ModelVerdict]:
    """Per model: how many observations its ``expect`` matches, and the first contradiction.

    ``device``: only observations whose key contains this text; ``nan_equal``: any NaN matches
    any NaN (default: bitwise, payloads included); ``include_twins``: also count ``twin:``
    outputs, which are another model's answers rather than evidence (default: hardware only)."""
    fo = get_format(vf.header["out_fmt"])
    models = list(vf.header.get("models", []))
    for case in vf.cases:
        models += [m for m in case.get("expect", {}) if m not in models]
    out = {m: ModelVerdict(m) for m in models}
    for i, case in enumerate(vf.cases):
        exp = case.get("expect", {})
        for dev, obs in case.get("observed", {}).items():
            if (device and device not in dev) or (dev.startswith("twin:") and not include_twins):
                continue
            for m, v in out.items():
                if m not in exp:
                    continue
                v.total += 1
                if agree(fo.parse_hex(exp[m]), fo.parse_hex(obs), fo, nan_equal):
                    v.matches += 1
                elif v.first_contradiction is None:
                    v.first_contradiction = case_id(case, i)
                    v.detail = f"on {dev}: expected {exp[m]}, observed {obs}"
    return out
