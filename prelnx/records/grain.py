"""A run's metrics grain: a row per epoch (TensorBoard step = epoch), or with `eval.every_updates: N` a row per
validation every N updates (step = update), where checkpoints are saved too (plan.common.run_argv).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config


class Grain(enum.Enum):
    EPOCH = "epoch"
    UPDATE = "update"

    def step(self, row: Mapping[str, Any]) -> int:
        """The row's identifying metrics.jsonl field (and TensorBoard step)."""
        return int(row["num_updates" if self is Grain.UPDATE else "epoch"])


def of(config: Config) -> Grain:
    return Grain.UPDATE if config.eval.every_updates is not None else Grain.EPOCH


def budget(config: Config) -> Grain:
    """The unit a run's budget counts in: updates where the config caps them or validates every N, else epochs
    (`prelnx status` and a sweep's progress line alike)."""
    return Grain.UPDATE if config.train.max_update or of(config) is Grain.UPDATE else Grain.EPOCH


def planned(config: Config) -> int:
    """How many of the budget's units the run is set to train (0 when the config does not say)."""
    return (config.train.max_update or 0) if budget(config) is Grain.UPDATE else (config.train.max_epoch or 0)


def stride(config: Config) -> int:
    """The grain's units between two rows: eval.every_updates at the update grain, one epoch otherwise."""
    return config.eval.every_updates or 1


def units_label(units: set[str]) -> str:
    """What a sum of runs' steps counts: "epochs", "updates", or "epochs/updates" where their units mix."""
    return f"{next(iter(units))}s" if len(units) == 1 else "epochs/updates"


def of_run_dir(run_dir: Path) -> Grain:
    """A run dir's grain, from its config.yaml (the epoch grain when it has none yet); RunConfigError when it
    cannot be read."""
    from prelnx.records.run_config import has_config, read_run_config

    return of(read_run_config(run_dir)) if has_config(run_dir) else Grain.EPOCH
