"""The normalisation variants (issue 48; docs/variants.md): a variant arm has model.norm other than layernorm or
model.qk_norm true. Both keys are every paper claim's context (prelnx.report.arms): a paper claim compares runs of one
norm only, and on a variant sweep the later methods' claims are read on its LayerNorm arms without QK-Norm, only those
`norm_variants.methods_claims` lists (the study's protocol names no other). methods.yaml's `norm_variants` claims
compare across those two keys only, each case within its group of the other context keys (its Holm family), through
the engine every claim uses; the report's section shows them (the rules in words: NORM_INTRO)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from prelnx.console import results
from prelnx.layouts import display_name
from prelnx.paper import norm_variants_data
from prelnx.report.arms import Arm, context_words, differing_keys, pick, seed_groups
from prelnx.report.claims import comparator_trained, failures_case, loss_case
from prelnx.report.outcome import ClaimOutcome
from prelnx.report.render import claims_table, claims_text
from prelnx.report.stats import below

NORM_KEYS = ("model.norm", "model.qk_norm")  # never a paper claim's factor; the variants' own claims' factors
NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm", "dyt": "DyT"}  # docs/variants.md's names
EVERY_SEED = ("The LayerNorm arm it is compared with trained in every seed (final valid nll clearly below the unigram "
              "plateau).")
FAILS = "The arm without QK-Norm fails in at least one seed (else there is nothing to fail less than)."


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


def norm_groups(arms: list[Arm]) -> list[tuple[str, list[Arm]]]:
    """The runs grouped by their context outside the norm keys, each with its label: the other context keys it differs
    in from the rest of the sweep, in words ("" when there is one group)."""
    groups = list(seed_groups(arms, lambda arm: tuple((k, v) for k, v in arm.context if k not in NORM_KEYS)).values())
    keys = [k for k in differing_keys(arms) if k not in NORM_KEYS]
    return [(context_words(group[0], keys) if len(groups) > 1 else "", group) for group in groups]


def _settings(group: list[Arm], *keys: str) -> list[dict[str, Any]]:
    return [dict(zip(keys, values)) for values in sorted({tuple(getattr(a, k) for k in keys) for a in pick(group)})]


def _schedule(setting: dict[str, Any]) -> str:
    return f"{setting['warmup'] or 'no'} warm-up, {setting['optimizer']} lr {setting['lr']:g}"


def matches_layernorm(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """Per schedule, `layout` + `norm` against `layout` + LayerNorm, both without QK-Norm: the final valid loss
    difference below the margin; premise: LayerNorm trained in every seed (else not testable)."""
    layout, norm = spec["layout"], spec["norm"]
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} with {norm} and with "
                           "layernorm (no QK-Norm) at one schedule")  # fmt: skip
    for family, group in norm_groups(arms):
        variant = [a for a in group if a.layout == layout and a.norm == norm and not a.qk_norm]
        for setting in _settings(variant, "task", "optimizer", "lr", "warmup"):
            mine = pick(variant, **setting)
            base = pick(group, layout=layout, norm="layernorm", qk_norm=False, **setting)
            if base:
                label = f"{family + ': ' if family else ''}{variant_name(mine[0])} vs {variant_name(base[0])}, " \
                        f"{_schedule(setting)}"  # fmt: skip
                premise = comparator_trained(base, EVERY_SEED, strict=True)
                case = loss_case(label, mine, base, below(spec["margin_bits"]), premise)
                outcome.cases.append(dataclasses.replace(case, family=family))
    return outcome


def fewer_failures_with_qk_norm(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """Per arm run with and without QK-Norm, its failed seeds with it against without (Fisher's exact test); premise:
    the arm without QK-Norm fails at least once."""
    outcome = ClaimOutcome(spec["id"], missing="not measured: the sweep has no arm both with and without QK-Norm "
                           "(same layout, norm and schedule)")  # fmt: skip
    for family, group in norm_groups(arms):
        with_qk = [a for a in group if a.qk_norm]
        for setting in _settings(with_qk, "task", "layout", "norm", "optimizer", "lr", "warmup"):
            mine, base = pick(with_qk, **setting), pick(group, **{**setting, "qk_norm": False})
            if base:
                label = f"{family + ': ' if family else ''}{variant_name(base[0])} with and without QK-Norm, " \
                        f"{_schedule(setting)}"  # fmt: skip
                case = failures_case(label, mine, base, None, variant_name(base[0]), FAILS, variant_name(mine[0]))
                outcome.cases.append(dataclasses.replace(case, family=family))
    return outcome


NORM_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {  # a kind is its check's name
    check.__name__: check for check in (matches_layernorm, fewer_failures_with_qk_norm)
}


def norm_claims(arms: list[Arm]) -> tuple[list[dict[str, Any]], dict[str, ClaimOutcome]]:
    """methods.yaml's `norm_variants` claims and their outcomes on these runs; none on a sweep without variant arms."""
    if not has_variants(arms):
        return [], {}
    claims = norm_variants_data()["claims"]
    return claims, {claim["id"]: NORM_CHECKS[claim["kind"]](arms, claim) for claim in claims}


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


def norm_section(arms: list[Arm], say_claims: bool = False) -> list[str]:
    """The report's section ([]: no variant arm in the sweep, so every other report is unchanged); `say_claims`: the
    claims as lines on the terminal too, as the paper's are."""
    claims, outcomes = norm_claims(arms)
    if not claims:
        return []
    if say_claims:
        for line in claims_text(claims, outcomes):
            results.info(line)
    rows = [{**c, "claim": f"**{c['cite']}**: {c['claim']} *Their set-up: {c['setting']}.*",  # authors, code, set-up
             "source": f"{c['paper']}, {c['source']} ({c['code']})", "paper": c["stated"]} for c in claims]
    return ["## The normalisation variants' claims", "", *NORM_INTRO, "", *claims_table(rows, outcomes), ""]
