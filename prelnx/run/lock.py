"""One writer per run dir: an exclusive OS lock (flock) held for the life of the run.

The kernel releases a flock when every process holding the open file is gone, so a crash or a kill -9
never leaves a stale lock. The fairseq child inherits the locked descriptor: the run dir stays locked as
long as either prelnx or its training lives. The lock file holds the owner's pid for the refusal message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

LOCK_NAME = ".lock"


class RunLocked(RuntimeError):
    """Another process holds the run dir."""


class RunLock:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.fd: int | None = None

    def acquire(self, what: str = "run dir") -> "RunLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLocked(
                f"{self.folder}: this {what} is in use by another prelnx process (pid {owner}); "
                f"wait for it to end, or stop it first (kill {owner})"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # a full disk: the lock holds all the same, only the pid in the message is missing
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # the lock goes with the last descriptor (a still-running child keeps it)
            self.fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire() if self.fd is None else self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_locked(folder: Path) -> bool:
    """Whether another process holds `folder`'s lock right now (does not take it)."""
    path = folder / LOCK_NAME
    if not path.is_file():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """A short, blocking exclusive lock on `path` (e.g. while a sweep rewrites its summary)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
