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


# A budget no test lets a run reach: a test that stops a training stops it long before it could end, on any machine.
# (A stop lands a moment after the parent reads a line; a tiny run of a few epochs can finish in that moment on a fast
# CPU, and the test then sees "already holds the whole budget" instead of the state it meant to reach.)
FAR_EPOCHS = 1000


def stop_after_an_epoch(lines: list[str] | None = None):
    """An echo for `train(...)`: keeps the lines it is given in `lines`, and stops the run as Ctrl-C does at the
    first validation row the run writes (an epoch, or N updates at the update grain)."""

    def echo(line: str) -> None:
        if lines is not None:
            lines.append(line)
        if line.startswith(("epoch ", "update ")) and " done" in line.split("|")[0]:
            raise KeyboardInterrupt

    return echo


def epochs_recorded(run_dir: Path) -> list[int]:
    from prelnx.records.metrics import read_metrics

    return [row["epoch"] for row in read_metrics(run_dir)]
