"""The norm placements on the decoder-only language model (issue 32): each placement's `lm_claims` (methods.yaml) on a
language-model sweep, only what valid losses and failed runs decide (else kind `not_testable_here`). Kinds besides
prelnx.report.warmup_free's: lr_sensitivity (per warm-up setting, each seed's |final loss at the largest lr - at the
smallest|, failed at either: a failure, the method's minus Pre-LN's below `margin_bits`); fewer_failures (per warm-up
and lr, the method's seeds by outcome against Pre-LN's there, Fisher's exact test: stats.compare_counts, Holm over
the cases; premise per case: Pre-LN fails at least once there)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from prelnx.paper import methods_data
from prelnx.report.arms import NO_PLATEAU, Arm, RunState, describe_arm, matched, outcome_sample, pick
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState, not_measured
from prelnx.report.render import method_claims_table, ranking_table
from prelnx.report.stats import Sample, below, compare, compare_counts
from prelnx.report.warmup_free import CHECKS as METHOD_CHECKS
from prelnx.report.warmup_free import check_methods, ranking

TASK = "language_model"


def _gaps(arms: list[Arm], layout: str, warmup: int, lrs: tuple[float, float]) -> Sample:
    """Per seed at both lrs: |final loss at the larger lr - at the smaller|; failed or missing at either: counted."""
    low, high = (pick(arms, layout=layout, warmup=warmup, lr=lr) for lr in lrs)
    by_seed = {a.seed: a for a in low}
    values, failed, diverged, missing, untestable, unjudged = [], 0, 0, 0, "", 0
    for arm in sorted((a for a in high if a.seed in by_seed), key=lambda a: a.seed):
        states = [a.outcome().state for a in (by_seed[arm.seed], arm)]
        if RunState.NOT_JUDGED in states:
            untestable, unjudged = NO_PLATEAU, unjudged + 1
        elif RunState.DIVERGED in states or RunState.FAILED in states:
            failed, diverged = failed + 1, diverged + (RunState.DIVERGED in states)
        elif RunState.NO_VALIDATION in states:
            missing += 1
        else:
            values.append(abs((arm.final() or 0.0) - (by_seed[arm.seed].final() or 0.0)))
    label = f"{describe_arm(high[0]).split(' lr ')[0]}, {warmup or 'no'} warm-up" if high else layout
    return Sample(f"{label}: loss gap between lr {lrs[0]:g} and {lrs[1]:g}", tuple(values), failed, diverged,
                  missing, untestable=untestable, failure="failed at either lr", unjudged=unjudged)  # fmt: skip


def lr_sensitivity(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} and Pre-LN at two lrs")
    lrs = sorted({a.lr for a in pick(arms, layout=layout)} & {a.lr for a in pick(arms, layout="pre")})
    if len(lrs) < 2:
        return outcome
    pair = (lrs[0], lrs[-1])
    for warmup in sorted({a.warmup for a in pick(arms, layout=layout)}):
        method, pre = _gaps(arms, layout, warmup, pair), _gaps(arms, "pre", warmup, pair)
        if method.n and pre.n:
            metric = "absolute gap of final valid losses between the two lrs (bits)"
            label = f"{warmup or 'no'} warm-up, lr {pair[0]:g} vs {pair[1]:g}"
            outcome.cases.append(Case(label, compare(metric, method, pre, below(spec["margin_bits"]))))
    return outcome


def fewer_failures(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    """Failure counts of matched arms: the layout against Pre-LN at one warm-up and lr, one case each (Holm over
    them for "does not hold", every case for "holds"); premise per case: Pre-LN fails in at least one of its seeds
    there (else there is nothing to fail less than)."""
    margin = spec.get("trained_margin_bits")
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} and Pre-LN at one warm-up "
                           "and lr")  # fmt: skip
    said = f" (trained: final valid nll ≥ {margin:g} bit below the plateau, this claim's own margin)" if margin else ""
    settings = sorted({(a.warmup, a.lr) for a in pick(arms, layout=layout)}
                      & {(a.warmup, a.lr) for a in pick(arms, layout="pre")})  # fmt: skip
    for warmup, lr in settings:
        mine, pre = pick(arms, layout=layout, warmup=warmup, lr=lr), pick(arms, layout="pre", warmup=warmup, lr=lr)
        method = dataclasses.replace(outcome_sample(describe_arm(mine[0]), mine, lambda arm: (0.0, 0), margin), read="")
        base = dataclasses.replace(outcome_sample(describe_arm(pre[0]), pre, lambda arm: (0.0, 0), margin), read="")
        state = PremiseState.MET if base.failed else PremiseState.FAILED
        premise = Premise("Pre-LN fails in at least one seed at this warm-up and lr", state,
                          f"Pre-LN failed {base.failed}/{base.failed + base.measured}; "
                          f"{describe_arm(mine[0]).split(' lr ')[0]} "
                          f"{method.failed}/{method.failed + method.measured}{said}")  # fmt: skip
        label = f"{warmup or 'no'} warm-up, lr {lr:g}"
        outcome.cases.append(Case(label, compare_counts("failed runs", method, base), premise))
    return outcome


def not_testable_here(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    return not_measured(spec["id"], f"not testable from this sweep (valid losses and failures only): {spec['decided_by']}")


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any]], ClaimOutcome]] = {
    "beats_preln": METHOD_CHECKS["beats_preln"],
    "matches_postln": METHOD_CHECKS["matches_postln"],
    "no_warmup": METHOD_CHECKS["no_warmup"],
    "lr_sensitivity": lr_sensitivity,
    "fewer_failures": fewer_failures,
    "not_testable_here": not_testable_here,
}
CHECKS = {kind: matched(check) for kind, check in CHECKS.items()}  # each on matched arms only


check_placements = functools.partial(check_methods, task=TASK, key="lm_claims", checks=CHECKS)  # `lm_claims` only


PLACEMENTS_INTRO = [
    "Each norm placement's authors' claims (prelnx/methods.yaml, `lm_claims`, with the paper and code) checked on",
    "this language-model sweep like the paper's: per lr (or per warm-up setting), the two arms' per-seed values,",
    "their difference with its 95 % interval against the claim's margin, one of the five verdicts. Only what final",
    "valid losses and failed runs decide is checked; a claim about hidden states, gradients or loss spikes is listed",
    "with what would decide it. Then every arm ranked by its mean final valid loss.",
]


def placements_section(arms: list[Arm], figures_dir: Any, report_dir: Any,
                       methods: list[dict[str, Any]] | None = None) -> list[str]:  # fmt: skip
    """The report's section for a language-model sweep's arms (none: no section); `methods`: methods.yaml's as
    frozen in sweep.json (default: as the file reads now)."""
    if not arms:
        return []
    methods = methods_data() if methods is None else methods
    rows = ranking(arms, task=TASK)
    return ["## Norm placements on the language model", "", *PLACEMENTS_INTRO, "",
            "### The placements' authors' claims", "", *method_claims_table(check_placements(arms, methods)), "",
            "### Ranking by final valid loss", "", *ranking_table(rows), ""]  # fmt: skip
