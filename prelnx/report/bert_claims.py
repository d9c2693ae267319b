"""The paper's BERT claim (Section 4, Figure 5a) checked on a sweep's masked-LM runs.

Pre-LN without warm-up reaches the final validation loss of Post-LN with warm-up after a fraction of
Post-LN's updates: 500k / 700k ~ 0.71 in the paper (valid loss 1.69). Here the target is Post-LN's final
validation loss (mean over seeds), Post-LN's updates are those of its last validation, and Pre-LN's are
those of its first validation at or below the target (the latest over seeds); the grain is eval.every_updates.
Each Pre-LN lr of the sweep is reported on its own (the paper's Pre-LN runs at 3x Post-LN's lr).
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

from prelnx.report.claims import NOT_MEASURED, Arm, Verdict, verdict
from prelnx.report.paper import figure5a_fraction

PAPER_FRACTION = figure5a_fraction()  # 500k / 700k (prelnx/report/paper.yaml, figure5a)


def updates_to_reach(arm: Arm, target: float) -> int | None:
    """The update of the first validation at or below `target`, or None."""
    for row in arm.rows:
        loss = row.get("valid_loss")
        if isinstance(loss, (int, float)) and loss <= target:
            return int(row["num_updates"])
    return None


def fraction_of_updates(pre: list[Arm], post: list[Arm]) -> tuple[float | None, float, int, int | None]:
    """(fraction, Post-LN's final loss, Post-LN's updates, Pre-LN's updates to reach it); None if never reached."""
    target = statistics.fmean(a.rows[-1]["valid_loss"] for a in post)
    post_updates = max(int(a.rows[-1]["num_updates"]) for a in post)
    reached = [updates_to_reach(a, target) for a in pre]
    if any(update is None for update in reached):
        return None, target, post_updates, None
    pre_updates = max(update for update in reached if update is not None)
    return pre_updates / post_updates, target, post_updates, pre_updates


def _usable(arms: list[Arm], status: tuple[str, ...], finite_final: bool, **criteria: object) -> list[Arm]:
    def final_ok(a: Arm) -> bool:
        loss = a.rows[-1].get("valid_loss")
        return not finite_final or (isinstance(loss, (int, float)) and math.isfinite(loss))

    return [a for a in arms if a.task == "masked_lm" and a.rows and a.results.get("status") in status and final_ok(a)
            and all(getattr(a, key) == value for key, value in criteria.items())]  # fmt: skip


def preln_fewer_updates(arms: list[Arm]) -> Verdict:
    """Per Pre-LN lr (the paper's Pre-LN runs at 3x Post-LN's lr; a sweep may try others): the fraction."""
    # the target is a finished Post-LN's final loss; a diverged Pre-LN counts (it reached what it reached)
    post = [a for a in _usable(arms, ("finished",), True, layout="post") if a.warmup > 0]
    pres = _usable(arms, ("finished", "diverged"), False, layout="pre", warmup=0)
    if not pres or not post:
        return NOT_MEASURED
    lines, held, missed = [], [], []
    for lr in sorted({a.lr for a in pres}, reverse=True):
        fraction, target, post_updates, pre_updates = fraction_of_updates([a for a in pres if a.lr == lr], post)
        if fraction is None:
            group = [a for a in pres if a.lr == lr]
            reverse, pre_final, _, post_at = fraction_of_updates(post, group)  # the other way round: how far behind
            behind = (f"; Post-LN reached Pre-LN's final {pre_final:.3f} after {post_at} of its updates"
                      if reverse is not None else "")  # fmt: skip
            lines.append(f"Pre-LN lr {lr:g}: never reached Post-LN's final valid loss {target:.3f} "
                         f"({post_updates} updates){behind}")  # fmt: skip
        else:
            lines.append(f"Pre-LN lr {lr:g} reaches Post-LN's final valid loss {target:.3f} ({post_updates} "
                         f"updates) after {pre_updates}: fraction **{fraction:.2f}** (paper {PAPER_FRACTION:.2f})")  # fmt: skip
        (held if fraction is not None and fraction < 1.0 else missed).append(f"{lr:g}")
    if held and missed:
        return Verdict("<br>".join(lines), f"partly: holds at Pre-LN lr {', '.join(held)}, not at {', '.join(missed)}")
    return Verdict("<br>".join(lines), verdict(bool(held)))


BERT_CHECKS: dict[str, Callable[[list[Arm]], Verdict]] = {"bert_preln_fewer_updates": preln_fewer_updates}
