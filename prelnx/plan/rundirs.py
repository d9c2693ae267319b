"""Where runs and sweeps go by default: one naming rule under runs/, predictable from the command.

- `prelnx train`: runs/train/<run name> (the config's path under configs/, e.g. runs/train/demo/preln_nowarmup);
- `prelnx sweep`: runs/<sweep name>, holding its runs and nothing else (a `--grid` sweep of a training config is
  named `<run name with / as ->-grid`, e.g. runs/demo-postln_warmup-grid), so `tensorboard --logdir runs/<sweep>`
  shows exactly that sweep's runs.
A run an earlier prelnx started in runs/<run name> keeps its folder (so its re-run resumes it there).
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config

RUNS = Path("runs")
TRAININGS = "train"  # runs/train/: single trainings; no sweep may take this name


def default_run_dir(config: Config, runs_root: Path = RUNS) -> Path:
    """runs/train/<name>, or runs/<name> where an earlier prelnx already trained this run; a name that would leave
    runs/ (absolute, `..`, a backslash) is refused: give --run-dir."""
    name = config.name or "run"
    new = runs_subdir(name, runs_root / TRAININGS)
    earlier = runs_subdir(name, runs_root)
    if not new.exists() and (earlier / "config.yaml").is_file():
        return earlier
    return new


def sweep_dir(name: str, runs_root: Path = RUNS) -> Path:
    """runs/<sweep name>; runs/train/ is refused (it holds single trainings)."""
    if Path(name).parts[:1] == (TRAININGS,):
        raise ValueError(f"sweep name {name!r}: runs/{TRAININGS}/ holds single trainings (prelnx train); name the "
                         f"sweep otherwise (--name) or give --out")  # fmt: skip
    return runs_subdir(name, runs_root)


def runs_subdir(name: str, runs_root: Path = RUNS) -> Path:
    """runs_root/name, for a run's or a sweep's name; ValueError for a name that would leave runs_root."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or "\\" in name or not parts:
        raise ValueError(f"name: {name!r} would put the run outside {runs_root}/; use a plain name "
                         f"(letters, digits, - _ . and / for subfolders) or give --run-dir explicitly")  # fmt: skip
    return runs_root / name
