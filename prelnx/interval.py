"""The one t interval: Student's t quantile of a two-sided interval at a level, and a mean's interval over values
(the report's verdicts, the fine-tuning summary). Imports no prelnx; scipy is imported when a quantile is asked."""

from __future__ import annotations

import math
import statistics
from typing import Any

LEVEL = 0.95  # every interval prelnx reports, unless a caller asks for another level


def t_quantile(df: Any, level: float = LEVEL) -> Any:
    """The t quantile whose +- bounds a two-sided `level` interval at `df` degrees of freedom (a number or an array)."""
    from scipy.stats import t

    return t.ppf(0.5 + level / 2, df)


def mean_interval(values: list[float] | tuple[float, ...], level: float = LEVEL) -> tuple[float | None, float | None]:
    """(mean, half-width of the one-sample t interval at `level`); None for no values, a None half-width for one."""
    if not values:
        return None, None
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    se = statistics.stdev(values) / math.sqrt(len(values))
    return mean, float(t_quantile(len(values) - 1, level)) * se if se else 0.0
