"""The verdict engine: the one path every claim's comparison goes through (`compare`), the seeds a claim would need
(80 % power, by simulation) and Holm's step-down over a claim's cases. A claim puts a quantity (two arms'
difference, or one arm's level) in a `region`; each arm is a Sample whose failed seeds are counted, never imputed.
A significant failure count (Fisher's exact test, one-sided at 0.025) decides; else the trained seeds' Welch (or
one-sample) t 95 % interval, widened by the grain: holds inside the region, does not hold outside, inconclusive when
it straddles, has no spread, an arm has < 2 seeds or the counts lean the other way (the report's legend has it all).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from enum import Enum

import numpy as np
from scipy import stats as scipy_stats

from prelnx.interval import LEVEL, mean_interval, t_quantile

MAX_SEEDS = 1000  # "seeds needed" above this is reported as more than this
POWER = 0.8  # "seeds needed": the n per arm that decides the claim in this share of simulated replications
REPLICATIONS = 4000  # simulated sweeps per n (the power's standard error at 0.8: 0.006)
SIMULATION_SEED = 0  # fixed: a report says the same number every time it is written
ALPHA_ONE_SIDED = (1 - LEVEL) / 2  # 0.025: what a 95 % two-sided interval implies for a one-sided test
DEAD = "neither arm trained: no seed of either has the quantity"
WELCH = "Welch's t over the trained seeds"
ONE_SAMPLE = "one-sample t over the seeds"
FISHER = "failure counts, Fisher's exact test (one-sided)"


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"
    NOT_TESTABLE = "not testable at this scale"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Sample:
    """One arm's seeds as a claim reads them: a seed that failed is counted, never given a value."""

    label: str
    values: tuple[float, ...]  # the quantity per seed that has it; for a quality only the seeds that trained
    failed: int = 0  # seeds without it because they failed (to train, diverged, never reached a target)
    diverged: int = 0  # of `failed`, at `diverged_at`
    missing: int = 0  # finished seeds with no validation row: counted and shown, in no test
    grain: float = 0.0  # each value's resolution (updates read on validations K apart: K)
    read: str = ""  # where the quantity was read (`update 138`)
    untestable: str = ""  # why the seeds cannot be judged at all (no unigram plateau): the claim is "not testable"
    diverged_at: tuple[int, ...] = ()
    failure: str = "failed to train"  # what `failed` counts, in words
    unjudged: int = 0  # finished seeds whose training cannot be judged (no plateau): counted, in no test
    log: bool = False  # natural logs (a ratio claim): two arms' difference is a log ratio, `grain` the logs' resolution
    no_value: tuple[str, ...] = ()  # seeds whose quantity is not a number (inf, nan): each one's reason; in no test

    @property
    def measured(self) -> int:
        return len(self.values)

    @property
    def n(self) -> int:
        """Every seed of the arm: measured, failed, without a validation row, not judged."""
        return len(self.values) + self.failed + self.missing + self.unjudged + len(self.no_value)

    @property
    def failure_share(self) -> float:
        return self.failed / max(1, self.failed + self.measured)

    @property
    def dead(self) -> bool:
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


@dataclass(frozen=True)
class Comparison:
    """mean(a) - mean(b) (or mean(a) alone when b is None) against the claimed region, and how it was decided."""

    metric: str
    a: Sample
    b: Sample | None
    region: tuple[float, float]  # where the claim puts the estimate: (-inf, m), (m, inf) or (lo, hi)
    estimate: float  # over the seeds with the quantity; nan when an arm has none
    low: float | None  # the 95 % interval, widened by the grain; None: no interval (an arm with < 2 seeds)
    high: float | None
    verdict: Verdict
    seeds_needed: int | None = None  # an inconclusive interval: trained seeds per arm for 80 % power
    se: float | None = None
    df: float | None = None
    test: str = ""  # the test that decided, in words
    reason: str = ""  # why inconclusive or not testable
    failures_p: float | None = None  # the exact test's one-sided p in the direction it was read (None: not run)
    p_outside: float = 1.0  # the p-value of "does not hold" (two-sided scale, against 0.05), for Holm
    grain: float = 0.0
    quality: Verdict | None = None  # the seeds' quality alone (None: not testable)
    level: bool = False  # the estimate is a level (a ratio, a norm: shown unsigned), not a difference (signed)

    @property
    def one_seed(self) -> bool:
        return self.low is None

    def interval(self, level: float) -> tuple[float, float]:
        """The interval at another level, widened by the grain; needs two seeds per arm."""
        assert self.se is not None and self.df is not None
        half = (float(t_quantile(self.df, level)) * self.se if self.se else 0.0) + self.grain
        return self.estimate - half, self.estimate + half


