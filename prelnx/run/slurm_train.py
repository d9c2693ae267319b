"""`prelnx.run.slurm_train` as pickled by `prelnx train --executor slurm` before 0.2: the task class now lives in
prelnx/launch/slurm_task.py (same attributes, so a job pickled then unpickles into today's class)."""

from prelnx.launch.slurm_task import SlurmTrainTask

__all__ = ["SlurmTrainTask"]
