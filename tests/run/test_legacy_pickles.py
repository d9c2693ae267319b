"""Slurm jobs that submitit pickled before the redesign of prelnx/run/ (0.1: `prelnx.run.slurm_train`,
`prelnx.sweep.executors`) still load into today's classes and run: a job requeued across an upgrade must start.

The two files in tests/fixtures/ were written by submitit's own DelayedSubmission.dump with the 0.1 layout."""

from __future__ import annotations

from pathlib import Path

import pytest
import submitit

from prelnx.launch.slurm_task import SlurmTrainTask
from prelnx.records.status import read_status
from prelnx.sweep.executors import SubmititRun

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load(name: str):
    return submitit.helpers.DelayedSubmission.load(FIXTURES / f"{name}_before_0.2.pkl").function


def test_a_slurm_training_task_pickled_before_the_move_loads_into_todays_class():
    task = load("slurm_train_task")
    assert isinstance(task, SlurmTrainTask) and task.config.name == "pickled" and task.force is False
    requeued = task.checkpoint().function  # what a timeout or preemption submits again
    assert isinstance(requeued, SlurmTrainTask) and requeued.config == task.config


@pytest.mark.slow
def test_a_sweep_job_pickled_before_the_move_still_trains(tmp_path):
    job = load("sweep_submitit_run")
    assert isinstance(job, SubmititRun)
    job.run_dir = tmp_path / "run"  # the pickled job's run dir was a placeholder
    assert job() == "finished"
    assert (read_status(tmp_path / "run") or {}).get("status") == "finished"