def _power(a: Sample, b: Sample | None, region: tuple[float, float], n: int, grain: float = 0.0) -> float:
    """The share of simulated sweeps of n normal seeds per arm (the observed means and sds; each mean and variance
    drawn from its exact distribution) whose 95 % interval, widened by the grain, decides the claim."""
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
        df = se2**2 / np.maximum(sum(v**2 for v in variances) / (n - 1), 1e-300)
    half = t_quantile(df) * np.sqrt(se2) + grain
    low, high, (lo, hi) = estimate - half, estimate + half, region
    return float(np.mean(((lo < low) & (high < hi)) | (high <= lo) | (low >= hi)))  # decided: holds or does not


def seeds_needed(a: Sample, b: Sample | None, region: tuple[float, float], grain: float = 0.0) -> int | None:
    """The smallest n per arm with POWER (`_power`); MAX_SEEDS + 1 when even MAX_SEEDS lack it; None: no spread."""
    if not any(s is not None and s.sd for s in (a, b)):
        return None
    if _power(a, b, region, 2, grain) >= POWER:
        return 2
    low, high = 2, 4  # the power at `low` is below POWER, at `high` (once found) at or above
    while _power(a, b, region, high, grain) < POWER:
        if high >= MAX_SEEDS:
            return MAX_SEEDS + 1
        low, high = high, min(2 * high, MAX_SEEDS)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _power(a, b, region, middle, grain) >= POWER else (middle, high)
    return high


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest times (k - i), the running maximum
    taken (so a case is kept only if every smaller p was kept: the step-down stop)."""
    k, adjusted, running = len(pvalues), [1.0] * len(pvalues), 0.0
    for rank, index in enumerate(sorted(range(k), key=pvalues.__getitem__)):
        running = max(running, min(1.0, (k - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def _se_df(a: Sample, b: Sample | None) -> tuple[float, float]:
    if b is None:
        return statistics.stdev(a.values) / math.sqrt(a.measured), float(a.measured - 1)
    va, vb = statistics.variance(a.values) / a.measured, statistics.variance(b.values) / b.measured
    if va + vb == 0:
        return 0.0, float(a.measured + b.measured - 2)
    return math.sqrt(va + vb), (va + vb) ** 2 / (va**2 / (a.measured - 1) + vb**2 / (b.measured - 1))


def _p_outside(estimate: float, se: float, df: float, grain: float, region: tuple[float, float]) -> float:
    """The smallest alpha whose (1 - alpha) interval, widened by the grain, lies outside the region."""
    lo, hi = region
    beyond = max(lo - estimate, estimate - hi) - grain
    if beyond < 0 or se == 0:
        return 1.0
    return min(1.0, 2 * float(scipy_stats.t.sf(beyond / se, df)))


def _too_few(sample: Sample) -> str:
    kind = "trained seed" if sample.failed or sample.missing else "seed"
    return f"{sample.measured} {kind}{'s' if sample.measured != 1 else ''} in {sample.label}"


def _fisher(a: Sample, b: Sample) -> tuple[float, float]:
    """One-sided exact p-values that a fails more often than b, and that b fails more often than a."""
    if not (a.failed or b.failed) or not (a.failed + a.measured) or not (b.failed + b.measured):
        return 1.0, 1.0
    table = [[a.failed, a.measured], [b.failed, b.measured]]
    more_a = float(scipy_stats.fisher_exact(table, alternative="greater").pvalue)
    more_b = float(scipy_stats.fisher_exact(table, alternative="less").pvalue)
    return more_a, more_b


def counts_text(a: Sample, b: Sample) -> str:
    return f"failures {a.failed}/{a.failed + a.measured} vs {b.failed}/{b.failed + b.measured}"


def finite_only(sample: Sample) -> Sample:
    """The sample with each value that is not a finite number (inf, nan) moved to `no_value`, its reason kept: a
    seed with no number is counted and shown, never a crash (statistics' exact sums refuse inf) nor a value."""
    bad = tuple(v for v in sample.values if not math.isfinite(v))
    if not bad:
        return sample
    return dataclasses.replace(sample, values=tuple(v for v in sample.values if math.isfinite(v)),
                               no_value=sample.no_value + tuple(f"{v}" for v in bad))  # fmt: skip


def compare(metric: str, a: Sample, b: Sample | None, region: tuple[float, float], level: bool = False) -> Comparison:
    """The one path: the verdict by the rule in this module's docstring. A seed with no value (`finite_only`) keeps
    the verdict from holding or not holding: at most inconclusive, with the seeds it lacks named. `level`: the
    quantity is a level (Comparison.level)."""
    a, b = finite_only(a), finite_only(b) if b is not None else None
    comparison = dataclasses.replace(_compare(metric, a, b, region), level=level)
    lacking = [s for s in (a, b) if s is not None and s.no_value]
    if lacking and comparison.verdict in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD):
        why = "; ".join(f"{len(s.no_value)} of {s.n} seeds of {s.label} have no value "
                        f"({', '.join(sorted(set(s.no_value)))})" for s in lacking)  # fmt: skip
        return dataclasses.replace(comparison, verdict=Verdict.INCONCLUSIVE, reason=why, p_outside=1.0)
    return comparison


