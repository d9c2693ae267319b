"""why_warmup.run_quantity on hand-made diagnostics rows (no sweep, no training): each quantity's reduction, read as
log10 where its name says so (REDUCED's flag), over the updates asked for."""

from __future__ import annotations

import math
import statistics

import pytest

from prelnx.report.why_warmup import median_update_ratio, run_quantity


def _row(update: int, ratios: list[float], grad: float) -> dict:
    return {"num_updates": update, "epoch": 1, "lr": 1e-3,
            "update_ratio": {f"decoder.{i}.ffn": r for i, r in enumerate(ratios)},
            "grad_norm": {"decoder.0.ffn": 1.0, "decoder.5.ffn": grad}}  # fmt: skip


# medians 1e-3, 1e-1, 1e-2 (an odd count: the middle value; an even count: the mean of the two middle ones)
ROWS = [_row(5, [1e-3, 5e-4, 2e-3], 10.0), _row(10, [1e-1, 1.0, 1e-2], 1000.0), _row(15, [5e-3, 1.5e-2], 100.0)]


def test_the_rows_medians_are_as_built():
    assert [median_update_ratio(r) for r in ROWS] == pytest.approx([1e-3, 1e-1, 1e-2])


def test_the_update_ratio_is_the_mean_of_the_log10_of_each_rows_median():
    expected = statistics.fmean(math.log10(median_update_ratio(r)) for r in ROWS)
    assert expected == pytest.approx(-2.0)
    assert run_quantity("update_ratio_log10", ROWS, None) == pytest.approx(expected)
    assert run_quantity("update_ratio_log10", ROWS, [5, 10]) == pytest.approx(-2.0)  # log10 1e-3 and 1e-1
    assert run_quantity("update_ratio_log10", ROWS, [10, 10]) == pytest.approx(-1.0)
    assert run_quantity("update_ratio_log10", ROWS, [20, 30]) is None  # no row there: not measured


def test_a_non_positive_ratio_has_no_log10_and_is_left_out():
    rows = [_row(5, [0.0, -1.0], 1.0), _row(10, [1e-4], 1.0)]
    assert run_quantity("update_ratio_log10", rows, None) == pytest.approx(-4.0)
    assert run_quantity("update_ratio_log10", rows[:1], None) is None


def test_the_gradient_norm_is_read_as_log10_too():
    assert run_quantity("last_grad_log10", ROWS, None) == pytest.approx(2.0)  # decoder.5: 10, 1000, 100
