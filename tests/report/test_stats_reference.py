"""prelnx/report/stats.py's intervals against scipy.stats' own (Welch's t-test's and the one-sample t interval's),
on samples of unequal sizes and spreads, where the pooled test, a population variance, n degrees of freedom or a
one-sided quantile would give other numbers (scripts/mutants.py's stats mutants)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from prelnx.report.stats import LEVEL, Sample, compare, t_interval

A = (5.1, 5.6, 4.2, 6.3)  # 4 seeds, a wide spread
B = (6.05, 6.1, 6.22)  # 3 seeds, a narrow one


def scipy_welch():
    result = scipy_stats.ttest_ind(A, B, equal_var=False)
    return result, result.confidence_interval(confidence_level=LEVEL)


def test_welchs_interval_is_scipys():
    result, interval = scipy_welch()
    comparison = compare("loss", Sample("a", A), Sample("b", B), (-math.inf, 0.0))
    assert comparison.estimate == pytest.approx(sum(A) / 4 - sum(B) / 3)
    assert (comparison.low, comparison.high) == (pytest.approx(interval.low, rel=1e-9),
                                                 pytest.approx(interval.high, rel=1e-9))  # fmt: skip
    assert result.df == pytest.approx(comparison.df, rel=1e-9)


def test_a_claims_interval_is_welchs_two_sided_95_percent():
    _, interval = scipy_welch()
    comparison = compare("loss", Sample("a", A), Sample("b", B), (-math.inf, 5.0))
    assert (comparison.low, comparison.high) == (pytest.approx(interval.low, rel=1e-9),
                                                 pytest.approx(interval.high, rel=1e-9))  # fmt: skip


def test_the_one_sample_interval_is_scipys():
    mean, low, high = t_interval(Sample("a", A))
    expected = scipy_stats.t.interval(LEVEL, len(A) - 1, loc=sum(A) / 4, scale=scipy_stats.sem(A))
    assert (mean, low, high) == (pytest.approx(sum(A) / 4), pytest.approx(expected[0]), pytest.approx(expected[1]))


def test_the_one_interval_is_scipys_at_any_level():
    """prelnx.interval: the one owner of the t interval (the report's verdicts and the fine-tuning summary)."""
    from prelnx.interval import mean_interval

    for level in (0.9, LEVEL):
        mean, half = mean_interval(A, level)
        low, high = scipy_stats.t.interval(level, len(A) - 1, loc=sum(A) / 4, scale=scipy_stats.sem(A))
        assert (mean - half, mean + half) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert mean_interval((2.0, 2.0)) == (2.0, 0.0) and mean_interval((5.0,)) == (5.0, None)
