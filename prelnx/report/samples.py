"""What a claim compares, as values: the five verdicts, a claimed region, and one arm's per-seed sample with every
seed accounted for (its values, the seeds that failed, the seeds with no validation row) and its provenance."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable at this scale"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Sample:
    """One arm's seeds as a claim reads them.

    `values`: the quantity of each seed that has it - for a quality (a loss, updates to a target, a loss at an
    update) only the seeds that trained (prelnx.report.seeds); `failed`: the seeds without it because they failed
    (failed to train, diverged - `diverged` of them, at `diverged_at` - or never reached a target), counted for the
    exact test of failure counts and never given a value; `missing`: finished seeds with no validation row, counted
    and shown, in no test. `grain`: each value's resolution (updates read on validations K apart: K); `read`: where
    the quantity was read (`update 138`); `untestable`: why this arm's seeds cannot be judged at all (no unigram
    plateau), which makes its claim "not testable". `log`: the values are natural logs of the quantity (updates to a
    target, for a ratio claim), so a difference of two arms' means is a log ratio, the interval Welch's on the logs,
    and `grain` the logs' resolution."""

    label: str
    values: tuple[float, ...]
    failed: int = 0
    diverged: int = 0
    missing: int = 0
    grain: float = 0.0
    read: str = ""
    untestable: str = ""
    diverged_at: tuple[int, ...] = ()
    failure: str = "failed to train"  # what `failed` counts, in words
    unjudged: int = 0  # finished seeds whose training cannot be judged (no plateau): counted, in no test
    log: bool = False  # values are natural logs (a ratio claim): two such arms' difference is a log ratio

    @property
    def measured(self) -> int:
        return len(self.values)

    @property
    def n(self) -> int:
        """Every seed of the arm: measured, failed, without a validation row, not judged."""
        return len(self.values) + self.failed + self.missing + self.unjudged

    @property
    def dead(self) -> bool:
        """No seed of the arm has the quantity, and some failed."""
        return not self.values and self.failed > 0

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else math.nan

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None


def above(margin: float) -> tuple[float, float]:
    return (margin, math.inf)


def below(margin: float) -> tuple[float, float]:
    return (-math.inf, margin)


def within(margin: float) -> tuple[float, float]:
    return (-margin, margin)
