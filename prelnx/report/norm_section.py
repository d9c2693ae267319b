"""The report's section on the normalisation variants (issue 48), only on a sweep with variant arms: methods.yaml's
`norm_variants` claims (decided by prelnx.report.norm_claims) in the claims' table, each beside its authors' own
set-up, which is not this sweep's."""

from __future__ import annotations

from typing import Any

from prelnx.console import results
from prelnx.report.arms import Arm
from prelnx.report.norm_claims import norm_claims
from prelnx.report.render import claims_table, claims_text

NORM_INTRO = [
    "The variants' own papers' claims (prelnx/methods.yaml, `norm_variants`; docs/variants.md), decided like the",
    "paper's. paper.yaml's claims above are decided within each normalisation (model.norm, model.qk_norm) apart:",
    "runs with different norms are never compared by them. These claims compare across the norm only, every other",
    "key alike: RMSNorm and DyT against LayerNorm in the same layout and schedule, per warm-up arm, by the rule of",
    "paper.yaml's preln_without_warmup_matches (the variant's final valid loss minus LayerNorm's below its margin, a",
    "failed seed counted by the exact test, never given a loss; premise: LayerNorm trained in every seed), and",
    "QK-Norm by its failed seeds against the same arm without it (Fisher's exact test, one-sided; premise: the arm",
    "without QK-Norm fails at least once). The authors' set-ups, named beside each claim, are not this sweep's: a",
    "verdict here says what the variant does at this scale, not whether the paper is right at its own.",
]


def _row(claim: dict[str, Any]) -> dict[str, Any]:
    """A claim as the claims' table shows it: its authors, their code, and their set-up beside it."""
    return {**claim, "claim": f"**{claim['cite']}**: {claim['claim']} *Their set-up: {claim['setting']}.*",
            "source": f"{claim['paper']}, {claim['source']} ({claim['code']})", "paper": claim["stated"]}


def norm_section(arms: list[Arm], say_claims: bool = False) -> list[str]:
    """The section's lines ([]: no variant arm in the sweep, so every other report is unchanged); `say_claims`: the
    claims as lines on the terminal too, as the paper's are."""
    claims, outcomes = norm_claims(arms)
    if not claims:
        return []
    if say_claims:
        for line in claims_text(claims, outcomes):
            results.info(line)
    return ["## The normalisation variants' claims", "", *NORM_INTRO, "",
            *claims_table([_row(c) for c in claims], outcomes), ""]  # fmt: skip
