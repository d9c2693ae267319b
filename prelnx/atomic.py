"""Atomic file writes (a reader never sees a half-written file, an interrupted write leaves the old one), and the
one wording of an I/O failure (`io_reason`) that status.json and error messages use."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

_IO_WORDS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded"}


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp creates 0600; results are meant to be shared like any other file
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def overwrite_in_place(path: Path, text: str) -> bool:
    """Last resort on a full disk: rewrite an existing small file in the blocks it already has. Not atomic (a reader
    may see a mix for an instant); False when even this fails (the file is then left as it was, or shorter)."""
    data = text.encode()
    try:
        with open(path, "r+b") as handle:
            if len(data) > max(os.fstat(handle.fileno()).st_blocks * 512, os.path.getsize(path)):
                return False
            handle.write(data)
            handle.truncate(len(data))
            handle.flush()
            os.fsync(handle.fileno())
        return True
    except OSError:
        return False


def io_reason(error: OSError, near: Path | str | None = None) -> str:
    """`no space left on device: runs/x/metrics.jsonl` — what failed and where (else `near`), for users and status.json."""
    where = error.filename or (str(near) if near is not None else "")
    what = _IO_WORDS.get(error.errno or 0) or (error.strerror or str(error)).lower()
    return f"{what}: {where}" if where else what
