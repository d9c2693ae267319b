"""The refusals that stop a run before it trains, and the one mapping of them to a message and an exit code
(used by `prelnx train`, `prelnx finetune` and rank 0 of a Slurm job)."""

from __future__ import annotations

from prelnx.atomic import io_reason
from prelnx.config.load import ConfigError
from prelnx.data.check import DataDamaged
from prelnx.plan.data import DataNotReady
from prelnx.records.checkpoints import CheckpointRefused
from prelnx.records.lock import RunLocked
from prelnx.records.status import EXIT_BUSY


class RunConflict(ValueError):
    """The run dir holds a different run; the message says how to proceed."""


class RunIOError(OSError):
    """The run dir could not be written (full disk, permissions); the message names the path."""


class SlurmUnavailable(RuntimeError):
    """The job could not be submitted (no Slurm here, or sbatch refused it); the message has Slurm's words."""


def error_exit(error: BaseException) -> tuple[str, int] | None:
    """The message and exit code of an error that stops a run before it trains; None for others."""
    if isinstance(error, RunLocked):
        return str(error), EXIT_BUSY
    if isinstance(error, RunIOError):
        return str(error.strerror), 1
    if isinstance(error, OSError):  # e.g. --run-dir under a file
        return io_reason(error), 1
    if isinstance(error, (ConfigError, DataNotReady, DataDamaged, CheckpointRefused, RunConflict, ValueError,
                          SlurmUnavailable)):  # fmt: skip
        return str(error), 2
    return None

