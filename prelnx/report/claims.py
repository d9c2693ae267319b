"""The paper's training claims (Figures 2 and 4): each check picks its arms and compares every seed's final valid loss
(bits) with paper.yaml's margin through prelnx.report.stats; missing arms: "not measured". A premise (`trains`,
`fails_or_worse`) is judged like a claim on the same runs (one seed: its point value). The BERT claim (Section 4,
Figure 5a) on masked-LM runs: per Pre-LN lr, Pre-LN without warm-up's valid loss at the paper's fraction (500k /
700k) of the best Post-LN-with-warm-up arm's updates against Post-LN's final one; beside it the measured fraction
(Pre-LN's latest seed to reach Post-LN's mean final loss)."""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Callable
from typing import Any

from prelnx.paper import paper_data
from prelnx.records.outcome import RunStatus
from prelnx.report.arms import (
    NO_PLATEAU,
    Arm,
    RunState,
    describe_arm,
    first_update_at,
    longest_warmup,
    loss_sample,
    matched,
    outcome_sample,
    pick,
    trained_margin,
)
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState, check_claims
from prelnx.report.stats import Comparison, Verdict, above, below, compare, compare_counts, within

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
    if not at_larger:
        return Premise(statement, PremiseState.UNCHECKED, f"the sweep has no Post-LN with warm-up at this lr "
                       f"(its Post-LN runs are at lr {', '.join(sorted({f'{a.lr:g}' for a in at_own}))})")  # fmt: skip
    if at_larger[0].lr <= at_own[0].lr:
        return Premise(statement, PremiseState.FAILED, f"this lr is not above Post-LN's own ({at_own[0].lr:g}): "
                       "Post-LN with warm-up trains there by construction")  # fmt: skip
    if all(a.outcome().state in (RunState.FAILED, RunState.DIVERGED) for a in at_larger):
        kinds = sorted({a.outcome().state.value for a in at_larger})
        note = f"{describe_arm(at_larger[0])}: all {len(at_larger)} seeds failed ({', '.join(kinds)})"
        return Premise(statement, PremiseState.MET, note)
    comparison = compare("final valid loss difference (bits)", loss_sample(describe_arm(at_larger[0]), at_larger),
                         loss_sample(describe_arm(at_own[0]), at_own), above(margin))  # fmt: skip
    return Premise(statement, premise_state(comparison), "Post-LN with warm-up, this lr against its own", comparison)


def loss_case(label: str, a: list[Arm], b: list[Arm], region: tuple[float, float],
          premise: Premise | None = None, at_update: float | None = None) -> Case:  # fmt: skip
    """a's loss (final, or at `at_update`) minus b's final loss. Read at an update between validations, the
    verdict must survive both reads - the validation before it and the one after: a decided verdict the other read
    does not share is inconclusive, both reads named."""
    sample_b = loss_sample(describe_arm(b[0]), b)
    before = compare(LOSS, loss_sample(describe_arm(a[0]), a, at_update=at_update), sample_b, region)
    if at_update is None or before.verdict not in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD):
        return Case(label, before, premise)
    after = compare(LOSS, loss_sample(describe_arm(a[0]), a, at_update=at_update, after=True), sample_b, region)
    if after.verdict is before.verdict or after.a.read == before.a.read:
        return Case(label, before, premise)
    why = (f"update {at_update:.0f} lies between validations: read at {before.a.read} it {before.verdict.value}, at "
           f"{after.a.read or 'no later validation'} it {after.verdict.value}")  # fmt: skip
    return Case(label, dataclasses.replace(before, verdict=Verdict.INCONCLUSIVE, reason=why, p_outside=1.0), premise)


