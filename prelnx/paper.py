"""Published claims and numbers: Xiong et al.'s, read from prelnx/paper.yaml, and the warm-up-free methods' authors',
read from prelnx/methods.yaml - the one place each is written down (read by the gradient study and the report)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

CLAIM_FIELDS = ("claim", "source", "paper", "margin_bits", "fraction")  # what `same_as` takes from paper.yaml


# libyaml's loader where PyYAML has it (~10x faster on methods.yaml, read by every report's claims); the same dict
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read(name: str) -> dict[str, Any]:
    return yaml.load(resources.files("prelnx").joinpath(name).read_text(), Loader=_LOADER)


def paper_data() -> dict[str, Any]:
    """prelnx/paper.yaml: `training`, `gradients`, `bert` claims; `figure3`, `figure5a` numbers."""
    return _read("paper.yaml")


def methods_data() -> list[dict[str, Any]]:
    """prelnx/methods.yaml's methods, each claim complete: one with `same_as: <paper.yaml id>` takes that claim's
    text, source, paper and margin (paper.yaml stays their one owner)."""
    xiong = {claim["id"]: claim for claim in paper_data()["training"]}
    methods = _read("methods.yaml")["methods"]
    for method in methods:
        for claim in method["claims"]:
            if "same_as" in claim:
                original = xiong[claim["same_as"]]
                claim.update({k: original[k] for k in CLAIM_FIELDS if k in original and k not in claim})
    return methods


def explanations_data() -> dict[str, Any]:
    """prelnx/methods.yaml's `why_warmup`: the explanations of warm-up, each prediction a claim with its margin, the
    study's premise and what counts as a trained run (decided by prelnx/report/why_warmup.py)."""
    return _read("methods.yaml")["why_warmup"]


def norm_variants_data() -> dict[str, Any]:
    """prelnx/methods.yaml's `norm_variants`: `methods_claims` (the ids of `methods` a sweep with variant arms decides)
    and `claims`, each complete: its `rule`'s margin_bits taken from paper.yaml's claim of that id (its one owner)."""
    xiong = {claim["id"]: claim for claim in paper_data()["training"]}
    section = _read("methods.yaml")["norm_variants"]
    for claim in section["claims"]:
        if "rule" in claim:
            claim.setdefault("margin_bits", xiong[claim["rule"]]["margin_bits"])
    return section
