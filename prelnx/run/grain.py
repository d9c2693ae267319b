"""A run's metrics grain, decided in one place: a row per epoch, or a row per validation every N updates.

Translation validates once per epoch: metrics.jsonl has a row per epoch and TensorBoard's step is the epoch.
With `eval.every_updates: N` (required by task: masked_lm, where BERT is measured in updates) fairseq validates
every N updates, each validation is a row (keyed by its update; it carries its epoch too) and TensorBoard's
step is the update. Checkpoints are then saved at the same updates (plan.run_argv), so a checkpoint always
sits at a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prelnx.config.schema import Config


def by_update(config: Config) -> bool:
    return config.eval.every_updates is not None


def key(update_grain: bool) -> str:
    """The metrics.jsonl field that identifies a row (and is TensorBoard's step)."""
    return "num_updates" if update_grain else "epoch"


def step(row: dict[str, Any], update_grain: bool) -> int:
    return int(row[key(update_grain)])


def unit(update_grain: bool) -> str:
    return "update" if update_grain else "epoch"


def planned(config: Config) -> int:
    """How many of the grain's units the run is set to train (0 when the config does not say)."""
    return (config.train.max_update or 0) if by_update(config) else (config.train.max_epoch or 0)


def run_dir_by_update(run_dir: Path) -> bool:
    """Whether a run dir's rows are at the update grain, from its config.yaml (False when it has none)."""
    import yaml

    try:
        saved = yaml.safe_load((run_dir / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False
    return (saved.get("eval") or {}).get("every_updates") is not None
