"""Does a run-level quantity predict which runs fail, within runs that share a learning-rate schedule, on seeds it was
not fitted on? (issue 38; protocol: configs/sweeps/why_warmup_strata.yaml's header.) A `Unit` is a run; a pair is
(failing, trained) of one stratum and seed. The direction is fitted on the fit seeds, the AUC scored on the test seeds
(a tie 1/2), its interval a percentile bootstrap over the arms within each stratum, paired with the schedule-only
baseline; `_decide`'s permutation p keeps two concordant pairs (p = 1/4) from holding."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prelnx.report.stats import LEVEL, Verdict


@dataclass(frozen=True)
class Unit:
    stratum: str
    arm: str
    seed: int
    failed: bool
    value: float


@dataclass(frozen=True)
class Protocol:
    fit_seeds: frozenset[int]
    test_seeds: frozenset[int]
    min_strata: int = 2
    resamples: int = 2000
    rng_seed: int = 0
    claimed_direction: int = 1  # +1: a larger value predicts failure


@dataclass(frozen=True)
class Prediction:
    """One quantity's held-out prediction, beside the baseline's, with the verdict and why."""

    fit_auc: float | None  # on the fit seeds' pairs (None: no pair)
    direction: int  # fitted: +1, -1, 0 (none)
    auc: float | None  # held-out
    low: float
    high: float
    baseline_auc: float | None
    difference: float | None  # auc - baseline_auc
    diff_low: float
    diff_high: float
    informative: list[str]  # strata whose test-seed runs hold both outcomes
    pairs: int  # held-out pairs
    p_value: float  # permutation p of the held-out AUC (values permuted within each held-out block); 1: no direction
    verdict: Verdict
    why: str


@dataclass
class _Block:
    """One stratum's runs: pair scores (i failing, j trained, same seed) for fit and test, and each run's arm."""

    arm_index: np.ndarray  # run -> index of its arm in the stratum
    arms: int
    fit_score: np.ndarray  # n x n: concordance of value_i > value_j on fit pairs, 0 elsewhere
    fit_pair: np.ndarray  # n x n: 1 on fit pairs
    test_score: np.ndarray
    test_pair: np.ndarray


def _scores(values: np.ndarray) -> np.ndarray:
    """concordance[i, j] = 1 when values[i] > values[j], 1/2 when equal (inf == inf included), 0 when smaller."""
    return (values[:, None] > values[None, :]) + 0.5 * (values[:, None] == values[None, :])


def _blocks(units: Sequence[Unit], protocol: Protocol) -> dict[str, _Block]:
    blocks = {}
    for stratum in dict.fromkeys(u.stratum for u in units):
        runs = [u for u in units if u.stratum == stratum]
        arms = list(dict.fromkeys(u.arm for u in runs))
        values = np.array([u.value for u in runs], dtype=float)
        failed = np.array([u.failed for u in runs])
        seeds = np.array([u.seed for u in runs])
        pair = (failed[:, None] & ~failed[None, :] & (seeds[:, None] == seeds[None, :])).astype(float)
        fit_pair = pair * np.isin(seeds, list(protocol.fit_seeds))[:, None]
        test_pair = pair * np.isin(seeds, list(protocol.test_seeds))[:, None]
        score = _scores(values)
        blocks[stratum] = _Block(np.array([arms.index(u.arm) for u in runs]), len(arms), score * fit_pair, fit_pair,
                                 score * test_pair, test_pair)  # fmt: skip
    return blocks


def _weighted(blocks: dict[str, _Block], weights: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Per resample: fit concordance, fit pairs, test concordance, test pairs over strata (a pair weighs w_i w_j)."""
    totals = [0.0, 0.0, 0.0, 0.0]
    for stratum, block in blocks.items():
        w = weights[stratum]  # resamples x runs
        for k, matrix in enumerate((block.fit_score, block.fit_pair, block.test_score, block.test_pair)):
            totals[k] = totals[k] + np.einsum("bi,ij,bj->b", w, matrix, w)
    return tuple(np.asarray(t, dtype=float) for t in totals)


