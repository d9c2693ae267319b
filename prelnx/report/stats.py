"""The verdict engine's statistics: per-seed samples, their comparison with a 95 % interval, and the five verdicts.

Every claim is decided the same way. A claim says where a quantity must lie - a difference of two arms' final
losses above a practical margin, below it, within +-margin, or a gradient ratio inside a band - its `region`.
The quantity is estimated from every seed with a 95 % interval, and

- holds: the whole interval lies inside the claimed region (so beyond the claim's margin, stated in paper.yaml);
- does not hold: the whole interval lies outside it (on the other side of the margin);
- inconclusive: the interval straddles a boundary of the region; `seeds_needed` says how many seeds per arm would
  decide the claim with 80 % power if the observed means and spreads were the truth (simulated). An arm with one
  seed has no spread: "inconclusive (1 seed)", never a verdict;
- not testable at this scale: a premise of the claim failed (prelnx.report.premises), or both arms of a
  comparison never trained - every seed diverged, or ended with its valid nll not below the unigram plateau
  (Sample.untrained). Two failures at the same failure value differ by 0 with a zero-width interval, which says
  nothing about the claim: that is the `trains` premise failing for both arms, never a verdict;
- not measured: the sweep lacks the arms.

A claim tested in several cases (one per lr, or two parts) is their intersection: it holds when every case holds,
an intersection-union test that needs no correction (each case at 95 % keeps the claim at 95 %). "Does not hold"
is the existential conclusion - it fails at some lr - so the cases' "does not hold" are Holm-corrected over the
claim's testable cases (`holm`, prelnx.report.outcome): a case's interval must lie outside the region at its
Holm-adjusted level - 1 - 0.05 / k for the smallest p-value, 1 - 0.05 / (k - 1) for the next, ... - not at 95 %.
A claim that would hold "at some lr" would need the same correction of its "holds"; paper.yaml has none.

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

import numpy as np
from scipy import stats as scipy_stats

LEVEL = 0.95
MAX_SEEDS = 1000  # "seeds needed" above this is reported as more than this
POWER = 0.8  # "seeds needed": the n per arm that decides the claim in this share of simulated replications
REPLICATIONS = 4000  # simulated sweeps per n (the power's standard error at 0.8: 0.006)
SIMULATION_SEED = 0  # fixed: a report says the same number every time it is written


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable at this scale"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Sample:
    """One arm's per-seed values; a failed (diverged) seed is in `values` at the failure value, counted in `failed`.
    `untrained`: the seeds that never trained over their whole run (diverged, no finite loss, or a final valid nll
    not below the unigram plateau; prelnx.report.arms.loss_sample)."""

    label: str
    values: tuple[float, ...]
    failed: int = 0
    untrained: int = 0

    @property
    def dead(self) -> bool:
        """No seed of the arm trained."""
        return self.n > 0 and self.untrained == self.n

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
    verdict: Verdict  # NOT_TESTABLE here: both arms dead (Sample.dead)
    seeds_needed: int | None = None  # for an inconclusive interval: seeds per arm for 80 % power
    se: float | None = None  # the estimate's standard error and its t degrees of freedom (None: one seed)
    df: float | None = None

    @property
    def one_seed(self) -> bool:
        return self.low is None

    def interval(self, level: float) -> tuple[float, float]:
        """The interval at another level (Holm's); needs two seeds per arm."""
        assert self.se is not None and self.df is not None
        half = float(scipy_stats.t.ppf(0.5 + level / 2, self.df)) * self.se if self.se else 0.0
        return self.estimate - half, self.estimate + half

    @property
    def p_outside(self) -> float:
        """The p-value of "does not hold": the smallest alpha whose (1 - alpha) interval lies outside the region."""
        if self.se is None or self.df is None:
            return 1.0
        lo, hi = self.region
        beyond = max(lo - self.estimate, self.estimate - hi)  # >= 0: the estimate is outside, by this much
        if beyond < 0:
            return 1.0
        if self.se == 0:
            return 0.0
        return min(1.0, 2 * float(scipy_stats.t.sf(beyond / self.se, self.df)))


def _region_verdict(low: float, high: float, region: tuple[float, float]) -> Verdict:
    lo, hi = region
    if lo < low and high < hi:
        return Verdict.HOLDS
    if high <= lo or low >= hi:
        return Verdict.DOES_NOT_HOLD
    return Verdict.INCONCLUSIVE


def _decided(low: np.ndarray, high: np.ndarray, region: tuple[float, float]) -> np.ndarray:
    """Whether each interval decides the claim (holds or does not hold: `_region_verdict` not inconclusive)."""
    lo, hi = region
    return ((lo < low) & (high < hi)) | (high <= lo) | (low >= hi)


def _power(a: Sample, b: Sample | None, region: tuple[float, float], n: int) -> float:
    """The share of simulated sweeps with n seeds per arm whose 95 % interval decides the claim, if each arm's seeds
    were normal with the observed mean and sd. Each arm's mean and variance are drawn from their exact
    distributions (normal and scaled chi-square), which is drawing n seeds and taking their mean and variance."""
    rng = np.random.default_rng(SIMULATION_SEED)
    estimate = np.zeros(REPLICATIONS)
    variances = []  # of each arm's mean
    for sample, sign in ((a, 1.0), (b, -1.0)) if b is not None else ((a, 1.0),):
        sd = sample.sd or 0.0
        estimate += sign * rng.normal(sample.mean, sd / math.sqrt(n), REPLICATIONS)
        variances.append(sd**2 * rng.chisquare(n - 1, REPLICATIONS) / (n - 1) / n)
    se2 = sum(variances)
    if b is None:
        df = np.full(REPLICATIONS, n - 1.0)
    else:  # Welch-Satterthwaite; an arm with no spread leaves the other's n - 1
        df = se2**2 / (sum(v**2 for v in variances) / (n - 1))
    half = scipy_stats.t.ppf(0.5 + LEVEL / 2, df) * np.sqrt(se2)
    return float(np.mean(_decided(estimate - half, estimate + half, region)))


def seeds_needed(a: Sample, b: Sample | None, region: tuple[float, float]) -> int | None:
    """Seeds per arm that decide the claim with 80 % power (POWER) at the observed means and spreads: the smallest n
    whose simulated sweeps (`_power`) have their 95 % interval clear the region's boundary in >= 80 % of
    replications (not the n whose half-width equals the gap: that decides it about half the time).
    MAX_SEEDS + 1 when even MAX_SEEDS do not; None when no arm has a spread (nothing to simulate)."""
    if not any(s is not None and s.sd for s in (a, b)):
        return None
    if _power(a, b, region, 2) >= POWER:
        return 2
    low, high = 2, 4  # the power at `low` is below POWER, at `high` (once found) at or above
    while _power(a, b, region, high) < POWER:
        if high >= MAX_SEEDS:
            return MAX_SEEDS + 1
        low, high = high, min(2 * high, MAX_SEEDS)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _power(a, b, region, middle) >= POWER else (middle, high)
    return high


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest is compared with alpha / (k - i)."""
    k, adjusted, running = len(pvalues), [1.0] * len(pvalues), 0.0
    for rank, index in enumerate(sorted(range(k), key=pvalues.__getitem__)):
        running = max(running, min(1.0, (k - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def holm_levels(pvalues: list[float]) -> list[float]:
    """The interval level each case is judged at by Holm's step-down: 1 - alpha / (k - rank), rank by p-value."""
    k, alpha, levels = len(pvalues), 1 - LEVEL, [LEVEL] * len(pvalues)
    for rank, index in enumerate(sorted(range(k), key=pvalues.__getitem__)):
        levels[index] = 1 - alpha / (k - rank)
    return levels


def _welch_se_df(a: Sample, b: Sample) -> tuple[float, float]:
    va, vb = statistics.variance(a.values) / a.n, statistics.variance(b.values) / b.n
    se = math.sqrt(va + vb)
    if se == 0:  # every seed of both arms alike (e.g. all failed at the same value): a zero-width interval
        return 0.0, float(a.n + b.n - 2)
    return se, (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))


