"""The fairseq children this process started (a sweep stopped by SIGTERM stops them all); SIGTERM turned into the
KeyboardInterrupt that every launcher already handles; a child kept on its own cores."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

RUNNING_CHILDREN: set[subprocess.Popen] = set()


def stop_children() -> None:
    # SIGTERM, not SIGINT: a child started from a background job inherits SIGINT as ignored.
    for child in list(RUNNING_CHILDREN):
        if child.poll() is None:
            child.terminate()  # a re-run leaves these alone (unless --force)


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """In the main thread, SIGTERM (kill, a scheduler's stop) raises KeyboardInterrupt inside, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def pin(pid: int, cpus: frozenset[int]) -> bool:
    """Keep a just-started child on `cpus` (its threads and data-loader processes inherit it). Set after the start,
    not in a preexec_fn (unsafe in a threaded sweep); False where the OS does not allow it (the child runs unpinned)."""
    try:
        os.sched_setaffinity(pid, cpus)
    except (AttributeError, OSError):
        return False
    return True


def core_slots(jobs: int) -> list[frozenset[int]] | None:
    """This process's cores split into `jobs` disjoint slots (None: fewer cores than jobs, or the OS cannot tell)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if len(cores) < jobs:
        return None
    size = len(cores) // jobs
    return [frozenset(cores[i * size:(i + 1) * size]) for i in range(jobs)]
