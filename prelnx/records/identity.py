"""Whether a run dir holds the run of a config: its saved config.yaml compared with the config, minus the keys that
change how a run executes but not what it computes. Also the config as TensorBoard hparams."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.config.load import config_to_dict, flatten_values
from prelnx.config.schema import Config
from prelnx.records.run_config import has_config, read_run_config

# Keys that change how a run executes but not what it computes: they may differ when a run is resumed. With
# train.effective_batch_tokens, BATCH_KEYS are execution too: the batch per update stays the same.
EXECUTION_KEYS = {"name", "train.threads", "train.num_workers", "train.log_interval", "train.loss_ceiling",
                  "train.keep_every_updates",
                  # diagnostics only read the training (no random draws; the weights restored bit for bit)
                  "train.diagnostics.every_updates", "train.diagnostics.sharpness_every_updates"}
BATCH_KEYS = {"train.processes", "train.nodes", "train.update_freq"}
BUDGET_KEYS = ("train.max_epoch", "train.max_update")  # may grow on a finished run (launch/local.py: extension)


@dataclass(frozen=True)
class Difference:
    key: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.key}: {self.old!r} -> {self.new!r}"

    @property
    def grows_budget(self) -> bool:
        """A training budget raised (a number to a larger one): the run trained so far stays what it was."""
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (self.old, self.new))
        return self.key in BUDGET_KEYS and numbers and self.new > self.old


def saved_differences(run_dir: Path, config: Config) -> list[Difference] | None:
    """Keys whose values differ between the run dir's config.yaml and `config` (execution-only keys ignored); None
    when the run dir holds no run yet (RunConfigError when its config.yaml cannot be read)."""
    if not has_config(run_dir):
        return None
    old, new = flatten_values(config_to_dict(read_run_config(run_dir))), flatten_values(config_to_dict(config))
    ignored = EXECUTION_KEYS | (BATCH_KEYS if config.train.effective_batch_tokens is not None else set())
    keys = sorted((set(old) | set(new)) - ignored)
    return [Difference(key, old.get(key), new.get(key)) for key in keys if old.get(key) != new.get(key)]


def hparams_of(config: Config) -> dict[str, Any]:
    """The config as TensorBoard hparams (scalars and strings only)."""
    flat = flatten_values(config_to_dict(config))
    return {key: value if isinstance(value, (int, float, str, bool)) else str(value) for key, value in flat.items()}