def _t_se_df(a: Sample) -> tuple[float, float]:
    return statistics.stdev(a.values) / math.sqrt(a.n), float(a.n - 1)


def _interval(estimate: float, se: float, df: float) -> tuple[float, float, float]:
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, df)) * se if se else 0.0
    return estimate, estimate - half, estimate + half


def welch_interval(a: Sample, b: Sample) -> tuple[float, float, float]:
    """(difference of means, low, high): Welch's t interval at LEVEL; needs two seeds in each arm."""
    return _interval(a.mean - b.mean, *_welch_se_df(a, b))


def t_interval(a: Sample) -> tuple[float, float, float]:
    """(mean, low, high): the one-sample t interval at LEVEL; needs two seeds."""
    return _interval(a.mean, *_t_se_df(a))


def compare(metric: str, a: Sample, b: Sample | None, region: tuple[float, float]) -> Comparison:
    """The claim's quantity from every seed: mean(a) - mean(b), or mean(a) when b is None, judged against `region`.
    Two arms that both never trained: not testable, whatever their interval."""
    estimate = a.mean - (b.mean if b is not None else 0.0)
    dead = b is not None and a.dead and b.dead
    if a.n < 2 or (b is not None and b.n < 2):
        verdict = Verdict.NOT_TESTABLE if dead else Verdict.INCONCLUSIVE
        return Comparison(metric, a, b, region, estimate, None, None, verdict)
    se, df = _welch_se_df(a, b) if b is not None else _t_se_df(a)
    estimate, low, high = _interval(estimate, se, df)
    verdict = Verdict.NOT_TESTABLE if dead else _region_verdict(low, high, region)
    needed = seeds_needed(a, b, region) if verdict is Verdict.INCONCLUSIVE else None
    return Comparison(metric, a, b, region, estimate, low, high, verdict, needed, se, df)


def above(margin: float) -> tuple[float, float]:
    return (margin, math.inf)


def below(margin: float) -> tuple[float, float]:
    return (-math.inf, margin)


def within(margin: float) -> tuple[float, float]:
    return (-margin, margin)
