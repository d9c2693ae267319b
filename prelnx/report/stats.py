"""The verdict engine's statistics: per-seed samples, their comparison with a 95 % interval, and the five verdicts.

Every claim is decided the same way. A claim says where a quantity must lie - a difference of two arms' final
losses above a practical margin, below it, within +-margin, or a gradient ratio inside a band - its `region`.
The quantity is estimated from every seed with a 95 % interval, and

- holds: the whole interval lies inside the claimed region (so beyond the claim's margin, stated in paper.yaml);
- does not hold: the whole interval lies outside it (on the other side of the margin);
- inconclusive: the interval straddles a boundary of the region; `seeds_needed` says how many seeds per arm the
  observed spread would need for the interval to clear it. An arm with one seed has no spread: "inconclusive
  (1 seed)", never a verdict;
- not testable at this scale: a premise of the claim failed (prelnx.report.premises);
- not measured: the sweep lacks the arms.

The interval is Welch's t (scipy): unequal variances, t quantiles for the few seeds a sweep affords. A bootstrap
over seeds was not used: with 2-5 seeds it has a handful of distinct resamples, and its percentile interval is far
too narrow (with 2 seeds it is the range of the two values). A single arm against a fixed value (a gradient ratio,
a loss against the unigram plateau) uses the one-sample t interval.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum

from scipy import stats as scipy_stats

LEVEL = 0.95
MAX_SEEDS = 1000  # "seeds needed" above this is reported as more than this


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable at this scale"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Sample:
    """One arm's per-seed values; a failed (diverged) seed is in `values` at the failure value, counted in `failed`."""

    label: str
    values: tuple[float, ...]
    failed: int = 0

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.values) if self.n > 1 else None


@dataclass(frozen=True)
class Comparison:
    """mean(a) - mean(b) (or mean(a) alone when b is None) with its 95 % interval, against the claimed region."""

    metric: str
    a: Sample
    b: Sample | None
    region: tuple[float, float]  # where the claim puts the estimate: (-inf, m), (m, inf) or (lo, hi)
    estimate: float
    low: float | None  # None: no interval (an arm with one seed)
    high: float | None
    verdict: Verdict
    seeds_needed: int | None = None  # for an inconclusive interval: seeds per arm at the observed spread

    @property
    def one_seed(self) -> bool:
        return self.low is None


def _region_verdict(low: float, high: float, region: tuple[float, float]) -> Verdict:
    lo, hi = region
    if lo < low and high < hi:
        return Verdict.HOLDS
    if high <= lo or low >= hi:
        return Verdict.DOES_NOT_HOLD
    return Verdict.INCONCLUSIVE


def _gap(estimate: float, region: tuple[float, float]) -> float:
    """How far the estimate is from the region's nearest finite boundary."""
    return min(abs(estimate - edge) for edge in region if math.isfinite(edge))


def seeds_needed(spread: float, gap: float, two_arms: bool) -> int | None:
    """Seeds per arm for the 95 % half-width (at standard deviation `spread`, per arm) to fall below `gap`."""
    if gap <= 0 or not math.isfinite(spread):
        return None
    for n in range(2, MAX_SEEDS + 1):
        df = 2 * n - 2 if two_arms else n - 1
        half = scipy_stats.t.ppf(0.5 + LEVEL / 2, df) * spread * math.sqrt((2 if two_arms else 1) / n)
        if half < gap:
            return n
    return MAX_SEEDS + 1


def welch_interval(a: Sample, b: Sample) -> tuple[float, float, float]:
    """(difference of means, low, high): Welch's t interval at LEVEL; needs two seeds in each arm."""
    diff = a.mean - b.mean
    va, vb = statistics.variance(a.values) / a.n, statistics.variance(b.values) / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff  # every seed of both arms alike (e.g. all failed at the same value)
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, df)) * se
    return diff, diff - half, diff + half


def t_interval(a: Sample) -> tuple[float, float, float]:
    """(mean, low, high): the one-sample t interval at LEVEL; needs two seeds."""
    se = statistics.stdev(a.values) / math.sqrt(a.n)
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, a.n - 1)) * se if se else 0.0
    return a.mean, a.mean - half, a.mean + half


def compare(metric: str, a: Sample, b: Sample | None, region: tuple[float, float]) -> Comparison:
    """The claim's quantity from every seed: mean(a) - mean(b), or mean(a) when b is None, judged against `region`."""
    estimate = a.mean - (b.mean if b is not None else 0.0)
    if a.n < 2 or (b is not None and b.n < 2):
        return Comparison(metric, a, b, region, estimate, None, None, Verdict.INCONCLUSIVE)
    estimate, low, high = welch_interval(a, b) if b is not None else t_interval(a)
    verdict = _region_verdict(low, high, region)
    needed = None
    if verdict is Verdict.INCONCLUSIVE:
        variances = [statistics.variance(s.values) for s in (a, b) if s is not None]
        spread = math.sqrt(statistics.fmean(variances))  # per arm, pooled
        needed = seeds_needed(spread, _gap(estimate, region), b is not None)
    return Comparison(metric, a, b, region, estimate, low, high, verdict, needed)


def above(margin: float) -> tuple[float, float]:
    return (margin, math.inf)


def below(margin: float) -> tuple[float, float]:
    return (-math.inf, margin)


def within(margin: float) -> tuple[float, float]:
    return (-margin, margin)
