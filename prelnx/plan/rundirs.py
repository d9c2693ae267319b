"""Where runs and sweeps go by default: one naming rule, under runs/."""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config


def default_run_dir(config: Config, runs_root: Path = Path("runs")) -> Path:
    """runs/<name>; a name that would leave runs/ (absolute, `..`, a backslash) is refused: give --run-dir."""
    return runs_subdir(config.name or "run", runs_root)


def runs_subdir(name: str, runs_root: Path = Path("runs")) -> Path:
    """runs_root/name, for a run's or a sweep's name; ValueError for a name that would leave runs_root."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or "\\" in name or not parts:
        raise ValueError(f"name: {name!r} would put the run outside {runs_root}/; use a plain name "
                         f"(letters, digits, - _ . and / for subfolders) or give --run-dir explicitly")  # fmt: skip
    return runs_root / name
