"""The paper's translation claims (Figures 2 and 4) checked against a sweep's runs.

Each check picks the arms it compares (by layout, optimizer, warm-up and lr, read from each run's config.yaml),
takes every seed of each, and compares their final validation losses (fairseq's, in bits per token) with a 95 %
interval against the claim's practical margin from paper.yaml (prelnx.report.stats): the seeds that trained by
their losses, the seeds that failed by their counts (an exact test), never at an imputed loss. A claim with a premise (paper.yaml) has it checked on the same sweep
(prelnx.report.premises). Arms a sweep lacks make the claim "not measured", never a guess. The outcome is typed
(prelnx.report.outcome); prelnx.report.render turns it into words.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from prelnx.report.arms import Arm, describe_arm, loss_sample, pick
from prelnx.report.outcome import Case, ClaimOutcome, Premise, not_measured
from prelnx.report.premises import trains
from prelnx.report.stats import above, below, compare, within

LOSS = "final valid loss (bits)"


def _case(label: str, a: list[Arm], b: list[Arm], region: tuple[float, float],
          premise: Premise | None = None, at_update: float | None = None) -> Case:  # fmt: skip
    sample_a = loss_sample(describe_arm(a[0]), a, at_update=at_update)
    sample_b = loss_sample(describe_arm(b[0]), b)
    return Case(label, compare(LOSS, sample_a, sample_b, region), premise)


def _longest_warmup(arms: list[Arm], **criteria: Any) -> list[Arm]:
    warmups = sorted({a.warmup for a in pick(arms, **criteria)} - {0})
    return pick(arms, **criteria, warmup=warmups[-1]) if warmups else []


def _edge_premise(arms: list[Arm], spec: dict[str, Any]) -> Premise | None:
    """Figure 2a: with its longest warm-up, Post-LN (Adam) trains at the largest lr of the sweep."""
    lrs = sorted({a.lr for a in pick(arms, layout="post", optimizer="adam") if a.warmup > 0})
    if "premise" not in spec or not lrs:
        return None
    return trains(spec["premise"], _longest_warmup(arms, layout="post", optimizer="adam", lr=lrs[-1]))


def postln_adam_needs_warmup(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    outcome = ClaimOutcome(spec["id"])
    premise = _edge_premise(arms, spec)
    for lr in sorted({a.lr for a in arms}):
        without = pick(arms, layout="post", optimizer="adam", warmup=0, lr=lr)
        with_ = _longest_warmup(arms, layout="post", optimizer="adam", lr=lr)
        if without and with_:
            outcome.cases.append(_case(f"lr {lr:g}", without, with_, above(spec["margin_bits"]), premise))
    return outcome


def short_warmup_large_lr(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    posts = [a for a in pick(arms, layout="post", optimizer="adam") if a.warmup > 0]
    warmups, lrs = sorted({a.warmup for a in posts}), sorted({a.lr for a in posts})
    if len(warmups) < 2 or len(lrs) < 2:
        return not_measured(spec["id"], "needs Post-LN (Adam) with two warm-up lengths at two lrs")
    large = pick(arms, layout="post", optimizer="adam", warmup=warmups[0], lr=lrs[-1])
    small = pick(arms, layout="post", optimizer="adam", warmup=warmups[0], lr=lrs[0])
    if not large or not small:
        return not_measured(spec["id"], f"needs Post-LN with {warmups[0]} warm-up at lr {lrs[0]:g} and {lrs[-1]:g}")
    case = _case(f"{warmups[0]} warm-up", large, small, above(spec["margin_bits"]),
                 _edge_premise(arms, spec))  # fmt: skip
    return ClaimOutcome(spec["id"], [case])


def postln_sgd_needs_warmup(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    outcome = ClaimOutcome(spec["id"])
    for lr in sorted({a.lr for a in pick(arms, layout="post", optimizer="sgd")}):
        without = pick(arms, layout="post", optimizer="sgd", warmup=0, lr=lr)
        with_ = _longest_warmup(arms, layout="post", optimizer="sgd", lr=lr)
        premise = trains(spec["premise"], with_) if "premise" in spec and with_ else None
        if without and with_:
            outcome.cases.append(_case(f"lr {lr:g}", without, with_, above(spec["margin_bits"]), premise))
        elif premise is not None:  # a premise sweep: SGD with warm-up only, to choose the lr
            outcome.premises.append(premise)
    if not outcome.cases and outcome.premises:
        outcome.missing = "the sweep has no Post-LN SGD run without warm-up at these lrs: only the premise is checked"
    return outcome


def _best_postln_with_warmup(arms: list[Arm]) -> list[Arm]:
    groups: dict[tuple[int, float], list[Arm]] = {}
    for arm in pick(arms, layout="post", optimizer="adam"):
        if arm.warmup > 0:
            groups.setdefault((arm.warmup, arm.lr), []).append(arm)
    if not groups:
        return []
    def rank(group: list[Arm]) -> tuple[float, float]:  # fewest failures first, then the trained seeds' mean
        sample = loss_sample("", group)
        share = sample.failed / max(1, sample.failed + sample.measured)
        return share, sample.mean if sample.values else math.inf

    return min(groups.values(), key=rank)


def _preln_without_warmup(arms: list[Arm], optimizer: str = "adam") -> list[Arm]:
    pre = pick(arms, layout="pre", optimizer=optimizer, warmup=0)
    return [a for a in pre if a.lr == max(a.lr for a in pre)] if pre else []


def preln_without_warmup_matches(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    pre, post = _preln_without_warmup(arms), _best_postln_with_warmup(arms)
    if not pre or not post:
        return not_measured(spec["id"])
    case = _case("against the best Post-LN with warm-up", pre, post, below(spec["margin_bits"]))
    return ClaimOutcome(spec["id"], [case])


def preln_converges_faster(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """Pre-LN's valid loss at the paper's fraction (9/15) of Post-LN's updates against Post-LN's final one."""
    pre, post = _preln_without_warmup(arms), _best_postln_with_warmup(arms)
    if not pre or not post:
        return not_measured(spec["id"])
    validated = [int(a.rows[-1]["num_updates"]) for a in post if a.rows]
    if not validated:  # every Post-LN seed diverged before its first validation: no update count to take a share of
        label = "Pre-LN's final against Post-LN's (Post-LN never validated)"
        return ClaimOutcome(spec["id"], [_case(label, pre, post, below(spec["margin_bits"]))])
    post_updates = max(validated)
    at = spec["fraction"] * post_updates
    label = f"Pre-LN at update ≤ {at:.0f} ({spec['fraction']:.0%} of Post-LN's {post_updates}) against Post-LN's final"
    case = _case(label, pre, post, below(spec["margin_bits"]), at_update=at)
    return ClaimOutcome(spec["id"], [case])


def layout_matters_more_than_optimizer(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    adam, radam = _preln_without_warmup(arms), _preln_without_warmup(arms, "radam")
    post = pick(arms, layout="post", optimizer="adam", warmup=0)
    if not adam or not radam or not post:
        return not_measured(spec["id"])
    lr = radam[0].lr
    adam = [a for a in pick(arms, layout="pre", optimizer="adam", warmup=0) if a.lr == lr] or adam
    post = [a for a in post if a.lr == lr] or [a for a in post if a.lr == max(p.lr for p in post)]
    margin = spec["margin_bits"]
    return ClaimOutcome(spec["id"], [
        _case("optimizer (Pre-LN, no warm-up)", adam, radam, within(margin)),
        _case("layout (Adam, no warm-up)", post, adam, above(margin)),
    ])  # fmt: skip


TRAINING_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {
    "postln_adam_needs_warmup": postln_adam_needs_warmup,
    "short_warmup_large_lr": short_warmup_large_lr,
    "postln_sgd_needs_warmup": postln_sgd_needs_warmup,
    "preln_without_warmup_matches": preln_without_warmup_matches,
    "preln_converges_faster": preln_converges_faster,
    "layout_matters_more_than_optimizer": layout_matters_more_than_optimizer,
}
