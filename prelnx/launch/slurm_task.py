"""One run across the tasks of ONE Slurm job of train.nodes x train.processes tasks (`prelnx train --executor slurm`).

Rank 0 runs prelnx's own `launch.local.train` (only it writes the run dir); every other rank runs command.txt's
fairseq as its own child (the plugin's parent watch: a pid means something only on its node) while rank 0's trains
(`Rank0Marks`). They meet through fairseq's Slurm rendezvous (`--distributed-port` = 20000 + job id % 20000; the CPU
fix is in prelnx_fairseq_plugin/distributed.py). The submitting side is slurm_job.py. Slurm's CPUs per node and
scancel are asked here; its queue, by the one watcher (slurm_watch.py).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx import child_report
from prelnx.config.schema import Config
from prelnx.launch.errors import error_exit
from prelnx.plan.launch import plan_run, with_threads
from prelnx.plan.parallel import SLURM_PORT_ENV, rendezvous_port

DEFAULT_TIME_MIN = 24 * 60
DEFAULT_CPUS_CAP = 8  # the CPUs a task gets when none are asked: the partition's per node, shared, up to this
ENDED = "ENDED"  # squeue no longer lists the job: it ended (how, Slurm no longer says)
GRACE_S = 30  # how long the other ranks' fairseq may outlive rank 0's task (it ends its own training meanwhile)


def run_slurm(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    """A Slurm command's answer (sinfo, scancel, squeue); None where it could not run or did not answer in 30 s."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def partition_cpus(partition: str | None) -> int | None:
    """CPUs per node of `partition` (the default partition if None), from sinfo; None if Slurm does not say."""
    done = run_slurm(["sinfo", "-h", "-o", "%P %c"] + (["-p", partition] if partition else []))
    for line in (done.stdout if done is not None and done.returncode == 0 else "").splitlines():
        name, _, cpus = line.partition(" ")
        if partition is None and not name.endswith("*"):
            continue
        digits = cpus.strip().rstrip("+")
        if digits.isdigit():
            return int(digits)
    return None


