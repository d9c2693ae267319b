"""The normalisation variants' own papers' claims (issue 48; methods.yaml's `norm_variants`), decided on a sweep's
runs with the engine every claim uses (prelnx.report.claims.loss_case, placements.failures_case, .stats). They compare
runs across model.norm and model.qk_norm - the keys that are every paper claim's context (prelnx.report.arms) - and
only across those: the runs are grouped by every other context key, as `arms.decide` groups them, and each case is
decided within its group (its Holm family).

- matches_layernorm: per (optimizer, lr, warm-up arm), `layout` + `norm` against `layout` + LayerNorm, both without
  QK-Norm, same schedule: the final valid loss difference below the rule's margin (failed seeds counted by the
  exact test, never given a loss); premise: the LayerNorm arm trained in every seed, else not testable.
- fewer_failures_with_qk_norm: per (layout, norm, optimizer, lr, warm-up arm) with and without QK-Norm, the failed
  seeds with it against without (Fisher's exact test); premise: the arm without QK-Norm fails at least once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from prelnx.paper import norm_variants_data
from prelnx.report.arms import Arm, differing_keys, pick, seed_groups, trained_margin
from prelnx.report.claims import loss_case, trains
from prelnx.report.norm_arms import NORM_KEYS, has_variants, variant_name
from prelnx.report.outcome import ClaimOutcome, Premise, PremiseState
from prelnx.report.placements import failures_case
from prelnx.report.stats import below

EVERY_SEED = ("The LayerNorm arm it is compared with trained in every seed (final valid nll clearly below the unigram "
              "plateau).")
FAILS = "The arm without QK-Norm fails in at least one seed (else there is nothing to fail less than)."


def _outside_norm(arm: Arm) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in arm.context if k not in NORM_KEYS)


def norm_groups(arms: list[Arm]) -> list[tuple[str, list[Arm]]]:
    """The runs grouped by their context outside the norm keys, each with its label: the other context keys it differs
    in from the rest of the sweep, in words ("" when there is one group)."""
    groups = list(seed_groups(arms, _outside_norm).values())
    keys = [k for k in differing_keys(arms) if k not in NORM_KEYS]

    def label(group: list[Arm]) -> str:
        found = dict(group[0].context)
        return ", ".join(f"{k} {found[k].strip(chr(34)) if k in found else '-'}" for k in keys)

    return [(label(group) if len(groups) > 1 else "", group) for group in groups]


def every_seed_trained(group: list[Arm]) -> Premise:
    """`trains` at paper.yaml's trained margin, strict: a seed that failed makes the premise fail (not unsettled)."""
    premise = trains({"statement": EVERY_SEED, "margin_bits": trained_margin()}, group)
    some = premise.state is PremiseState.UNSETTLED  # some seeds trained, not all
    return dataclasses.replace(premise, state=PremiseState.FAILED) if some else premise


def _settings(group: list[Arm], *keys: str) -> list[dict[str, Any]]:
    return [dict(zip(keys, values)) for values in sorted({tuple(getattr(a, k) for k in keys) for a in pick(group)})]


def _schedule(setting: dict[str, Any]) -> str:
    return f"{setting['warmup'] or 'no'} warm-up, {setting['optimizer']} lr {setting['lr']:g}"


def matches_layernorm(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
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
                case = loss_case(label, mine, base, below(spec["margin_bits"]), every_seed_trained(base))
                outcome.cases.append(dataclasses.replace(case, family=family))
    return outcome


def fewer_failures_with_qk_norm(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
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


NORM_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {
    "matches_layernorm": matches_layernorm,
    "fewer_failures_with_qk_norm": fewer_failures_with_qk_norm,
}


def norm_claims(arms: list[Arm]) -> tuple[list[dict[str, Any]], dict[str, ClaimOutcome]]:
    """methods.yaml's `norm_variants` claims and their outcomes on these runs; none on a sweep without variant arms."""
    if not has_variants(arms):
        return [], {}
    claims = norm_variants_data()["claims"]
    return claims, {claim["id"]: NORM_CHECKS[claim["kind"]](arms, claim) for claim in claims}
