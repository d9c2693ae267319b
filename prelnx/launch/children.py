"""The fairseq children this process started, so that a sweep stopped by SIGTERM can stop them all; SIGTERM
turned into the KeyboardInterrupt that every launcher already handles; a child kept on its own cores."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

RUNNING_CHILDREN: set[subprocess.Popen] = set()


def stop_children() -> None:
    # SIGTERM, not SIGINT: a child started from a background job inherits SIGINT as ignored.
    for child in list(RUNNING_CHILDREN):
        if child.poll() is None:
            child.terminate()  # a re-run leaves these alone (unless --force)


def stop_on_sigterm() -> Any:
    """In the main thread, make SIGTERM (kill, a scheduler's stop) stop the fairseq child too, as Ctrl-C does.
    Returns the previous handler (None outside the main thread), for `restore`."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def restore(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def pin(pid: int, cpus: frozenset[int]) -> bool:
    """Keep a just-started child on `cpus` (its torch threads and data-loader processes, created later, inherit
    it). Set from here, after the start, not in a preexec_fn (unsafe in a threaded sweep); False where the OS
    does not allow it (then the child runs unpinned)."""
    try:
        os.sched_setaffinity(pid, cpus)
    except (AttributeError, OSError):
        return False
    return True


def core_slots(jobs: int) -> list[frozenset[int]] | None:
    """This process's cores split into `jobs` disjoint slots (None when there are fewer cores than jobs or the OS
    cannot tell)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if len(cores) < jobs:
        return None
    size = len(cores) // jobs
    return [frozenset(cores[i * size:(i + 1) * size]) for i in range(jobs)]