def _compare(metric: str, a: Sample, b: Sample | None, region: tuple[float, float]) -> Comparison:
    grain = max(a.grain, b.grain if b is not None else 0.0)
    estimate = a.mean - (b.mean if b is not None else 0.0)
    base = {"metric": metric, "a": a, "b": b, "region": region, "estimate": estimate, "grain": grain}
    untestable = a.untestable or (b.untestable if b is not None else "")
    if untestable:
        return Comparison(**base, low=None, high=None, verdict=Verdict.NOT_TESTABLE, reason=untestable)
    samples = (a,) if b is None else (a, b)
    quality, low, high, se, df, reason, needed, p_q = None, None, None, None, None, "", None, 1.0
    if any(s.measured < 1 for s in samples):
        reason = "needs >= 2 trained seeds per arm: " + ", ".join(_too_few(s) for s in samples if s.measured < 2)
    elif any(s.measured < 2 for s in samples):
        quality = Verdict.INCONCLUSIVE
        reason = "1 seed" if all(s.n == 1 for s in samples if s.measured < 2) else \
            ", ".join(_too_few(s) for s in samples if s.measured < 2)  # fmt: skip
    else:
        se, df = _se_df(a, b)
        half = (float(t_quantile(df)) * se if se else 0.0) + grain
        low, high = estimate - half, estimate + half
        if se == 0:
            quality, reason = Verdict.INCONCLUSIVE, "no spread: every seed alike, a zero-width interval is no verdict"
        else:
            inside, outside = region[0] < low and high < region[1], high <= region[0] or low >= region[1]
            quality = Verdict.HOLDS if inside else Verdict.DOES_NOT_HOLD if outside else Verdict.INCONCLUSIVE
            p_q = _p_outside(estimate, se, df, grain, region)
            if quality is Verdict.INCONCLUSIVE:
                needed = seeds_needed(a, b, region, grain)
                if 2 * grain >= region[1] - region[0]:  # a finite region narrower than the grain's own width
                    reason = ("the grain alone is as wide as the claimed region: no number of seeds can make it "
                              "hold at this grain, only validations closer together")  # fmt: skip
    q = {"low": low, "high": high, "se": se, "df": df, "quality": quality}
    lo, hi = region
    if b is None:
        if a.failed and quality in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD):
            return Comparison(**base, **q, verdict=Verdict.INCONCLUSIVE, test=ONE_SAMPLE,
                              reason=f"{a.failed} of {a.n} seeds {a.failure}")  # fmt: skip
        if quality is None:
            return Comparison(**base, **q, verdict=Verdict.NOT_TESTABLE, reason=reason or DEAD)
        return Comparison(**base, **q, verdict=quality, test=ONE_SAMPLE, reason=reason, seeds_needed=needed,
                          p_outside=p_q)  # fmt: skip
    more_a, more_b = _fisher(a, b)
    if math.isinf(hi):  # a is claimed worse: a failing more supports it
        p_for, p_against = more_a, more_b
    elif math.isinf(lo):  # a is claimed no worse: a failing more contradicts it
        p_for, p_against = more_b, more_a
    else:
        p_for, p_against = 1.0, min(more_a, more_b)
    ran = a.failed + b.failed > 0
    counts = counts_text(a, b)
    if p_against <= ALPHA_ONE_SIDED:
        return Comparison(**base, **q, verdict=Verdict.DOES_NOT_HOLD, test=FISHER, failures_p=p_against,
                          p_outside=min(1.0, 2 * p_against), reason=counts)  # fmt: skip
    if p_for <= ALPHA_ONE_SIDED:
        return Comparison(**base, **q, verdict=Verdict.HOLDS, test=FISHER, failures_p=p_for, reason=counts)
    fp = min(p_for, p_against) if ran else None
    if a.dead and b.dead:
        return Comparison(**base, **q, verdict=Verdict.NOT_TESTABLE, reason=DEAD, failures_p=fp)
    if quality is None:
        why = f"{reason}; {counts} not significant (Fisher one-sided p = {fp:.3g})" if ran else reason
        why = "1 seed" if a.n == 1 and b.n == 1 else why  # one seed per arm: never a verdict, whatever failed
        return Comparison(**base, **q, verdict=Verdict.INCONCLUSIVE, reason=why, failures_p=fp, test=FISHER)
    share_a, share_b = a.failure_share, b.failure_share
    lean_for = (share_a > share_b) if math.isinf(hi) else (share_b > share_a) if math.isinf(lo) else False
    lean_against = (share_b > share_a) if math.isinf(hi) else (share_a > share_b) if math.isinf(lo) else share_a != share_b
    test = WELCH + (f"; {FISHER}" if ran else "")
    if (quality is Verdict.HOLDS and lean_against) or (quality is Verdict.DOES_NOT_HOLD and lean_for):
        why = f"the trained seeds say {quality.value}, the {counts} lean the other way (Fisher one-sided p = {fp:.3g})"
        return Comparison(**base, **q, verdict=Verdict.INCONCLUSIVE, test=test, reason=why, failures_p=fp)
    return Comparison(**base, **q, verdict=quality, test=test, reason=reason, seeds_needed=needed, failures_p=fp,
                      p_outside=p_q)  # fmt: skip


