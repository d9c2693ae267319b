"""Where runs and sweeps go by default: `prelnx train` to runs/train/<run name> (runs/train/demo/preln_nowarmup),
`prelnx sweep` to runs/<sweep name>, which holds its runs and nothing else (for `tensorboard --logdir`).
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.errors import Refusal
from prelnx.config.schema import Config

RUNS = Path("runs")
TRAININGS = "train"  # runs/train/: single trainings; no sweep may take this name


def default_run_dir(config: Config, runs_root: Path = RUNS) -> Path:
    """runs/train/<name>; a name that would leave runs/ (absolute, `..`, a backslash) is refused: give --run-dir."""
    return runs_subdir(config.name or "run", runs_root / TRAININGS)


def sweep_dir(name: str, runs_root: Path = RUNS) -> Path:
    """runs/<sweep name>; runs/train/ is refused (it holds single trainings)."""
    if Path(name).parts[:1] == (TRAININGS,):
        raise Refusal(f"sweep name {name!r}: runs/{TRAININGS}/ holds single trainings (prelnx train); name the "
                         f"sweep otherwise (--name) or give --out")  # fmt: skip
    return runs_subdir(name, runs_root)


def runs_subdir(name: str, runs_root: Path = RUNS) -> Path:
    """runs_root/name, for a run's or a sweep's name; Refusal for a name that would leave runs_root."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or "\\" in name or not parts:
        raise Refusal(f"name: {name!r} would put the run outside {runs_root}/; use a plain name "
                         f"(letters, digits, - _ . and / for subfolders) or give --run-dir explicitly")  # fmt: skip
    return runs_root / name