def _held_out(fit_c: np.ndarray, fit_n: np.ndarray, test_c: np.ndarray, test_n: np.ndarray) -> tuple[np.ndarray, ...]:
    """Direction fitted on the fit pairs, AUC on the test pairs (NaN where a resample has no test pair)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        fit_auc = np.where(fit_n > 0, fit_c / np.where(fit_n > 0, fit_n, 1), np.nan)
        direction = np.where(np.isnan(fit_auc), 0, np.sign(np.round(fit_auc - 0.5, 12)))
        raw = np.where(test_n > 0, test_c / np.where(test_n > 0, test_n, 1), np.nan)
    auc = np.where(direction > 0, raw, np.where(direction < 0, 1 - raw, np.where(np.isnan(raw), np.nan, 0.5)))
    return fit_auc, direction, auc


def _point(blocks: dict[str, _Block]) -> tuple[float | None, int, float | None, int]:
    ones = {s: np.ones((1, len(b.arm_index))) for s, b in blocks.items()}
    fit_c, fit_n, test_c, test_n = _weighted(blocks, ones)
    fit_auc, direction, auc = _held_out(fit_c, fit_n, test_c, test_n)
    return (None if np.isnan(fit_auc[0]) else float(fit_auc[0]), int(direction[0]),
            None if np.isnan(auc[0]) else float(auc[0]), int(test_n[0]))  # fmt: skip


def _resampled(blocks: dict[str, _Block], protocol: Protocol) -> np.ndarray:
    """Per resample, the held-out AUC; the arms of each stratum drawn with replacement (fixed seed)."""
    rng = np.random.default_rng(protocol.rng_seed)
    weights = {}
    for stratum, block in blocks.items():
        draws = rng.integers(0, block.arms, size=(protocol.resamples, block.arms))
        counts = np.stack([np.bincount(row, minlength=block.arms) for row in draws])  # resamples x arms
        weights[stratum] = counts[:, block.arm_index].astype(float)
    return _held_out(*_weighted(blocks, weights))[2]


def _interval(values: np.ndarray) -> tuple[float, float]:
    finite = values[~np.isnan(values)]
    if not finite.size:
        return math.nan, math.nan
    tail = 100 * (1 - LEVEL) / 2
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def _permutation_p(units: Sequence[Unit], protocol: Protocol, direction: int, observed: float | None) -> float:
    """(1 + count) / (1 + permutations) of the value shufflings within each held-out block reaching the AUC."""
    if direction == 0 or observed is None:
        return 1.0
    blocks = []
    for key in dict.fromkeys((u.stratum, u.seed) for u in units if u.seed in protocol.test_seeds):
        runs = [u for u in units if (u.stratum, u.seed) == key]
        failed = np.array([u.failed for u in runs])
        if failed.any() and not failed.all():
            blocks.append((np.array([u.value for u in runs], dtype=float), failed))
    pairs = sum(int(f.sum() * (~f).sum()) for _, f in blocks)
    rng = np.random.default_rng(protocol.rng_seed + 1)
    reached = 0
    for _ in range(protocol.resamples):
        concordant = sum(float(_scores(rng.permutation(v))[np.ix_(f, ~f)].sum()) for v, f in blocks)
        auc = concordant / pairs if direction > 0 else 1 - concordant / pairs
        reached += auc >= observed - 1e-12
    return (1 + reached) / (1 + protocol.resamples)


def predict(units: Sequence[Unit], baseline: Sequence[Unit], protocol: Protocol) -> Prediction:
    """The quantity's held-out within-stratum AUC against the baseline's (same runs, the baseline's values)."""
    blocks, base_blocks = _blocks(units, protocol), _blocks(baseline, protocol)
    fit_auc, direction, auc, pairs = _point(blocks)
    base_auc = _point(base_blocks)[2]
    samples, base_samples = _resampled(blocks, protocol), _resampled(base_blocks, protocol)
    low, high = _interval(samples)
    diff_low, diff_high = _interval(samples - base_samples)
    informative = [s for s in dict.fromkeys(u.stratum for u in units)
                   if {u.failed for u in units if u.stratum == s and u.seed in protocol.test_seeds} == {True, False}]
    difference = None if auc is None or base_auc is None else auc - base_auc
    p_value = _permutation_p(units, protocol, direction, auc) if informative else 1.0
    verdict, why = _decide(direction, difference, diff_low, diff_high, informative, protocol, fit_auc, p_value)
    return Prediction(fit_auc, direction, auc, low, high, base_auc, difference, diff_low, diff_high, informative,
                      pairs, p_value, verdict, why)  # fmt: skip


def _decide(direction: int, difference: float | None, low: float, high: float, informative: list[str],
            protocol: Protocol, fit_auc: float | None, p_value: float) -> tuple[Verdict, str]:  # fmt: skip
    need = protocol.min_strata
    if len(informative) < need or difference is None:
        strata = "stratum" if len(informative) == 1 else "strata"
        return Verdict.NOT_TESTABLE, (f"{len(informative)} informative {strata} (held-out runs of both outcomes in "
                                      f"one schedule); it needs >= {need}: strata where, in the held-out seed, some "
                                      "arms fail and some train would decide it")  # fmt: skip
    if fit_auc is None:
        return Verdict.NOT_TESTABLE, "the fit seeds hold no failing-trained pair to fit a direction on"
    if high <= 0:
        tie = direction == 0 and low == high == 0
        return Verdict.DOES_NOT_HOLD, ("it ties the schedule-only baseline: within every stratum its values order no "
                                       "pair" if tie else "no better than the schedule alone on the held-out seed")
    if low > 0 and p_value >= 1 - LEVEL:
        return Verdict.INCONCLUSIVE, (f"above the baseline over arms, but the permutation p = {p_value:.2f}: too few "
                                      "held-out pairs to tell it from chance")  # fmt: skip
    if low > 0 and direction == protocol.claimed_direction:
        return Verdict.HOLDS, (f"beats the schedule-only baseline on the held-out seed, in the claimed direction "
                               f"(permutation p = {p_value:.3f})")  # fmt: skip
    if low > 0:
        return Verdict.DOES_NOT_HOLD, (f"it predicts failure on the held-out seed, but the other way round "
                                       f"(permutation p = {p_value:.3f})")  # fmt: skip
    return Verdict.INCONCLUSIVE, "the interval over arms straddles the baseline"
