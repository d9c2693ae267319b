"""The paper's BERT claim (Section 4, Figure 5a) on a sweep's masked-LM runs: Pre-LN without warm-up reaches
Post-LN with warm-up's final valid loss after a fraction (500k / 700k in the paper) of its updates. Per Pre-LN lr a
case compares Pre-LN's valid loss at that fraction of the best Post-LN-with-warm-up arm's updates with Post-LN's
final one, with the premise that Post-LN with warm-up cannot use Pre-LN's lr (claims.fails_or_worse); beside it
the measured fraction (Pre-LN's latest seed to reach Post-LN's mean final loss).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from prelnx.paper import figure5a_fraction
from prelnx.records.outcome import RunStatus
from prelnx.report.arms import Arm, describe_arm, first_update_at, loss_sample
from prelnx.report.claims import fails_or_worse
from prelnx.report.outcome import Case, ClaimOutcome, not_measured
from prelnx.report.stats import below, compare

PAPER_FRACTION = figure5a_fraction()  # 500k / 700k (prelnx/paper.yaml, figure5a)


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
    return [a for a in arms if a.task == "masked_lm" and a.status.done and (a.rows or a.diverged)
            and all(getattr(a, key) == value for key, value in criteria.items())]  # fmt: skip


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
        return not_measured(spec["id"], "needs masked-LM runs of Post-LN with warm-up (finished) and Pre-LN without")
    by_lr: dict[float, list[Arm]] = {}
    for arm in finished_posts:
        by_lr.setdefault(arm.lr, []).append(arm)
    post = min(by_lr.values(), key=lambda group: statistics.fmean(a.final() or 0.0 for a in group))
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


BERT_CHECKS: dict[str, Callable[[list[Arm], dict[str, Any]], ClaimOutcome]] = {
    "bert_preln_fewer_updates": preln_fewer_updates,
}
