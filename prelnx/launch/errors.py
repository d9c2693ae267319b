"""The refusals that stop a run before it trains (config/errors.py's Refusal, with its exit code), and what rank 0 of
a Slurm job reports of an error: its message and exit code, as `prelnx train` would exit (commands/errors.py)."""

from __future__ import annotations

from prelnx.atomic import io_reason
from prelnx.exits import Exit, Refusal
from prelnx.records.lock import RunLocked


class RunConflict(Refusal):
    """The run dir holds a different run; the message says how to proceed."""


class RunIOError(OSError):
    """The run dir could not be written (full disk, permissions); the message names the path."""


class SlurmUnavailable(Refusal):
    """The job could not be submitted (no Slurm here, or sbatch refused it); the message has Slurm's words."""


def error_exit(error: BaseException) -> tuple[str, int] | None:
    """The message and exit code of an error that stops a run before it trains; None for others."""
    if isinstance(error, RunLocked):
        return str(error), Exit.BUSY
    if isinstance(error, RunIOError):
        return str(error.strerror), Exit.FAILED
    if isinstance(error, OSError):  # e.g. --run-dir under a file
        return io_reason(error), Exit.FAILED
    if isinstance(error, Refusal):
        return str(error), error.exit_code
    return None  # a bug: raised, its traceback in the job's log