def default_cpus_per_run(partition: str | None, tasks_per_node: int = 1) -> int:
    """CPUs for each of `tasks_per_node` tasks: the partition's CPUs per node shared by them, up to DEFAULT_CPUS_CAP."""
    cpus = partition_cpus(partition)
    return max(1, min(DEFAULT_CPUS_CAP, cpus // tasks_per_node)) if cpus else DEFAULT_CPUS_CAP


def cancel(job_id: str) -> None:
    run_slurm(["scancel", str(job_id)])


@dataclass(frozen=True)
class SlurmRequest:
    """What a job asks of Slurm: `prelnx train --executor slurm`'s one job, or each run's job of a Slurm sweep."""

    nodes: int
    tasks_per_node: int
    cpus_per_task: int
    gpus_per_node: int = 0
    mem_gb: int | None = None  # per node
    time_min: int = DEFAULT_TIME_MIN
    partition: str | None = None
    array_parallelism: int | None = None  # a sweep's job array: how many of its jobs may run at once

    def parameters(self, name: str) -> dict[str, Any]:
        """submitit's parameters of the job (of each job of a sweep's array)."""
        found: dict[str, Any] = {"name": name, "nodes": self.nodes, "tasks_per_node": self.tasks_per_node,
                                 "cpus_per_task": self.cpus_per_task, "timeout_min": self.time_min}  # fmt: skip
        optional = {"gpus_per_node": self.gpus_per_node, "mem_gb": self.mem_gb, "slurm_partition": self.partition}
        found.update({key: value for key, value in optional.items() if value})
        if self.array_parallelism is not None:
            found["slurm_array_parallelism"] = self.array_parallelism
        return found

    def describe(self) -> str:
        text = (f"{self.nodes} node(s) x {self.tasks_per_node} task(s), {self.cpus_per_task} CPU(s) per task"
                + (f", {self.gpus_per_node} GPU(s) per node" if self.gpus_per_node else "")
                + (f", {self.mem_gb} GB per node" if self.mem_gb else ""))  # fmt: skip
        return f"{text}, partition {self.partition or '(default)'}, time limit {self.time_min} min"


def task_config(config: Config, request: SlurmRequest) -> Config:
    """The config the tasks train: train.threads = the CPUs of a task (a worker each) unless the config sets it."""
    return with_threads(config, request.cpus_per_task * (config.train.processes or 1))


def task_env(job_id: str) -> dict[str, str]:
    """The run's environment additions in every task of job `job_id` (plan/parallel.py's resolve reads them)."""
    return {SLURM_PORT_ENV: str(rendezvous_port(job_id))}


def submitit_folder(run_dir: Path) -> Path:
    """Beside the run dir, not in it: `--force` moves the run dir aside while the job runs."""
    return run_dir.parent / ".submitit" / run_dir.name


class SlurmTrainTask:
    """The function every task of the job runs (pickled by submitit); rank 0 returns the run's outcome.
    It carries the Config itself: the run's config.yaml is written by rank 0's training, after the submission."""

    def __init__(self, config: Config, run_dir: Path, force: bool = False) -> None:
        self.config, self.run_dir, self.force = config, run_dir, force

    def __call__(self) -> dict[str, Any]:
        import submitit

        job = submitit.JobEnvironment()
        env = task_env(os.environ.get("SLURM_JOB_ID", job.job_id))
        marks = Rank0Marks(Path(job.paths.folder), os.environ.get("SLURM_RESTART_COUNT", "0"))
        if job.global_rank != 0:
            return {"status": "worker", "reason": "", "exit_code": run_worker(self.config, self.run_dir, env, marks)}
        from prelnx import console
        from prelnx.launch.local import train  # rank 0 only

        console.configure()  # the run's lines, in the job's log (follow() shows them to the client)
        try:
            # on_start: every check has passed and the run dir is locked (an old run set aside): the other ranks start
            # then, no earlier (they would read checkpoints of a run dir rank 0 refuses or moves away)
            result = train(self.config, run_dir=self.run_dir, force=self.force, extra_env=env,
                           on_start=marks.started.touch)  # fmt: skip
        except Exception as error:  # known refusals become the command's message and exit code
            if (known := error_exit(error)) is None:
                child_report.emit(child_report.raised(error))  # a bug: its type and message to the submitting side
                raise
            logging.getLogger(__name__).error(known[0])  # in the job's log; the client says it from the result
            return {"status": "error", "reason": known[0], "exit_code": known[1]}
        finally:
            marks.ended.touch()
        return {"status": result.status, "reason": result.reason, "exit_code": result.exit_code}

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """Timeout or preemption: the same task again, resuming (never --force again)."""
        import submitit

        return submitit.helpers.DelayedSubmission(SlurmTrainTask(self.config, self.run_dir))


class Rank0Marks:
    """Files in the job's submitit folder (shared by the nodes) by which rank 0's task tells the others that it
    has taken the run dir and starts fairseq, and that it has ended; one pair per start of the job (requeues)."""

    def __init__(self, folder: Path, restart: str) -> None:
        self.started, self.ended = folder / f"rank0-started.{restart}", folder / f"rank0-ended.{restart}"


def run_worker(config: Config, run_dir: Path, env: dict[str, str], marks: Rank0Marks, poll_s: float = 0.5) -> int:
    """A rank above 0: once rank 0 starts its fairseq, the run's fairseq command in this task, until it ends or
    rank 0's task has ended. Nothing runs when rank 0 ends without starting (a refused or finished run)."""
    while not marks.started.exists():
        if marks.ended.exists():
            return 0
        time.sleep(poll_s)
    from prelnx.launch.local import reap, start_child

    process = start_child(plan_run(config, run_dir, env).launch, env)  # it watches this task
    while process.poll() is None and not marks.ended.exists():
        time.sleep(poll_s)
    try:
        process.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        process.terminate()  # rank 0 is gone (refused, finished or stopped): nothing to meet any more
    return reap(process)
