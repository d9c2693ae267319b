"""Sequential seed plans: the looks a sweep may stop at, Lan-DeMets alpha spending (ALPHA per side), the boundaries
by recursive integration, the nominal levels a look's t or Fisher test uses, non-binding futility; the method, its
references and why it is written here: docs/sequential.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np
from scipy import optimize, special
from scipy import stats as scipy_stats

ALPHA = 0.025  # one-sided, per side: a fixed design's 95 % interval
FUTILITY = 0.10  # default: conditional power (current trend, last look) below this on both sides -> no more seeds
GRID = 401  # Simpson points per look (odd); the nominal levels to ~1e-7 relative of 8001 points' (3e-6 at 50, 51 seeds)
LOWER_SD = 9.0  # the continuation region's lower end, in sds of the score at that look (mass below: < 1e-18)


def obrien_fleming(t: float, alpha: float) -> float:
    """Lan-DeMets' O'Brien-Fleming-like spending: 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (gsDesign's sfLDOF)."""
    return 0.0 if t <= 0 else float(2 * scipy_stats.norm.sf(scipy_stats.norm.isf(alpha / 2) / math.sqrt(t)))


def pocock(t: float, alpha: float) -> float:
    """Lan-DeMets' Pocock-like spending: alpha ln(1 + (e - 1) t) (gsDesign's sfLDPocock)."""
    return alpha * math.log(1 + (math.e - 1) * t)


SPENDING = {"obrien-fleming": obrien_fleming, "pocock": pocock}


class ClaimState(str, Enum):
    """A claim at a look: open (its arms get the next look's seeds), decided (frozen), futile, or not read."""

    OPEN = "open"
    DECIDED = "decided"
    FUTILE = "futile"  # the last look cannot decide it (non-binding): its arms get no more seeds for it
    LAST = "undecided at the last look"
    NOT_MEASURED = "not measured"  # the sweep's arms do not make this claim


@dataclass(frozen=True)
class ClaimLook:
    """What the injected decider says of one claim at one look (sweep/looks.py acts on it, status shows it)."""

    claim: str
    state: ClaimState
    verdict: str  # the verdict's value at this look (the report's words for it: holds, inconclusive, ...)
    arms: tuple[str, ...] = ()  # the sweep's arm names the claim reads
    runs: int = 0  # runs (every seed of those arms) it was decided on
    look: int = 0  # the look (0-based) of this state: for a frozen claim, the look that decided it


@dataclass(frozen=True)
class SeedPlan:
    """`seeds: {looks: [4, 6, 8], method: obrien-fleming, futility: 0.1}`, or a fixed list (one look)."""

    looks: tuple[int, ...]  # seeds per arm at each look, increasing
    method: str = "obrien-fleming"
    futility: float = FUTILITY  # 0: never stop for futility
    seeds: tuple[int, ...] = ()  # the seeds, in the order they are added (default 1..n_K)

    @property
    def sequential(self) -> bool:
        return len(self.looks) > 1

    @property
    def order(self) -> tuple[int, ...]:
        return self.seeds or tuple(range(1, self.looks[-1] + 1))

    def seeds_at(self, look: int) -> tuple[int, ...]:
        """The seeds every open arm has at look `look` (0-based)."""
        return self.order[: self.looks[look]]

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.looks[-1] for n in self.looks)

    def nominal(self, look: int, alpha: float = ALPHA) -> float:
        """The one-sided nominal level of look `look`'s test; a fixed plan: alpha itself."""
        if not self.sequential:
            return alpha
        return float(scipy_stats.norm.sf(boundaries(self.fractions, alpha, self.method)[look]))


def problems(plan: SeedPlan) -> list[str]:
    """What is wrong with a plan, in words naming the key (empty: valid)."""
    found = []
    if not plan.looks or any(not isinstance(n, int) or isinstance(n, bool) or n < 2 for n in plan.looks):
        found.append(f"looks: {list(plan.looks)}: expected a list of seeds per arm, each an integer >= 2")
    elif any(b <= a for a, b in zip(plan.looks, plan.looks[1:])):
        found.append(f"looks: {list(plan.looks)}: must increase (seeds per arm at each look)")
    if plan.method not in SPENDING:
        found.append(f"method: {plan.method!r}: allowed: {', '.join(SPENDING)}")
    if not isinstance(plan.futility, (int, float)) or isinstance(plan.futility, bool) or not 0 <= plan.futility < 1:
        found.append(f"futility: {plan.futility!r}: expected a conditional power in [0, 1) (0: never stop early)")
    if plan.seeds and plan.looks and len(plan.seeds) != plan.looks[-1]:
        found.append(f"seeds: {len(plan.seeds)} given, the last look needs {plan.looks[-1]}")
    if len(set(plan.seeds)) != len(plan.seeds):
        found.append(f"seeds: {list(plan.seeds)}: a seed is listed twice")
    return found


def _normal_pdf(z: np.ndarray, sd: float) -> np.ndarray:
    """scipy's norm.pdf(z) / sd without its argument checks, which cost more than the exponentials here."""
    return np.exp(-(z * z) / 2.0) / (math.sqrt(2 * math.pi) * sd)