def short_warmup_large_lr(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """Post-LN (Adam) with its shortest warm-up, at its largest lr against its smallest; the premise (Figure 2a) read
    at the larger lr (and every other factor of it): with its longest warm-up, Post-LN trains at this lr - so a
    failure with the short warm-up there is the schedule's, not the lr's."""
    posts = [a for a in pick(arms, layout="post", optimizer="adam") if a.warmup > 0]
    warmups, lrs = sorted({a.warmup for a in posts}), sorted({a.lr for a in posts})
    if len(warmups) < 2 or len(lrs) < 2:
        return ClaimOutcome(spec["id"], missing="needs Post-LN (Adam) with two warm-up lengths at two lrs")
    large = pick(arms, layout="post", optimizer="adam", warmup=warmups[0], lr=lrs[-1])
    small = pick(arms, layout="post", optimizer="adam", warmup=warmups[0], lr=lrs[0])
    if not large or not small:
        return ClaimOutcome(spec["id"], missing=f"needs Post-LN with {warmups[0]} warm-up at lr {lrs[0]:g} and "
                            f"{lrs[-1]:g}")  # fmt: skip
    edge = longest_warmup(arms, layout="post", optimizer="adam", lr=lrs[-1])
    premise = trains(spec["premise"], edge) if "premise" in spec else None
    case = loss_case(f"{warmups[0]} warm-up", large, small, above(spec["margin_bits"]), premise)
    return ClaimOutcome(spec["id"], [case])


def _needs_warmup(arms: list[Arm], spec: dict[str, Any], optimizer: str, premise_sweep: bool = False) -> ClaimOutcome:
    """Per lr, Post-LN without warm-up against its longest warm-up, the premise (Figure 2a) read on the latter;
    `premise_sweep`: a sweep with warm-up only (SGD's, to choose the lr) has the premise checked alone."""
    outcome = ClaimOutcome(spec["id"])
    for lr in sorted({a.lr for a in pick(arms, layout="post", optimizer=optimizer)}):
        without = pick(arms, layout="post", optimizer=optimizer, warmup=0, lr=lr)
        with_ = longest_warmup(arms, layout="post", optimizer=optimizer, lr=lr)
        premise = trains(spec["premise"], with_) if "premise" in spec and with_ else None
        if without and with_:
            outcome.cases.append(loss_case(f"lr {lr:g}", without, with_, above(spec["margin_bits"]), premise))
        elif premise is not None and premise_sweep:
            outcome.premises.append(premise)
    if not outcome.cases and outcome.premises:
        outcome.missing = "the sweep has no Post-LN SGD run without warm-up at these lrs: only the premise is checked"
    return outcome


postln_adam_needs_warmup = functools.partial(_needs_warmup, optimizer="adam")
postln_sgd_needs_warmup = functools.partial(_needs_warmup, optimizer="sgd", premise_sweep=True)


COMPARATOR = "The comparator trained: Post-LN with warm-up, at the lr it is compared at, trains in every seed."


def comparator_trained(group: list[Arm], statement: str = COMPARATOR, strict: bool = False) -> Premise:
    """"Matches X" needs X to have trained (trains, at paper.yaml's trained_margin_bits); `strict`: a seed that failed
    makes the premise fail (not unsettled)."""
    premise = trains({"statement": statement, "margin_bits": trained_margin()}, group)
    some = strict and premise.state is PremiseState.UNSETTLED  # some seeds trained, not all
    return dataclasses.replace(premise, state=PremiseState.FAILED) if some else premise


def failures_case(label: str, mine: list[Arm], base: list[Arm], margin: float | None, base_name: str,
                  statement: str, mine_name: str | None = None) -> Case:  # fmt: skip
    """`mine` fails less often than `base` (the failure counts alone, Fisher's exact test: stats.compare_counts);
    premise: `base` fails in at least one seed (else there is nothing to fail less than: not testable). `margin`: the
    claim's own trained margin (None: paper.yaml's)."""
    mine_name = mine_name or describe_arm(mine[0], settings=False)
    said = f" (trained: final valid nll ≥ {margin:g} bit below the plateau, this claim's own margin)" if margin else ""
    method = dataclasses.replace(outcome_sample(describe_arm(mine[0]), mine, lambda arm: (0.0, 0), margin), read="")
    other = dataclasses.replace(outcome_sample(describe_arm(base[0]), base, lambda arm: (0.0, 0), margin), read="")
    state = PremiseState.MET if other.failed else PremiseState.FAILED
    premise = Premise(statement, state, f"{base_name} failed {other.failed}/{other.failed + other.measured}; "
                      f"{mine_name} {method.failed}/{method.failed + method.measured}{said}")
    return Case(label, compare_counts("failed runs", method, other), premise)


def _preln_without_warmup(arms: list[Arm], optimizer: str = "adam") -> list[Arm]:
    pre = pick(arms, layout="pre", optimizer=optimizer, warmup=0)
    return [a for a in pre if a.lr == max(a.lr for a in pre)] if pre else []


def preln_without_warmup_matches(arms: list[Arm], spec: dict[str, Any], faster: bool = False) -> ClaimOutcome:
    """Pre-LN's final valid loss against Post-LN with warm-up's at its lr; `faster` (Figure 4's "converges faster"):
    Pre-LN's valid loss at the spec's `fraction` (9/15) of Post-LN's updates against Post-LN's final."""
    # the comparator by a rule of the design, not of the outcomes (so it never changes as seeds are added): Post-LN
    # (Adam) with its longest warm-up at Pre-LN (Adam) without warm-up's largest lr
    pre = _preln_without_warmup(arms)
    post = longest_warmup(arms, layout="post", optimizer="adam", lr=pre[0].lr) if pre else []
    if not pre or not post:
        return ClaimOutcome(spec["id"], missing="needs Pre-LN without warm-up and Post-LN with warm-up at its lr")
    label, at = f"against Post-LN with warm-up at lr {pre[0].lr:g}", None
    validated = [int(a.rows[-1]["num_updates"]) for a in post if a.rows]
    if faster and not validated:  # every Post-LN seed diverged before its first validation: no update count
        label = "Pre-LN's final against Post-LN's (Post-LN never validated)"
    elif faster:
        post_updates = max(validated)
        at = spec["fraction"] * post_updates
        label = f"Pre-LN at update ≤ {at:.0f} ({spec['fraction']:.0%} of Post-LN's {post_updates}) against Post-LN's final"
    case = loss_case(label, pre, post, below(spec["margin_bits"]), comparator_trained(post), at_update=at)
    return ClaimOutcome(spec["id"], [case])


preln_converges_faster = functools.partial(preln_without_warmup_matches, faster=True)


def layout_matters_more_than_optimizer(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """At Pre-LN RAdam's (largest) lr: Pre-LN Adam against RAdam, and Post-LN Adam against Pre-LN Adam - every arm at
    that one lr (the lr is no factor of this claim: arms at other lrs are never its comparators)."""
    radam = _preln_without_warmup(arms, "radam")
    lr = radam[0].lr if radam else None
    adam = pick(arms, layout="pre", optimizer="adam", warmup=0, lr=lr)
    post = pick(arms, layout="post", optimizer="adam", warmup=0, lr=lr)
    if not adam or not radam or not post:
        return ClaimOutcome(spec["id"], missing="needs Pre-LN with Adam and RAdam and Post-LN with Adam, all without "
                            "warm-up, at one lr")  # fmt: skip
    margin = spec["margin_bits"]
    return ClaimOutcome(spec["id"], [
        loss_case("optimizer (Pre-LN, no warm-up)", adam, radam, within(margin)),
        loss_case("layout (Adam, no warm-up)", post, adam, above(margin)),
    ])  # fmt: skip


TRAINING_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {  # each on matched arms only
    "postln_adam_needs_warmup": matched(postln_adam_needs_warmup),
    "short_warmup_large_lr": matched(short_warmup_large_lr),
    "postln_sgd_needs_warmup": matched(postln_sgd_needs_warmup),
    "preln_without_warmup_matches": matched(preln_without_warmup_matches),
    "preln_converges_faster": matched(preln_converges_faster),
    "layout_matters_more_than_optimizer": matched(layout_matters_more_than_optimizer),
}


# The BERT claim (Figure 5a), on the masked-LM runs: Pre-LN's updates to reach the valid loss Post-LN reaches, as a
# fraction of Post-LN's (prelnx/paper.yaml's figure5a: 500k / 700k).
PAPER_FRACTION = paper_data()["figure5a"]["preln_updates"] / paper_data()["figure5a"]["postln_updates"]


def fraction_of_updates(pre: list[Arm], post: list[Arm]) -> tuple[float | None, float, int, int | None]:
    """(fraction, Post-LN's final loss, Post-LN's updates, Pre-LN's updates to reach it); None if never reached."""
    target = statistics.fmean(a.rows[-1]["valid_loss"] for a in post)
    post_updates = max(int(a.rows[-1]["num_updates"]) for a in post)
    reached = [first_update_at(a, target) for a in pre]
    if any(update is None for update in reached):
        return None, target, post_updates, None
    pre_updates = max(update for update in reached if update is not None)
    return pre_updates / post_updates, target, post_updates, pre_updates


def _masked_lm(arms: list[Arm], **criteria: object) -> list[Arm]:
    return [a for a in pick(arms, task="masked_lm", **criteria) if a.rows or a.diverged]


def _fraction_note(lr: float, pre: list[Arm], post: list[Arm]) -> str:
    fraction, target, post_updates, pre_updates = fraction_of_updates([a for a in pre if a.rows], post)
    if fraction is not None:
        return (f"Pre-LN lr {lr:g} reaches Post-LN's final valid loss {target:.3f} ({post_updates} updates) after "
                f"{pre_updates}: fraction **{fraction:.2f}** (paper {PAPER_FRACTION:.2f})")  # fmt: skip
    reverse, pre_final, _, post_at = fraction_of_updates(post, [a for a in pre if a.rows and a.final() is not None]) \
        if any(a.final() is not None for a in pre) else (None, 0.0, 0, None)  # fmt: skip
    behind = "" if reverse is None else f"; Post-LN reached Pre-LN's final {pre_final:.3f} after {post_at} of its updates"
    return f"Pre-LN lr {lr:g}: never reached Post-LN's final valid loss {target:.3f} ({post_updates} updates){behind}"


def preln_fewer_updates(arms: list[Arm], spec: dict[str, Any]) -> ClaimOutcome:
    """Per Pre-LN lr (the paper's Pre-LN runs at 3x Post-LN's lr; a sweep may try others): a case and the fraction."""
    posts = [a for a in _masked_lm(arms, layout="post") if a.warmup > 0]
    pres = _masked_lm(arms, layout="pre", warmup=0)
    finished_posts = [a for a in posts if a.status == RunStatus.FINISHED and a.final() is not None]
    if not pres or not finished_posts:
        return ClaimOutcome(spec["id"], missing="needs masked-LM runs of Post-LN with warm-up (finished) and Pre-LN "
                            "without")  # fmt: skip
    by_lr = [[a for a in finished_posts if a.lr == lr] for lr in dict.fromkeys(a.lr for a in finished_posts)]
    post = min(by_lr, key=lambda group: statistics.fmean(a.final() or 0.0 for a in group))
    post_updates = max(int(a.rows[-1]["num_updates"]) for a in post)
    at = PAPER_FRACTION * post_updates
    outcome = ClaimOutcome(spec["id"])
    for lr in sorted({a.lr for a in pres}, reverse=True):
        group = [a for a in pres if a.lr == lr]
        at_lr = [a for a in posts if a.lr == lr]
        premise = fails_or_worse(spec["premise"], at_lr, post) if "premise" in spec else None
        comparison = compare("valid loss (bits)", loss_sample(f"{describe_arm(group[0])} at update ≤ {at:.0f}", group, at_update=at),
                             loss_sample(f"{describe_arm(post[0])} final", post), below(spec["margin_bits"]))  # fmt: skip
        outcome.cases.append(Case(f"Pre-LN lr {lr:g}", comparison, premise))
        outcome.notes.append(_fraction_note(lr, group, post))
    return outcome


BERT_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {  # on matched arms only
    "bert_preln_fewer_updates": matched(preln_fewer_updates),
}


def training_arms(arms: list[Arm]) -> list[Arm]:
    """The runs the training claims read: a sweep's translation runs, else its decoder-only LM runs."""
    return [a for a in arms if a.task == "translation"] or [a for a in arms if a.task == "language_model"]


def paper_outcomes(arms: list[Arm], claims: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, ClaimOutcome]]:
    """paper.yaml's claims a sweep is judged on, with their outcomes: the training claims on its `training_arms`, or
    the BERT claim on a masked-LM sweep (the translation claims do not apply)."""
    trained = training_arms(arms)
    listed, checks = (claims["bert"], BERT_CHECKS) if arms and not trained else (claims["training"], TRAINING_CHECKS)
    return listed, check_claims(listed, checks, trained or arms)
