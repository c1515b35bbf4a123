"""The declared interfaces of the harness: every kernel, NVIDIA's and AMD's, has what
``hw_runner.kernels.InstructionSpec`` declares, and a model's ``scale_key`` spells its block
scales as its kernels do (expected values: the kernels' own fields, the catalog's)."""

from __future__ import annotations

from hw_runner.amd.kernels import MFMA_KERNELS
from hw_runner.kernels import KERNELS, InstructionSpec
from smtmodel.catalog import alias_models, all_models


def _members() -> list[str]:
    return sorted({k for k in vars(InstructionSpec) if not k.startswith("_")} | set(InstructionSpec.__annotations__))


def test_every_kernel_has_what_the_protocol_declares():
    members = _members()
    assert {"operand_fmts", "in_key", "scale_key", "block_scaled", "satfinite", "instruction_for"} <= set(members)
    for spec in list(KERNELS.values()) + list(MFMA_KERNELS.values()):
        missing = [k for k in members if not hasattr(spec, k)]
        assert not missing, (spec.id, missing)
        # block_scaled: scales packed beside the fragments (NVIDIA); gfx950's scaled MFMA takes them in
        # buffers of their own, so there `scaled` is what scale_key agrees with
        scaled = spec.scaled if hasattr(spec, "gfx") else spec.block_scaled
        assert spec.operand_fmts[0] == spec.in_fmt and scaled == (spec.scale_key is not None)
        assert not (hasattr(spec, "gfx") and spec.block_scaled)


def test_model_scale_key_matches_its_kernels():
    pairs = 0
    for m in all_models() + alias_models():
        assert (m.scale_key is None) == (m.scale_fmt is None), m.id
        for kid in m.kernels:
            spec = KERNELS.get(kid) or MFMA_KERNELS.get(kid)
            if spec is not None:
                pairs += 1
                assert spec.scale_key == m.scale_key, (m.id, kid)
    assert pairs > 100 and any(m.scale_key for m in all_models())
