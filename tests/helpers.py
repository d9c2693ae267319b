"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
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


@contextlib.contextmanager
def logged(lines: list[str] | None = None) -> Iterator[list[str]]:
    """The console lines prelnx's loggers give while inside (a warning as `warning: ...`, as the console writes it),
    kept in `lines`, whatever the process's console set-up (prelnx/console.py)."""
    kept: list[str] = [] if lines is None else lines

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(("warning: " if record.levelno >= logging.WARNING else "") + record.getMessage())

    logger, handler = logging.getLogger("prelnx"), Keep()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield kept
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


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


def rendered(say):
    """An `on_event` for `train(...)` that gives `say` each event's console line (what `prelnx train` prints)."""
    from prelnx.launch.events import render

    return lambda event: say(render(event))


def stop_after_an_epoch(lines: list[str] | None = None, past: int = 0):
    """An `on_event` for `train(...)`: keeps the console lines in `lines`, and stops the run as Ctrl-C does at the
    first validation row the run writes past epoch (or, at the update grain, update) `past` - a resume may first
    validate its checkpoint's own epoch or update again."""

    def echo(line: str) -> None:
        if lines is not None:
            lines.append(line)
        head = line.split("|")[0].split()
        if len(head) == 3 and head[0] in ("epoch", "update") and head[2] == "done" and int(head[1]) > past:
            raise KeyboardInterrupt

    return rendered(echo)


def epochs_recorded(run_dir: Path) -> list[int]:
    from prelnx.records.metrics import read_metrics

    return [row["epoch"] for row in read_metrics(run_dir)]


def sigint_as_in_a_terminal() -> None:
    """Ctrl-C's default in a child (preexec_fn), whatever pytest inherited: a suite started as a background job of a
    script (`cmd &`) inherits SIGINT as ignored, and Python then keeps ignoring it, so a child would never see the
    test's Ctrl-C (prelnx, like any Unix tool, leaves an inherited SIG_IGN as it is)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_until_it_trains_past(command: list[str], run_dir: Path, epoch: int, log: Path, *, timeout: float = 300.0,
                             stop=None) -> str:
    """Start `command` (a `prelnx train` of a run with a FAR_EPOCHS budget), wait until the run dir records an epoch
    past `epoch`, then stop it (SIGTERM, as a scheduler or `kill` would; `stop(process)` to stop it otherwise).
    Returns what it printed. The run cannot end on its own first, whatever the machine's speed."""
    import signal
    import subprocess
    import time

    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   preexec_fn=sigint_as_in_a_terminal)  # a `stop` may be a Ctrl-C
        deadline = time.monotonic() + timeout
        try:
            while not [e for e in epochs_recorded(run_dir) if e > epoch]:
                assert process.poll() is None, f"the run ended before it trained past epoch {epoch}: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no epoch past {epoch} within {timeout} s"
                time.sleep(0.2)
        finally:
            if process.poll() is None:
                (stop or (lambda p: p.send_signal(signal.SIGTERM)))(process)
            process.wait(timeout=120)
    return log.read_text()


def config_writer(base: dict, folder: Path, default_name: str):
    """A function writing `base` with some sections merged with overrides (a dict section is merged key by key, any
    other value replaces) as YAML in `folder`, returning its path: the tiny-config fixtures' one writer."""
    import yaml

    def write(name: str = default_name, **sections: dict) -> Path:
        data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in base.items()}
        for key, value in sections.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        path = folder / name
        path.write_text(yaml.safe_dump(data))
        return path

    return write
