"""launch: the only code that starts or stops a training (a local fairseq child, torchrun workers, a Slurm job's
tasks; fairseq in this process for analysis), followed as typed events; it decides nothing about what to train."""

import enum


class Executor(enum.StrEnum):
    """Where trainings run (--executor of train, sweep and reproduce)."""

    LOCAL = "local"  # here: a child process (torchrun workers with train.processes > 1)
    SLURM = "slurm"  # Slurm jobs, through submitit
    SUBMITIT_LOCAL = "submitit-local"  # submitit's local processes (a sweep's, to try the Slurm path here)


RUN_EXECUTORS = (Executor.LOCAL, Executor.SLURM)  # one run (prelnx train) is a child here or one Slurm job
RunExecutor = enum.StrEnum("RunExecutor", {e.name: e.value for e in RUN_EXECUTORS})  # train's --executor choices
