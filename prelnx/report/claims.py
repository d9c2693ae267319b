"""The paper's training claims (Figures 2 and 4) against a sweep's runs: each check picks its arms and compares every
seed's final valid loss (bits per token) with paper.yaml's margin (prelnx.report.stats); arms a sweep lacks make the
claim "not measured". A claim's premise (paper.yaml) is judged like a claim on the same runs (met, failed,
unsettled; one seed: its point value): `trains` (Figure 2a, 2b), every seed of the arm trained at its `margin_bits`;
`fails_or_worse` (Figure 5a), Post-LN with warm-up at Pre-LN's lr diverges in every seed or ends `margin_bits` worse.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from prelnx.report.arms import NO_PLATEAU, Arm, RunState, describe_arm, longest_warmup, loss_sample, pick
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState, not_measured
from prelnx.report.stats import Comparison, Verdict, above, below, compare, within

LOSS = "final valid loss (bits)"
_STATES = {Verdict.HOLDS: PremiseState.MET, Verdict.DOES_NOT_HOLD: PremiseState.FAILED,
           Verdict.NOT_TESTABLE: PremiseState.UNCHECKED}


def premise_state(comparison: Comparison) -> PremiseState:
    if comparison.one_seed and comparison.verdict is not Verdict.NOT_TESTABLE and comparison.estimate == comparison.estimate:
        lo, hi = comparison.region
        return PremiseState.MET if lo < comparison.estimate < hi else PremiseState.FAILED
    return _STATES.get(comparison.verdict, PremiseState.UNSETTLED)


def trains(spec: dict[str, Any], group: list[Arm]) -> Premise:
    """Every seed of the arm trained (its final valid nll spec's margin_bits below the unigram plateau)."""
    statement, margin = spec["statement"], float(spec["margin_bits"])
    if not group:
        return Premise(statement, PremiseState.UNCHECKED, "the sweep has no runs of the arm it needs")
    outcomes = [a.outcome(margin) for a in group]
    if any(o.state is RunState.NOT_JUDGED for o in outcomes):
        return Premise(statement, PremiseState.UNCHECKED, NO_PLATEAU)
    plateaus = [a.plateau for a in group if a.plateau is not None]
    if not plateaus:  # every seed diverged (a plateau is needed only to judge a finished one)
        return Premise(statement, PremiseState.FAILED, f"{describe_arm(group[0])}: all {len(group)} seeds diverged")
    plateau = max(plateaus)
    judged = [o for o in outcomes if o.state is not RunState.NO_VALIDATION]
    ok = sum(o.state is RunState.TRAINED for o in judged)
    state = (PremiseState.UNCHECKED if not judged else PremiseState.MET if ok == len(judged)
             else PremiseState.FAILED if ok == 0 else PremiseState.UNSETTLED)  # fmt: skip
    gaps = [o.final_nll - plateau for o in judged if o.final_nll is not None]
    counts = "; ".join(f"{sum(o.state is s for o in outcomes)} {s.value}" for s in RunState
                       if any(o.state is s for o in outcomes))  # fmt: skip
    mean = f", final valid nll minus the plateau {statistics.fmean(gaps):+.2f} (mean of {len(gaps)})" if gaps else ""
    note = (f"{describe_arm(group[0])}: {len(group)} seed{'s' if len(group) != 1 else ''}: {counts} (trained: final "
            f"valid nll ≥ {margin:g} bit below the unigram plateau, {plateau:.2f} bits from {group[0].plateau_source or 'its data'}){mean}")  # fmt: skip
    return Premise(statement, state, note)


def fails_or_worse(spec: dict[str, Any], at_larger: list[Arm], at_own: list[Arm]) -> Premise:
    """Post-LN with warm-up at the larger lr diverges in every seed, or ends margin_bits worse than at its own lr."""
    statement, margin = spec["statement"], float(spec["margin_bits"])
    if not at_own:
        return Premise(statement, PremiseState.UNCHECKED, "the sweep has no Post-LN with warm-up")
    if not at_larger:
        return Premise(statement, PremiseState.UNCHECKED, f"the sweep has no Post-LN with warm-up at this lr "
                       f"(its Post-LN runs are at lr {', '.join(sorted({f'{a.lr:g}' for a in at_own}))})")  # fmt: skip
    if at_larger[0].lr <= at_own[0].lr:
        return Premise(statement, PremiseState.FAILED, f"this lr is not above Post-LN's own ({at_own[0].lr:g}): "
                       "Post-LN with warm-up trains there by construction")  # fmt: skip
    if all(a.outcome().failed for a in at_larger):
        kinds = sorted({a.outcome().state.value for a in at_larger})
        note = f"{describe_arm(at_larger[0])}: all {len(at_larger)} seeds failed ({', '.join(kinds)})"
        return Premise(statement, PremiseState.MET, note)
    comparison = compare("final valid loss difference (bits)", loss_sample(describe_arm(at_larger[0]), at_larger),
                         loss_sample(describe_arm(at_own[0]), at_own), above(margin))  # fmt: skip
    return Premise(statement, premise_state(comparison), "Post-LN with warm-up, this lr against its own", comparison)


def _case(label: str, a: list[Arm], b: list[Arm], region: tuple[float, float],
          premise: Premise | None = None, at_update: float | None = None) -> Case:  # fmt: skip
    sample_a = loss_sample(describe_arm(a[0]), a, at_update=at_update)
    sample_b = loss_sample(describe_arm(b[0]), b)
    return Case(label, compare(LOSS, sample_a, sample_b, region), premise)


def _edge_premise(arms: list[Arm], spec: dict[str, Any]) -> Premise | None:
    """Figure 2a: with its longest warm-up, Post-LN (Adam) trains at the largest lr of the sweep."""
    lrs = sorted({a.lr for a in pick(arms, layout="post", optimizer="adam") if a.warmup > 0})
    if "premise" not in spec or not lrs:
        return None
    return trains(spec["premise"], longest_warmup(arms, layout="post", optimizer="adam", lr=lrs[-1]))


def postln_adam_needs_warmup(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    outcome = ClaimOutcome(spec["id"])
    premise = _edge_premise(arms, spec)
    for lr in sorted({a.lr for a in arms}):
        without = pick(arms, layout="post", optimizer="adam", warmup=0, lr=lr)
        with_ = longest_warmup(arms, layout="post", optimizer="adam", lr=lr)
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
        with_ = longest_warmup(arms, layout="post", optimizer="sgd", lr=lr)
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
    def rank(group: list[Arm]) -> tuple[float, float]:  # fewest failures first, then the trained seeds' mean
        sample = loss_sample("", group)
        return sample.failure_share, sample.mean if sample.values else math.inf

    return min(groups.values(), key=rank, default=[])


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
