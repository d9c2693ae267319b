"""The normalisation variants among a sweep's runs (issue 48): a variant arm is one with model.norm other than
layernorm or model.qk_norm true. Both keys are context keys (prelnx.report.arms): a paper claim compares runs of one
norm only. On a sweep with variant arms the later methods' claims (methods.yaml) are read on its LayerNorm arms
without QK-Norm, and only those `norm_variants.methods_claims` lists (the study's protocol names no other)."""

from __future__ import annotations

from typing import Any

from prelnx.layouts import display_name
from prelnx.report.arms import Arm

NORM_KEYS = ("model.norm", "model.qk_norm")  # never a paper claim's factor; the variants' own claims' factors
NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm", "dyt": "DyT"}  # docs/variants.md's names


def is_variant(arm: Arm) -> bool:
    return arm.norm != "layernorm" or arm.qk_norm


def has_variants(arms: list[Arm]) -> bool:
    return any(is_variant(arm) for arm in arms)


def layernorm_arms(arms: list[Arm]) -> list[Arm]:
    """The runs with LayerNorm and no QK-Norm (the paper's norm)."""
    return [arm for arm in arms if not is_variant(arm)]


def methods_on_variants(methods: list[dict[str, Any]], keep: list[str]) -> list[dict[str, Any]]:
    """methods.yaml's entries with only the claims `keep` names (`norm_variants.methods_claims`), `lm_claims` too."""
    return [{**m, **{key: [c for c in m[key] if c["id"] in keep] for key in ("claims", "lm_claims") if key in m}}
            for m in methods]  # fmt: skip


def variant_name(arm: Arm) -> str:
    """`Pre-LN + RMSNorm + QK-Norm`, `Post-LN + LayerNorm`: the layout's display name, its norm and QK-Norm."""
    return f"{display_name(arm.layout)} + {NORM_NAMES.get(arm.norm, arm.norm)}{' + QK-Norm' if arm.qk_norm else ''}"
