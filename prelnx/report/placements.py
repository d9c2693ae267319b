"""The norm placements on the decoder-only language model (issue 32): each placement's `lm_claims` (methods.yaml) on a
language-model sweep, only what valid losses and failed runs decide (else kind `not_testable_here`), by the kinds of
prelnx.report.warmup_free and two of its own (`lr_sensitivity`, `fewer_failures`). And the later methods' claims a
sweep is judged on, translation's and the language model's, and their sections of the report, in one place
(`method_claims`, `methods_sections`) for the report and a sequential sweep's looks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.paper import methods_data, norm_variants_data
from prelnx.report.arms import NO_PLATEAU, Arm, RunState, describe_arm, matched, pick
from prelnx.report.claims import failures_case
from prelnx.report.norm_claims import has_variants, layernorm_arms, methods_on_variants
from prelnx.report.outcome import Case, ClaimOutcome
from prelnx.report.render import method_claims_table, ranking_table
from prelnx.report.stats import Sample, below, compare
from prelnx.report.warmup_free import CHECKS as METHOD_CHECKS
from prelnx.report.warmup_free import (
    METHOD_LAYOUTS,
    MethodClaims,
    RankRow,
    check_methods,
    has_methods,
    plot_ranking,
    ranking,
    user_methods,
)

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
    label = f"{describe_arm(high[0], settings=False)}, {warmup or 'no'} warm-up" if high else layout
    return Sample(f"{label}: loss gap between lr {lrs[0]:g} and {lrs[1]:g}", tuple(values), failed, diverged,
                  missing, untestable=untestable, failure="failed at either lr", unjudged=unjudged)  # fmt: skip


def lr_sensitivity(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    """Per warm-up setting, each seed's |final loss at the largest lr - at the smallest| (failed at either: a failure,
    `_gaps`), the method's minus Pre-LN's below `margin_bits`."""
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
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} and Pre-LN at one warm-up "
                           "and lr")  # fmt: skip
    settings = sorted({(a.warmup, a.lr) for a in pick(arms, layout=layout)}
                      & {(a.warmup, a.lr) for a in pick(arms, layout="pre")})  # fmt: skip
    for warmup, lr in settings:
        mine, pre = pick(arms, layout=layout, warmup=warmup, lr=lr), pick(arms, layout="pre", warmup=warmup, lr=lr)
        outcome.cases.append(failures_case(f"{warmup or 'no'} warm-up, lr {lr:g}", mine, pre,
                                           spec.get("trained_margin_bits"), "Pre-LN",
                                           "Pre-LN fails in at least one seed at this warm-up and lr"))  # fmt: skip
    return outcome


def not_testable_here(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    return ClaimOutcome(spec["id"], missing=f"not testable from this sweep (valid losses and failures only): "
                        f"{spec['decided_by']}")  # fmt: skip


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any]], ClaimOutcome]] = {  # each on matched arms only
    **{kind: METHOD_CHECKS[kind] for kind in ("beats_preln", "matches_postln", "no_warmup")},  # matched already
    **{check.__name__: matched(check) for check in (lr_sensitivity, fewer_failures, not_testable_here)},  # by name
}


check_placements = functools.partial(check_methods, task=TASK, key="lm_claims", checks=CHECKS)  # `lm_claims` only


PLACEMENTS_INTRO = [
    "Each norm placement's authors' claims (prelnx/methods.yaml, `lm_claims`, with the paper and code) checked on",
    "this language-model sweep like the paper's: per lr (or per warm-up setting), the two arms' per-seed values,",
    "their difference with its 95 % interval against the claim's margin, one of the five verdicts. Only what final",
    "valid losses and failed runs decide is checked; a claim about hidden states, gradients or loss spikes is listed",
    "with what would decide it. Then every arm ranked by its mean final valid loss.",
]


WARMUP_FREE_INTRO = [
    "Each method's authors' claims (prelnx/methods.yaml, with the paper and repository) checked like the paper's:",
    "per optimizer and lr, the two arms' final valid losses over seeds, their difference with its 95 % interval",
    "against the claim's margin, and one of the five verdicts above; ReZero's \"converges faster\" counts, as its",
    "paper does, the updates each seed needs to reach a fixed valid loss stated in methods.yaml before the runs, and",
    "tests the paper's number, not its sign: ReZero's updates over Post-LN-with-warm-up's against 1 / the paper's",
    "speed-up within methods.yaml's factor - the ratio of the arms' geometric means, its 95 % interval Welch's t on",
    "the seeds' ln(updates), widened by the validation grain's resolution on the log scale (a seed reaching it at",
    "update u of validations K apart is known to ln(u / (u - K + 1))); a seed that never reaches it is counted, not",
    "given a count. A seed counts for what its own curve did: one that reached the target reached it, whatever its",
    "final loss or outcome class (trained, failed to train, diverged), which is shown beside it and never read in",
    "its place; a failed seed's loss still never enters a quality comparison. Then every arm ranked by its mean",
    "final valid loss over its trained seeds (a seed that failed counted, never given a loss) with its 95 % t",
    "interval, and how many of its seeds reached the target loss - Post-LN with warm-up's mean final valid loss at",
    "the same optimizer and lr - after how many updates (the first validation at or below it).",
]


def method_claims(
    translation: list[Arm], lm: list[Arm], frozen: dict[str, Any] | None = None
) -> tuple[list[MethodClaims] | None, list[MethodClaims] | None]:
    """The later methods' claims decided on a sweep's runs: methods.yaml's and each user layout file's on its
    translation runs (None: no later method among them), the placements' `lm_claims` on its language-model runs
    (None: no such run). `frozen`: the claims as sweep.json froze them (prelnx.records.frozen_claims); None: as the
    files read now."""
    methods = methods_data() if frozen is None else frozen["methods"]
    if has_variants(translation + lm):  # a variant study (issue 48): its protocol's methods claims only
        methods = methods_on_variants(methods, norm_variants_data()["methods_claims"])
    translation, lm = layernorm_arms(translation), layernorm_arms(lm)  # the variants' own claims: norm_claims
    users = user_methods(translation, None if frozen is None else frozen["layout_files"])  # docs/your_layout.md
    return (check_methods(translation, methods + users) if has_methods(translation) else None,
            check_placements(lm, methods) if lm else None)


def _section(title: str, intro: list[str], claims: str, methods: list[MethodClaims], rows: list[RankRow]) -> list[str]:
    ranked = ["### Ranking by final valid loss", "", *ranking_table(rows), ""]
    return [title, "", *intro, "", claims, "", *method_claims_table(methods), "", *ranked]


def methods_sections(
    translation: list[Arm], lm: list[Arm], figures_dir: Path, report_dir: Path, frozen: dict[str, Any] | None = None
) -> list[str]:
    """The report's sections on the later methods (`method_claims`; none in the sweep: no section), each their claims
    and then every arm ranked by final valid loss: Admin, T-Fixup, ReZero, B2T, DeepNorm and a user's layouts beside
    Post-LN and Pre-LN on the translation runs (issue 24, with the ranking's figure), the norm placements on the
    language-model runs (issue 32)."""
    methods, placements = method_claims(translation, lm, frozen)
    translation, lm = layernorm_arms(translation), layernorm_arms(lm)  # ranked as their claims read them
    lines = []
    if methods is not None:
        title, claims = "## Warm-up-free methods", "### The methods' authors' claims"
        if not any(a.layout in METHOD_LAYOUTS for a in translation):  # the paper's layouts and a user's: its claims
            title, claims = "## Your layouts' claims", "### The layout files' claims, and methods.yaml's for the arms"
        rows = ranking(translation)
        lines += _section(title, WARMUP_FREE_INTRO, claims, methods, rows)
        if rows:
            figure = plot_ranking(rows, figures_dir / "warmup_free.png")
            lines += [f"![warmup_free]({figure.relative_to(report_dir).as_posix()})", ""]
    if placements is not None:
        lines += _section("## Norm placements on the language model", PLACEMENTS_INTRO,
                          "### The placements' authors' claims", placements, ranking(lm, task=TASK))
    return lines
