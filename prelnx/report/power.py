"""How many seeds would decide a claim (80 % power, by simulation), and Holm's step-down over a claim's cases."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as scipy_stats

from prelnx.report.samples import Sample

LEVEL = 0.95
MAX_SEEDS = 1000  # "seeds needed" above this is reported as more than this
POWER = 0.8  # "seeds needed": the n per arm that decides the claim in this share of simulated replications
REPLICATIONS = 4000  # simulated sweeps per n (the power's standard error at 0.8: 0.006)
SIMULATION_SEED = 0  # fixed: a report says the same number every time it is written


def _decided(low: np.ndarray, high: np.ndarray, region: tuple[float, float]) -> np.ndarray:
    """Whether each interval decides the claim (holds or does not hold)."""
    lo, hi = region
    return ((lo < low) & (high < hi)) | (high <= lo) | (low >= hi)


def _power(a: Sample, b: Sample | None, region: tuple[float, float], n: int, grain: float = 0.0) -> float:
    """The share of simulated sweeps with n trained seeds per arm whose 95 % interval (widened by the grain)
    decides the claim, if each arm's seeds were normal with the observed mean and sd. Each arm's mean and variance
    are drawn from their exact distributions (normal and scaled chi-square), which is drawing n seeds."""
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
    half = scipy_stats.t.ppf(0.5 + LEVEL / 2, df) * np.sqrt(se2) + grain
    return float(np.mean(_decided(estimate - half, estimate + half, region)))


def seeds_needed(a: Sample, b: Sample | None, region: tuple[float, float], grain: float = 0.0) -> int | None:
    """Trained seeds per arm that decide the claim with 80 % power (POWER) at the observed means and spreads: the
    smallest n whose simulated sweeps (`_power`) clear the region's boundary in >= 80 % of replications.
    MAX_SEEDS + 1 when even MAX_SEEDS do not; None when no arm has a spread (nothing to simulate)."""
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
