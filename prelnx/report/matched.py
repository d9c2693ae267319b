"""A claim decided on matched arms only (docs/verdicts.md): the sweep's runs split by context - their arm's keys
outside the claims' own factors (prelnx.report.arms.with_contexts) - and each claim check run on each context apart,
so two arms it compares differ only in what the claim is about. One context: the check as it is. Several: each
case labelled with its context; none with a case while the pooled runs would have one: "not measured", naming the
keys the arms it needs differ in."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from prelnx.report.arms import Arm, differing_keys, seed_groups
from prelnx.report.outcome import ClaimOutcome


def decide(check: Callable[..., ClaimOutcome], arms: list[Arm], *args: Any) -> ClaimOutcome:
    """`check(arms, *args)` on each context of `arms` apart, the outcomes merged (cases, notes, premises)."""
    parts = list(seed_groups(arms, lambda arm: arm.context).values())  # in the sweep's order of first appearance
    if len(parts) <= 1:
        return check(arms, *args)
    outcomes = [(group[0].context_label, check(group, *args)) for group in parts]
    merged = dataclasses.replace(outcomes[0][1], cases=[], notes=[], premises=[])
    for label, outcome in outcomes:
        merged.cases += [dataclasses.replace(c, label=f"{label}: {c.label}", family=label) for c in outcome.cases]
        merged.notes += [f"{label}: {note}" for note in outcome.notes]
        merged.premises += outcome.premises
    if not merged.cases:
        pooled = check(arms, *args)
        if pooled.cases:
            keys = ", ".join(differing_keys(arms))
            merged.missing = (f"not measured: the arms this claim compares differ in {keys} (not one of its factors; "
                              "each comparison needs the rest of the config alike)")  # fmt: skip
        else:
            merged.missing = pooled.missing
    return merged


def matched(check: Callable[..., ClaimOutcome]) -> Callable[..., ClaimOutcome]:
    """The check, decided per context (`decide`): every claim table's entries go through this."""
    return lambda arms, *args: decide(check, arms, *args)
