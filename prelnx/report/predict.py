"""Does a run-level quantity predict which runs fail, among runs that share every factor the design fixes per run, on
seeds it was not fitted on? (issues 38, 46 finding 3, 49; the method: docs/why_warmup.md; the protocol:
configs/sweeps/why_warmup_edge.yaml's header.) A pair is (failing run, trained run) of one *cell* (every factor fixed
per run but the seed), so a function of the cell - a per-layout constant, the schedule - ties every pair and scores
the design baseline's 0.5 exactly. The bootstrap resamples cells; the permutation p permutes the outcomes within each
held-out cell, exact by convolution up to `exact_limit` assignments, else Monte Carlo over runs in a canonical order,
so no number depends on the order runs are listed in."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prelnx.report.stats import LEVEL, Verdict

Factors = tuple[tuple[str, str], ...]  # (config key, value) for every key that varies between the study's cells


@dataclass(frozen=True)
class Unit:
    cell: Factors  # every factor fixed per run but the seed: pairs never cross it
    stratum: str  # the lr schedule in words (reported; the design note groups cells by it)
    seed: int
    failed: bool
    value: float
    worse: tuple[int, float] = (0, 0.0)  # continuous outcome, larger = worse: (0, final nll), (1, -divergence update)


@dataclass(frozen=True)
class Protocol:
    fit_seeds: frozenset[int]
    test_seeds: frozenset[int]
    min_cells: int = 2  # informative cells (held-out runs of both outcomes) a verdict needs
    resamples: int = 2000  # the bootstrap's, and the Monte Carlo permutations'
    rng_seed: int = 0
    claimed_direction: int = 1  # +1: a larger value predicts failure
    exact_limit: int = 100_000  # outcome assignments the exact permutation p enumerates at most


@dataclass(frozen=True)
class Prediction:
    """One quantity's held-out prediction beside the design baseline's, with the verdict and why."""

    fit_auc: float | None  # on the fit seeds' within-cell pairs (None: no pair)
    fit_pairs: int
    direction: int  # fitted: +1, -1, 0 (none)
    auc: float | None  # held-out
    low: float
    high: float
    baseline_auc: float | None  # every factor fixed per run: 0.5 by construction (computed, not assumed)
    difference: float | None  # auc - baseline_auc
    diff_low: float
    diff_high: float
    informative: list[Factors]  # cells whose held-out runs hold both outcomes
    pairs: int  # held-out pairs
    runs: int  # runs read (every cell, fit and held-out seeds)
    p_value: float  # permutation p of the held-out AUC; 1: no direction
    exact: bool  # the p enumerated every assignment (else Monte Carlo)
    continuous: float | None  # held-out C-index on the continuous outcome (descriptive: the verdict uses failure)
    verdict: Verdict
    why: str


def _concordance(values: np.ndarray, bad: np.ndarray, good: np.ndarray) -> float:
    """Sum over pairs (i in bad, j in good) of [v_i > v_j] + 1/2 [v_i == v_j] (inf == inf a tie)."""
    a, b = values[bad][:, None], values[good][None, :]
    return float((a > b).sum() + 0.5 * (a == b).sum())


@dataclass(frozen=True)
class _Cell:
    fit_c: float  # concordant (larger value fails) fit pairs, ties 1/2
    fit_n: int
    test_c: float
    test_n: int
    cont_c: float  # held-out pairs of unequal continuous outcome: larger value is the worse run
    cont_n: int
    test_values: np.ndarray
    test_failed: np.ndarray


def _cells(units: Sequence[Unit], protocol: Protocol) -> dict[Factors, _Cell]:
    cells = {}
    for cell in sorted({u.cell for u in units}):
        runs = [u for u in units if u.cell == cell]
        sums = []
        for seeds in (protocol.fit_seeds, protocol.test_seeds):
            chosen = [u for u in runs if u.seed in seeds]
            values = np.array([u.value for u in chosen], dtype=float)
            failed = np.array([u.failed for u in chosen], dtype=bool)
            sums.append((_concordance(values, failed, ~failed), int(failed.sum() * (~failed).sum()), values, failed))
        held = [u for u in runs if u.seed in protocol.test_seeds]
        worse = [(a.value, b.value) for a in held for b in held if a.worse > b.worse]  # (worse run's, better run's)
        cont_c = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in worse)
        cells[cell] = _Cell(sums[0][0], sums[0][1], sums[1][0], sums[1][1], cont_c, len(worse), sums[1][2],
                            sums[1][3])  # fmt: skip
    return cells


def _held_out(fit_c, fit_n, test_c, test_n):  # noqa: ANN001, ANN202 - arrays of resamples (or of one)
    """Direction fitted on the fit pairs, AUC on the test pairs (NaN where there is no test pair)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        fit_auc = np.where(fit_n > 0, fit_c / np.where(fit_n > 0, fit_n, 1), np.nan)
        raw = np.where(test_n > 0, test_c / np.where(test_n > 0, test_n, 1), np.nan)
    direction = np.where(np.isnan(fit_auc), 0, np.sign(np.round(fit_auc - 0.5, 12)))
    auc = np.where(direction > 0, raw, np.where(direction < 0, 1 - raw, np.where(np.isnan(raw), np.nan, 0.5)))
    return fit_auc, direction, auc


