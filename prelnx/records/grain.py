"""A run's metrics grain, decided in one place: a row per epoch, or a row per validation every N updates.

Translation validates once per epoch: metrics.jsonl has a row per epoch and TensorBoard's step is the epoch.
With `eval.every_updates: N` (required by task: masked_lm, where BERT is measured in updates) fairseq validates
every N updates, each validation is a row (keyed by its update; it carries its epoch too) and TensorBoard's
step is the update. Checkpoints are then saved at the same updates (plan.common.run_argv), so a checkpoint always
sits at a row.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Mapping

from prelnx.config.schema import Config


class Grain(enum.Enum):
    EPOCH = "epoch"
    UPDATE = "update"

    @property
    def key(self) -> str:
        """The metrics.jsonl field that identifies a row (and is TensorBoard's step)."""
        return "num_updates" if self is Grain.UPDATE else "epoch"

    @property
    def unit(self) -> str:
        return self.value

    def step(self, row: Mapping[str, Any]) -> int:
        return int(row[self.key])


def of(config: Config) -> Grain:
    return Grain.UPDATE if config.eval.every_updates is not None else Grain.EPOCH


def planned(config: Config) -> int:
    """How many of the grain's units the run is set to train (0 when the config does not say)."""
    return (config.train.max_update or 0) if of(config) is Grain.UPDATE else (config.train.max_epoch or 0)


def stride(config: Config) -> int:
    """The grain's units between two rows: eval.every_updates at the update grain, one epoch otherwise."""
    return config.eval.every_updates or 1


def of_run_dir(run_dir: Path) -> Grain:
    """A run dir's grain, from its config.yaml (the epoch grain when it has none yet); RunConfigError when it
    cannot be read."""
    from prelnx.records.run_config import has_config, read_run_config

    return of(read_run_config(run_dir)) if has_config(run_dir) else Grain.EPOCH