def _looks(fractions: tuple[float, ...], choose: Callable[[int, float, Callable[[float], float]], float],
           drift: float = 0.0) -> list[tuple[float, float]]:
    """The recursive integration over the looks: at look k (information t) `choose(k, t, crossing)` gives its boundary
    c (z scale), crossing(c) being P(no crossing before, Z_k >= c) when E[Z_K] = drift; each look's (c, crossing(c))."""
    found: list[tuple[float, float]] = []
    simpson = np.ones(GRID)  # Simpson's weights, times 3
    simpson[1:-1:2], simpson[2:-1:2] = 4.0, 2.0
    grid = mass = np.empty(0)  # mass: the Simpson weights times the continuation density at the grid's points
    previous_t = 0.0
    for k, t in enumerate(fractions):
        step, mean_step = t - previous_t, drift * (t - previous_t)  # the score S(t) drifts by drift * t

        def crossing(c: float, step: float = step, mean_step: float = mean_step, t: float = t, grid: np.ndarray = grid,
                     mass: np.ndarray = mass) -> float:
            if mass.size == 0:
                return float(special.ndtr(-(c * math.sqrt(t) - mean_step) / math.sqrt(step)))
            return float(np.dot(mass, special.ndtr(-((c * math.sqrt(t) - (grid + mean_step)) / math.sqrt(step)))))

        c = choose(k, t, crossing)
        found.append((c, crossing(c)))
        # the continuation density of the score S = Z sqrt(t) below this look's boundary, for the next look
        top = c * math.sqrt(t) if math.isfinite(c) else (LOWER_SD + 4) * math.sqrt(t)
        new_grid = np.linspace(-LOWER_SD * math.sqrt(t) + drift * t, top, GRID)
        if mass.size == 0:
            density = _normal_pdf((new_grid - mean_step) / math.sqrt(t), math.sqrt(t))
        else:
            sd = math.sqrt(step)
            density = _normal_pdf((np.subtract.outer(new_grid, grid) - mean_step) / sd, sd) @ mass
        grid, mass = new_grid, simpson / 3.0 * (new_grid[1] - new_grid[0]) * density
        previous_t = t
    return found


@functools.cache
def boundaries(fractions: tuple[float, ...], alpha: float = ALPHA, method: str = "obrien-fleming") -> tuple[float, ...]:
    """The efficacy boundaries c_1..c_K (z scale) of a one-sided level-`alpha` test at information `fractions`: each
    look's crossing probability is what the spending function lets it spend."""
    spend, spent = SPENDING[method], [0.0]

    def choose(k: int, t: float, crossing: Callable[[float], float]) -> float:
        target = spend(t, alpha) - spent[0]
        spent[0] += target
        if target <= 0:
            return math.inf
        if k == 0:
            return float(scipy_stats.norm.isf(target))
        return float(optimize.brentq(lambda c: crossing(c) - target, 0.0, 40.0, xtol=1e-10))

    return tuple(c for c, _ in _looks(fractions, choose))


def crossing_probabilities(fractions: tuple[float, ...], bounds: tuple[float, ...], drift: float = 0.0) -> list[float]:
    """P(first crossing at look k) when E[Z_K] = drift (0: under the null) - the check of `boundaries`, and the
    power of a design (drift = z_{1-alpha} + z_{power} gives a fixed design's power)."""
    return [p for _, p in _looks(fractions, lambda k, t, crossing: bounds[k], drift)]


def conditional_power(z: float, t: float, final_bound: float) -> float:
    """P(Z_K >= final_bound | Z at information t is z), under the current trend (drift z / sqrt(t)): the B-value
    formula of Lan & Wittes (1988, Biometrics 44:579); t = 1 gives 0 or 1."""
    if t >= 1:
        return float(z >= final_bound)
    return float(scipy_stats.norm.sf((final_bound - z / math.sqrt(t)) / math.sqrt(1 - t)))


def t_to_z(statistic: float, df: float) -> float:
    """The z with the same one-sided p as Student's t with `df` (the significance level approach)."""
    return float(scipy_stats.norm.isf(scipy_stats.t.sf(statistic, df)))


def reachable(z: float, plan: SeedPlan, look: int) -> bool:
    """Non-binding futility for one side: its conditional power (z: the side's statistic at look `look`, on the z
    scale) to cross the last look's boundary reaches plan.futility; always at the last look or with futility 0."""
    if look >= len(plan.looks) - 1 or plan.futility <= 0:
        return True
    final = float(scipy_stats.norm.isf(plan.nominal(len(plan.looks) - 1)))
    return conditional_power(z, plan.fractions[look], final) >= plan.futility


def fixed_seeds(plan: SeedPlan, power: float = 0.8) -> float:
    """Seeds per arm of the fixed design with the plan's power (normal theory): the drift theta at which the plan's
    boundaries are crossed with `power` at its last look's n_K, then n_K ((z_{1-alpha} + z_power) / theta)^2 - the
    plan's maximum over its inflation factor (Jennison & Turnbull section 2.6)."""
    if not plan.sequential:
        return float(plan.looks[0])
    bounds = boundaries(plan.fractions, ALPHA, plan.method)
    theta = optimize.brentq(lambda d: sum(crossing_probabilities(plan.fractions, bounds, d)) - power, 0.0, 20.0)
    fixed = float(scipy_stats.norm.isf(ALPHA) + scipy_stats.norm.ppf(power))
    return plan.looks[-1] * (fixed / theta) ** 2


def most_runs(plan: SeedPlan, arms: int) -> int:
    """The most the plan can cost: every arm to the last look."""
    return plan.looks[-1] * arms
