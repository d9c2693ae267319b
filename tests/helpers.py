"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def scalar_steps(run_dir: Path, tag: str) -> list[int]:
    """The steps of a TensorBoard scalar in a run dir's event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    return [event.step for event in accumulator.Scalars(tag)]
