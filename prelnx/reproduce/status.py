"""Where a reproduction stands: its stages (complete when their marker is written, run.py) and the runs of every
sweep stage, read by sweep/status.py (each run named `<stage>/<run>`)."""

from __future__ import annotations

from pathlib import Path

from prelnx.reproduce.plan import marker
from prelnx.sweep.status import RunState, is_sweep_dir, sweep_states


def is_reproduction(path: Path) -> bool:
    """A `prelnx reproduce` folder: its stage markers, or the plan it writes before its first stage."""
    return (path / "stages").is_dir() or (path / "plan.txt").is_file()


def stages(path: Path) -> list[tuple[str, bool]]:
    """(stage folder, complete) for every stage that has begun (its folder exists), in name order."""
    return [(folder.name, marker(path, folder.name).is_file()) for folder in sorted(path.iterdir())
            if folder.is_dir() and folder.name != "stages" and not folder.name.startswith(".")]  # fmt: skip


def reproduction_states(path: Path) -> list[RunState]:
    return [state for name, _ in stages(path) if is_sweep_dir(path / name)
            for state in sweep_states(path / name, prefix=f"{name}/")]  # fmt: skip


def stage_lines(path: Path) -> list[str]:
    begun = stages(path)
    done = [name for name, complete in begun if complete]
    left = [name for name, complete in begun if not complete]
    return [f"stages: {len(done)} complete" + (f" ({', '.join(done)})" if done else "")
            + (f"; begun, not complete: {', '.join(left)}" if left else "")]  # fmt: skip
