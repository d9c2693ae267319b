"""A run dir's config.yaml: the one writer and the one reader. It is the config `prelnx train` trained, read back
through the config package's strict reader and validator, so it means what it meant (today's defaults for keys it
lacks); a missing, non-YAML or invalid file is one `RunConfigError` naming the file, never a silent guess. Also
whether a run dir holds the run of a config: the saved config minus the keys that change how a run executes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.config.load import TOP_KEYS, ConfigError, config_from_dict, config_to_dict, dump_config, flatten_values
from prelnx.config.schema import Config
from prelnx.config.strict_yaml import YamlInputError, read_yaml
from prelnx.layouts import is_file_spec

CONFIG_NAME = "config.yaml"
LAYOUT_SUM = "layout.sha256"  # a user's layout file as the run started with it: `HEX  PATH`, as `sha256sum -c` reads


class RunConfigError(ConfigError):
    """A run dir's config.yaml is missing or cannot be read as a config; the message names the file."""


def has_config(run_dir: Path) -> bool:
    """Whether `run_dir` holds a run (prelnx train writes config.yaml before anything else of it)."""
    return (run_dir / CONFIG_NAME).is_file()


def write_run_config(run_dir: Path, config: Config) -> None:
    write_text_atomic(run_dir / CONFIG_NAME, dump_config(config))


def layout_sum(config: Config) -> tuple[Path, str] | None:
    """The config's own layout file (model.layout: PATH.py:CLASS) and its sha256; None for a shipped layout."""
    if not is_file_spec(config.model.layout):
        return None
    path = Path(config.model.layout.rpartition(":")[0])
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def record_layout_sum(run_dir: Path, config: Config) -> None:
    """At a run's start (no checkpoint to resume): the layout file it trains with, so a resume can tell an edit."""
    if (summed := layout_sum(config)) is not None:
        write_text_atomic(run_dir / LAYOUT_SUM, f"{summed[1]}  {summed[0]}\n")


def recorded_layout_sum(run_dir: Path) -> str | None:
    """The sha256 of the layout file the run dir's run started with (None: a shipped layout, or recorded before); a
    record that holds none (empty, truncated, damaged) is a RunConfigError: the run dir says it cannot know."""
    path = run_dir / LAYOUT_SUM
    if not path.exists():
        return None
    try:
        recorded = path.read_text().split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        recorded = ""
    if re.fullmatch(r"[0-9a-f]{64}", recorded) is None:
        raise RunConfigError(f"{path}: unreadable (no sha256 of the layout file the run started with); restore it from "
                             f"a copy of the run dir, or train into a new run dir (--run-dir, or --force to set the "
                             f"old run aside)")  # fmt: skip
    return recorded


def changed_layout_file(run_dir: Path, config: Config) -> Path | None:
    """The config's layout file where it is not the one the run dir's run started with; None where it is, for a
    shipped layout, and for a run recorded before layout.sha256 existed (it resumes unchecked, as it did)."""
    if (recorded := recorded_layout_sum(run_dir)) is None:
        return None
    summed = layout_sum(config)
    return summed[0] if summed is not None and summed[1] != recorded else None


def refuse_changed_layout_file(run_dir: Path) -> None:
    """Before a command computes with a run's checkpoints (evaluate, grads --run-dir): RunConfigError where its layout
    file changed since the run started (they were trained with the file as it was); no layout.sha256: not checked."""
    if recorded_layout_sum(run_dir) and (changed := changed_layout_file(run_dir, read_run_config(run_dir))):
        raise RunConfigError(f"{changed}: changed since the run in {run_dir} started with it ({LAYOUT_SUM} there), so "
                             f"its checkpoints were not trained with this code; restore the file as the run trained it")


def read_run_config(run_dir: Path) -> Config:
    path = run_dir / CONFIG_NAME
    if not path.is_file():
        raise RunConfigError(f"{run_dir}: not a run dir (no {CONFIG_NAME}); give a folder `prelnx train` wrote")
    try:
        return config_from_dict(read_yaml(path, TOP_KEYS, "a run's config", emitted=True) or {}, str(path))
    except (YamlInputError, ConfigError) as error:  # one problem a line, each naming the file: one line here
        lines = [line.strip().removeprefix(str(path)).lstrip(": ") for line in str(error).splitlines()]
        said = "; ".join(line for line in lines if line and not line.endswith(":"))  # not ConfigError's heading
        raise RunConfigError(f"{path}: not a readable run config ({said}); it is the file `prelnx train` wrote: "
                             f"restore it, or train the run again with --force") from None  # fmt: skip


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


# THE key table of an arm: the keys that cannot change what is trained; docs/verdicts.md gives each key's reason, the
# borderline ones decided, and why BATCH_KEYS count only without train.effective_batch_tokens (a test keeps it equal).
NOT_TRAINING_KEYS = frozenset({"name", "train.seed", "data.path", "train.threads", "train.num_workers",
                               "train.log_interval", "train.keep_every_updates", "train.keep_last_epochs"})
NOT_TRAINING_PREFIXES = ("train.diagnostics.", "eval.")  # every key under these (diagnostics only read the training)


def arm_values(config: Config, run_dir: Path | None = None) -> dict[str, str]:
    """The config's keys that can change what is trained (all but NOT_TRAINING_KEYS), each value as canonical JSON:
    equal dicts are one arm. With `run_dir`, its layout file's code too (layout.sha256, short): one config trained
    with two versions of its file is two arms."""
    flat = flatten_values(config_to_dict(config))
    ignored = NOT_TRAINING_KEYS | (BATCH_KEYS if config.train.effective_batch_tokens is not None else set())
    summed = recorded_layout_sum(run_dir) if run_dir is not None else None
    return {key: json.dumps(value, sort_keys=True) for key, value in sorted(flat.items())
            if key not in ignored and not key.startswith(NOT_TRAINING_PREFIXES)} | (
        {LAYOUT_SUM: json.dumps(summed[:8])} if summed else {})
