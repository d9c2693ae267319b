"""The verdict engine: the one path every claim's comparison goes through (`compare`), and the five verdicts.

A claim says where a quantity must lie - a difference of two arms (a loss, updates to a target, a loss at an
update, a gap between lrs) above a practical margin, below it, within +-margin, or a ratio inside a band: its
`region`. Each arm is a Sample (prelnx.report.samples): the quantity of the seeds that have it - for a quality, the
seeds that trained (prelnx.report.seeds: one meaning of a run's outcome, one margin) - and the counts of those that
failed. Nothing is imputed: a failed seed is never given a loss, so no verdict depends on such a number, and none
changes when an unrelated arm joins the sweep. Two tests, then one rule that combines them:

- failure counts (two arms, when a seed of either failed): Fisher's exact test, one-sided at 0.025 - the level a
  95 % two-sided interval implies - in each direction (scipy.stats.fisher_exact). A run that failed is worse than
  any run that trained, so on a claim that arm a is worse (region above a margin) a significantly larger failure
  share of a says "holds" and of b "does not hold"; on a claim that a is not worse (below a margin) the reverse;
  on "within +-margin" a significant difference either way says "does not hold".
- quality of the seeds that have the quantity: Welch's t 95 % interval (one-sample t for a single arm), which needs
  >= 2 such seeds in each arm; holds when the interval lies inside the region, does not hold when outside,
  inconclusive when it straddles (with the trained seeds per arm that would decide it with 80 % power,
  prelnx.report.power). Resolution: a quantity read on a grain (validations K updates apart) is known to K only,
  so the interval is widened by K on each side (a region narrower than 2K can then never hold: said so); and an
  interval with no spread (every seed alike) is never a verdict ("no spread").
- combined: a significant failure count decides; otherwise the quality does - unless an arm has < 2 seeds with the
  quantity (inconclusive, or not testable when no seed of either arm has it), or the failure counts lean against
  the quality's verdict (inconclusive: the two disagree, not significantly).

Claims with several cases (one per lr): prelnx.report.outcome (intersection for "holds", Holm's step-down for
"does not hold"). Every Comparison keeps its provenance: metric, the samples (counts, grain, the update read), the
test that decided and its p.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from scipy import stats as scipy_stats

from prelnx.report.power import LEVEL, MAX_SEEDS, POWER, holm, seeds_needed  # noqa: F401 - re-exported
from prelnx.report.samples import Sample, Verdict, above, below, within  # noqa: F401 - re-exported

ALPHA_ONE_SIDED = (1 - LEVEL) / 2  # 0.025: what a 95 % two-sided interval implies for a one-sided test
DEAD = "neither arm trained: no seed of either has the quantity"
WELCH = "Welch's t over the trained seeds"
ONE_SAMPLE = "one-sample t over the seeds"
FISHER = "failure counts, Fisher's exact test (one-sided)"


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

    @property
    def one_seed(self) -> bool:
        return self.low is None

    def interval(self, level: float) -> tuple[float, float]:
        """The interval at another level, widened by the grain; needs two seeds per arm."""
        assert self.se is not None and self.df is not None
        half = (float(scipy_stats.t.ppf(0.5 + level / 2, self.df)) * self.se if self.se else 0.0) + self.grain
        return self.estimate - half, self.estimate + half


def region_verdict(low: float, high: float, region: tuple[float, float]) -> Verdict:
    lo, hi = region
    if lo < low and high < hi:
        return Verdict.HOLDS
    if high <= lo or low >= hi:
        return Verdict.DOES_NOT_HOLD
    return Verdict.INCONCLUSIVE


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


def _share(sample: Sample) -> float:
    total = sample.failed + sample.measured
    return sample.failed / total if total else 0.0


def compare(metric: str, a: Sample, b: Sample | None, region: tuple[float, float]) -> Comparison:
    """The one path: the claim's quantity from the seeds that have it, the failure counts by the exact test, the
    verdict by the rule in this module's docstring."""
    grain = max(a.grain, b.grain if b is not None else 0.0)
    estimate = a.mean - (b.mean if b is not None else 0.0)
    base = dict(metric=metric, a=a, b=b, region=region, estimate=estimate, grain=grain)
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
        half = (float(scipy_stats.t.ppf(0.5 + LEVEL / 2, df)) * se if se else 0.0) + grain
        low, high = estimate - half, estimate + half
        if se == 0:
            quality, reason = Verdict.INCONCLUSIVE, "no spread: every seed alike, a zero-width interval is no verdict"
        else:
            quality = region_verdict(low, high, region)
            p_q = _p_outside(estimate, se, df, grain, region)
            if quality is Verdict.INCONCLUSIVE:
                needed = seeds_needed(a, b, region, grain)
                if 2 * grain >= region[1] - region[0]:  # a finite region narrower than the grain's own width
                    reason = ("the grain alone is as wide as the claimed region: no number of seeds can make it "
                              "hold at this grain, only validations closer together")  # fmt: skip
    q = dict(low=low, high=high, se=se, df=df, quality=quality)
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
    counts = f"failures {a.failed}/{a.failed + a.measured} vs {b.failed}/{b.failed + b.measured}"
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
    share_a, share_b = _share(a), _share(b)
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
    se, df = _se_df(a, None)
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, df)) * se if se else 0.0
    return a.mean, a.mean - half, a.mean + half


def compare_counts(metric: str, a: Sample, b: Sample) -> Comparison:
    """A claim that arm a fails less often than arm b (its `failed` against its `measured` seeds): Fisher's exact
    test alone, one-sided at 0.025 each way - the same test `compare` reads failure counts with."""
    base = dict(metric=metric, a=a, b=b, region=(-math.inf, 0.0), estimate=_share(a) - _share(b), low=None, high=None)
    untestable = a.untestable or b.untestable
    if untestable:
        return Comparison(**base, verdict=Verdict.NOT_TESTABLE, reason=untestable)
    more_a, more_b = _fisher(a, b)
    counts = f"failures {a.failed}/{a.failed + a.measured} vs {b.failed}/{b.failed + b.measured}"
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
