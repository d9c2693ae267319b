"""The fairseq children this process started, so that a sweep stopped by SIGTERM can stop them all, and SIGTERM
turned into the KeyboardInterrupt that every launcher already handles."""

from __future__ import annotations

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