def _totals(cells: list[_Cell], weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of weights (resamples x cells): fit concordance, fit pairs, test concordance, test pairs."""
    columns = np.array([[c.fit_c, c.fit_n, c.test_c, c.test_n] for c in cells], dtype=float).reshape(-1, 4)
    return tuple(weights @ columns[:, k] for k in range(4))


def _bootstrap(cells: list[_Cell], protocol: Protocol) -> np.ndarray:
    """Per resample, the held-out AUC with the cells drawn with replacement (each with all its seeds)."""
    if not cells:
        return np.full(protocol.resamples, np.nan)
    rng = np.random.default_rng(protocol.rng_seed)
    draws = rng.integers(0, len(cells), size=(protocol.resamples, len(cells)))
    counts = np.stack([np.bincount(row, minlength=len(cells)) for row in draws]).astype(float)
    return _held_out(*_totals(cells, counts))[2]


def _interval(values: np.ndarray) -> tuple[float, float]:
    finite = values[~np.isnan(values)]
    if not finite.size:
        return math.nan, math.nan
    tail = 100 * (1 - LEVEL) / 2
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def permutation_p(cells: list[_Cell], direction: int, protocol: Protocol) -> tuple[float, bool]:
    """P(summed held-out concordance >= observed) when the outcomes are permuted among each informative held-out
    cell's runs (failure counts per cell kept), and whether it is exact. Written here, not scipy.stats.permutation_test:
    that permutes across all observations, not within blocks, and enumerates the joint assignments rather than
    convolving the blocks' distributions. Concordance is counted in halves (integers) so no float tie is lost."""
    blocks = [(c.test_values * direction, c.test_failed) for c in cells if 0 < c.test_failed.sum() < len(c.test_failed)]
    observed = sum(round(2 * _concordance(v, f, ~f)) for v, f in blocks)
    if sum(math.comb(len(f), int(f.sum())) for _, f in blocks) <= protocol.exact_limit:
        total = np.ones(1)  # distribution of the summed doubled concordance, counts per value
        for values, failed in blocks:
            n, k = len(failed), int(failed.sum())
            counts = np.zeros(2 * k * (n - k) + 1)
            for chosen in itertools.combinations(range(n), k):
                mask = np.zeros(n, dtype=bool)
                mask[list(chosen)] = True
                counts[round(2 * _concordance(values, mask, ~mask))] += 1
            total = np.convolve(total, counts)
        return float(total[observed:].sum() / total.sum()), True
    rng = np.random.default_rng(protocol.rng_seed + 1)  # the blocks come from canonically sorted units
    reached = 0
    for _ in range(protocol.resamples):
        drawn = 0
        for values, failed in blocks:
            mask = rng.permutation(failed)
            drawn += round(2 * _concordance(values, mask, ~mask))
        reached += drawn >= observed
    return (1 + reached) / (1 + protocol.resamples), False


def design_note(units: Sequence[Unit], protocol: Protocol) -> str:
    """Why no cell decides: the held-out seeds per cell, and the factors that set the outcome in each stratum that
    holds both outcomes (keys whose values differ between its failing and its trained cells)."""
    held = [u for u in units if u.seed in protocol.test_seeds]
    per_cell = {c: [u for u in held if u.cell == c] for c in {u.cell for u in held}}
    most = max((len(v) for v in per_cell.values()), default=0)
    notes = [] if most >= 2 else [f"each cell has {most} held-out seed(s), and a within-cell pair needs 2"]
    setters: set[str] = set()
    for stratum in sorted({u.stratum for u in held}):
        runs = [u for u in held if u.stratum == stratum]
        bad, good = {u.cell for u in runs if u.failed}, {u.cell for u in runs if not u.failed}
        for a, b in itertools.product(bad - good, good - bad):
            setters |= {k for (k, v), (_, w) in zip(a, b) if v != w}
    if setters:
        notes.append(f"in each stratum holding both outcomes on the held-out seeds the outcome is set by the cell "
                     f"({', '.join(sorted(setters))}): any quantity that differs with it would 'predict' failure")
    return "; ".join(notes) or "no stratum holds both outcomes on the held-out seeds"


def predict(units: Sequence[Unit], protocol: Protocol) -> Prediction:
    """The quantity's held-out within-cell AUC against the design baseline's (a constant per cell)."""
    units = sorted(units, key=lambda u: (u.cell, u.seed, u.stratum, u.failed, u.value, u.worse))  # one order, any input
    found = _cells(units, protocol)
    paired = [cell for cell, c in found.items() if c.fit_n or c.test_n]  # a cell with no pair adds nothing, not
    cells = [found[cell] for cell in paired]  # even a draw of the bootstrap: an unrelated cell moves no number
    constant = _cells([Unit(u.cell, u.stratum, u.seed, u.failed, 0.0, u.worse) for u in units], protocol)
    baseline = [constant[cell] for cell in paired]
    fit_auc, direction, auc = (float(x[0]) for x in _held_out(*_totals(cells, np.ones((1, len(cells))))))
    base_auc = float(_held_out(*_totals(baseline, np.ones((1, len(cells)))))[2][0])
    samples, base_samples = _bootstrap(cells, protocol), _bootstrap(baseline, protocol)
    low, high = _interval(samples)
    diff_low, diff_high = _interval(samples - base_samples)
    informative = [cell for cell, c in found.items() if c.test_n > 0]
    pairs = sum(c.test_n for c in cells)
    fit, auc_, base = (None if math.isnan(x) else x for x in (fit_auc, auc, base_auc))
    difference = None if auc_ is None or base is None else auc_ - base
    p_value, exact = permutation_p(cells, int(direction), protocol) if direction and informative else (1.0, True)
    cont_n = sum(c.cont_n for c in found.values())
    continuous = None if not cont_n or not direction else sum(c.cont_c for c in found.values()) / cont_n
    continuous = continuous if continuous is None or direction > 0 else 1 - continuous
    verdict, why = _decide(int(direction), difference, diff_low, diff_high, informative, protocol, fit, p_value,
                           units)  # fmt: skip
    return Prediction(fit, sum(c.fit_n for c in cells), int(direction), auc_, low, high, base, difference, diff_low,
                      diff_high, informative, pairs, len(units), p_value, exact, continuous, verdict, why)  # fmt: skip


def _decide(direction: int, difference: float | None, low: float, high: float, informative: list[Factors],
            protocol: Protocol, fit_auc: float | None, p_value: float,
            units: Sequence[Unit]) -> tuple[Verdict, str]:  # fmt: skip
    need = protocol.min_cells
    if not informative:
        return Verdict.NOT_TESTABLE, (f"with this design: no cell (runs sharing every factor but the seed) holds "
                                      f"both outcomes on the held-out seeds; {design_note(units, protocol)}")
    if len(informative) < need or difference is None:
        return Verdict.NOT_TESTABLE, (f"{len(informative)} informative cell(s) (held-out runs of both outcomes "
                                      f"sharing every factor but the seed); a verdict needs >= {need}")  # fmt: skip
    if fit_auc is None:
        return Verdict.NOT_TESTABLE, "the fit seeds hold no within-cell failing-trained pair to fit a direction on"
    if high <= 0:
        tie = direction == 0 and low == high == 0
        return Verdict.DOES_NOT_HOLD, ("it ties the design baseline: within every cell its values order no pair"
                                       if tie else "no better than the design baseline on the held-out seeds")
    if low > 0 and p_value >= 1 - LEVEL:
        return Verdict.INCONCLUSIVE, (f"above the baseline over cells, but the permutation p = {p_value:.3g}: too few "
                                      "held-out pairs to tell it from chance")  # fmt: skip
    if low > 0 and direction == protocol.claimed_direction:
        return Verdict.HOLDS, (f"predicts failure within cells on the held-out seeds, in the claimed direction "
                               f"(permutation p = {p_value:.3g})")  # fmt: skip
    if low > 0:
        return Verdict.DOES_NOT_HOLD, (f"it predicts failure within cells on the held-out seeds, but the other way "
                                       f"round (permutation p = {p_value:.3g})")  # fmt: skip
    return Verdict.INCONCLUSIVE, "the interval over cells straddles the baseline"