def t_interval(a: Sample) -> tuple[float, float, float]:
    """(mean, low, high): the one-sample t interval at LEVEL over the sample's values; needs two."""
    mean, half = mean_interval(a.values)
    assert mean is not None and half is not None
    return mean, mean - half, mean + half


def compare_counts(metric: str, a: Sample, b: Sample) -> Comparison:
    """A claim that arm a fails less often than arm b: the failure counts alone, as `compare` reads them."""
    base = {"metric": metric, "a": a, "b": b, "region": (-math.inf, 0.0), "low": None, "high": None,
            "estimate": a.failure_share - b.failure_share}
    untestable = a.untestable or b.untestable
    if untestable:
        return Comparison(**base, verdict=Verdict.NOT_TESTABLE, reason=untestable)
    more_a, more_b = _fisher(a, b)
    counts = counts_text(a, b)
    if more_a <= ALPHA_ONE_SIDED:
        return Comparison(**base, verdict=Verdict.DOES_NOT_HOLD, test=FISHER, failures_p=more_a, reason=counts,
                          p_outside=min(1.0, 2 * more_a))  # fmt: skip
    if more_b <= ALPHA_ONE_SIDED:
        return Comparison(**base, verdict=Verdict.HOLDS, test=FISHER, failures_p=more_b, reason=counts)
    if a.dead and b.dead:
        return Comparison(**base, verdict=Verdict.NOT_TESTABLE, reason=DEAD)
    p = min(more_a, more_b)
    return Comparison(**base, verdict=Verdict.INCONCLUSIVE, test=FISHER, failures_p=p,
                      reason=f"{counts} not significant (Fisher one-sided p = {p:.3g})")  # fmt: skip
