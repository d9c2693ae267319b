"""The refusals that stop a run before it trains (prelnx.exits.Refusal, config/strict_yaml.py's ConfigError among
them, with their exit codes), and what rank 0 of a Slurm job reports of an error: its message and exit code, as
`prelnx train` would exit (commands/options.py)."""

from __future__ import annotations

from prelnx.atomic import io_reason
from prelnx.exits import Exit, Refusal


class RunConflict(Refusal):
    """The run dir holds a different run; the message says how to proceed."""


class RunIOError(OSError):
    """The run dir could not be written (full disk, permissions); the message names the path."""


class SlurmUnavailable(Refusal):
    """The job could not be submitted (no Slurm here, or sbatch refused it); the message has Slurm's words."""


def error_exit(error: BaseException) -> tuple[str, int] | None:
    """The one line and exit code of an error that is not a bug (every command's, through commands/options.py, and
    rank 0's of a Slurm job); None for a bug."""
    if isinstance(error, Refusal):  # a run dir in use (records.lock's RunLocked) too: BUSY
        return str(error), error.exit_code
    if isinstance(error, OSError):  # a full disk, permissions, a path under a file: not prelnx's bug
        # without a file name the reason is already whole (RunIOError names the run dir in it)
        return (io_reason(error) if error.filename or not error.strerror else error.strerror), Exit.FAILED
    return None  # a bug

