"""One writer per run dir: an exclusive flock held for the life of the run (a crash or kill -9 leaves no stale lock),
inherited by the fairseq child and its data loaders; they follow a killed prelnx within seconds, so a lock whose owner
pid (written in the file, with its host) is dead is waited for (up to DEAD_OWNER_WAIT_S) before refusing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from prelnx.exits import Exit, Refusal
from prelnx.machine import pid_alive

LOCK_NAME = ".lock"
DEAD_OWNER_WAIT_S = 20.0


class RunLocked(Refusal):
    """Another process holds the run dir: nothing was done."""

    exit_code = Exit.BUSY


def _owner(text: str) -> list[str]:
    """The lock file's `PID HOST`, '' for a part not written (a lock file from before the host, a full disk)."""
    return (text.split() + ["", ""])[:2]


def owner_alive(folder: Path) -> bool | None:
    """Whether the pid written in `folder`'s lock file is a live process, if written on this host (reads the file
    only: no lock is probed, so a starting training never finds its own run dir taken). None where this host cannot
    tell: no lock file, no pid, or an owner on another host (a Slurm node's)."""
    try:
        pid, host = _owner((folder / LOCK_NAME).read_text(errors="replace"))
    except OSError:
        return None
    return pid_alive(int(pid)) if pid.isdigit() and host == socket.gethostname() else None


class RunLock:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.fd: int | None = None

    def _try(self) -> int | None:
        """A descriptor holding the lock on the file now at self.path, or None if someone else holds it."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            try:  # the file we locked must still be the run dir's (not one moved away by --force meanwhile)
                if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def acquire(self) -> RunLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = self._try()
        deadline = time.monotonic() + DEAD_OWNER_WAIT_S
        while fd is None:
            with open(self.path, "rb") as handle:
                owner = _owner(handle.read(300).decode(errors="replace"))[0] or "unknown"
            dead = owner.isdigit() and not pid_alive(int(owner))
            if dead and time.monotonic() < deadline:
                time.sleep(0.25)  # its training processes are ending (the kernel signals them): wait for them
                fd = self._try()
            elif dead:
                raise RunLocked(f"{self.folder}: this run dir is still locked by the processes of a prelnx (pid "
                                f"{owner}) that has ended; find them with `fuser {self.path}` and stop them")  # fmt: skip
            else:
                raise RunLocked(f"{self.folder}: this run dir is in use by another prelnx process (pid {owner}); "
                                f"wait for it to end, or stop it first (kill {owner})")  # fmt: skip
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        except OSError:
            pass  # a full disk: the lock holds all the same, only the pid in the message is missing
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # the lock goes with the last descriptor (a still-running child keeps it)
            self.fd = None

    def __enter__(self) -> Self:
        return self.acquire() if self.fd is None else self

    def __exit__(self, *_: object) -> None:
        self.release()


def is_locked(folder: Path) -> bool:
    """Whether another process holds `folder`'s lock right now (probing takes it for an instant)."""
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR)  # read-write: network file systems emulate flock with write locks
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: treat as busy, the caller asks again later
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
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
