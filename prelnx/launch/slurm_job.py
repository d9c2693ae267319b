"""`prelnx train --executor slurm`, the submitting side: the job's resources, its submission, and following it to the
run's exit code (each function says how). What the tasks do is in launch/slurm_task.py.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from prelnx import child_report
from prelnx.config.schema import Config
from prelnx.exits import Exit, Refusal
from prelnx.launch import slurm_task
from prelnx.launch.errors import SlurmUnavailable
from prelnx.launch.local import check_before_training, sigterm_interrupts
from prelnx.launch.prepare import ensure_data
from prelnx.launch.slurm_task import (DEFAULT_TIME_MIN, SlurmRequest, SlurmTrainTask, default_cpus_per_run,
                                     submitit_folder, task_config, task_env)
from prelnx.launch.watch import LogLines
from prelnx.plan.launch import plan_run
from prelnx.records.lock import RunLocked, is_locked

log = logging.getLogger(__name__)
UNANSWERED_S = 300  # how long squeue may fail in a row before the wait gives up (the job is left alone)
GPUS_DEFAULT = "one per worker with train.device: cuda (train.nodes x train.processes), else 0"  # run_request's
RESOURCES = "--gpus-per-run, --cpus-per-run, --mem-gb-per-run, --time-min, --partition, train.nodes, train.processes"


def run_request(config: Config, partition: str | None = None, gpus_per_run: int | None = None,
                cpus_per_run: int | None = None, mem_gb_per_run: int | None = None,
                time_min: int | None = None) -> SlurmRequest:  # fmt: skip
    """The job of one run from its resources in all (the options of sweep's and reproduce's names and meanings): one
    task per worker, train.processes (default 1) per node on train.nodes nodes; the tasks share its CPUs evenly, its
    nodes its GPUs and memory; a total that does not split evenly is refused before anything is submitted. Unasked:
    each task the partition's CPUs per node shared by its tasks (sinfo), a GPU with train.device: cuda."""
    nodes, tasks = config.train.nodes, config.train.processes or 1
    cpus = _share("--cpus-per-run", cpus_per_run, nodes * tasks, f"{nodes} node(s) x {tasks} task(s)", "task")
    mem = _share("--mem-gb-per-run", mem_gb_per_run, nodes, f"{nodes} node(s)", "node")
    gpus = _share("--gpus-per-run", gpus_per_run, nodes, f"{nodes} node(s)", "node")
    if gpus is None:
        gpus = tasks if config.train.device == "cuda" else 0
    elif config.train.device == "cuda" and gpus < tasks:
        raise Refusal(f"--gpus-per-run {gpus_per_run}: train.device: cuda runs a worker per GPU, {nodes * tasks} in "
                      f"all (train.nodes {nodes} x train.processes {tasks}); ask at least {nodes * tasks}")  # fmt: skip
    cpus = cpus or default_cpus_per_run(partition, tasks)
    return SlurmRequest(nodes, tasks, cpus, gpus, mem, time_min or DEFAULT_TIME_MIN, partition)


def _share(option: str, total: int | None, parts: int, shape: str, each: str) -> int | None:
    """`total` split evenly into `parts` (per task, per node); None stays None."""
    if total is not None and total % parts:
        raise Refusal(f"{option} {total}: the run is {shape}, and each {each} gets the same share; give a multiple of "
                      f"{parts}")  # fmt: skip
    return None if total is None else total // parts


def submit(config: Config, run_dir: Path, request: SlurmRequest, force: bool = False) -> Any:
    """Submit the job (submitit's Slurm executor); returns the submitit job."""
    import submitit

    try:
        executor = submitit.AutoExecutor(folder=submitit_folder(run_dir) / "%j", cluster="slurm")
        executor.update_parameters(**request.parameters(config.name or run_dir.name))
        return executor.submit(SlurmTrainTask(task_config(config, request), run_dir, force))
    except (submitit.core.utils.FailedJobError, RuntimeError, ValueError, OSError) as error:
        said = [line.strip() for line in str(error).splitlines() if line.strip()]
        fatal = [line for line in said if "fatal" in line or "error" in line.lower()]
        why = (fatal or said or ["?"])[-1]
        hint = (f"see {RESOURCES}"
                if "submission failed" in why else "is this a Slurm login node (sbatch, srun, squeue on PATH, SLURM_CONF)?")  # fmt: skip
        raise SlurmUnavailable(f"--executor slurm: the job could not be submitted ({why}); {hint}") from None


class Rank0Output(LogLines):
    """Rank 0's log as it grows: `read` shows its new lines (not submitit's own, nor the events its task reports) and
    keeps the last error it reported (prelnx/child_report.py)."""

    raised: child_report.Raised | None = None

    def read(self) -> None:
        for line in self.lines():
            if isinstance(event := child_report.parse(line), child_report.Raised):
                self.raised = event
            elif event is None and line.strip() and not line.startswith("submitit "):
                log.info(line)


def follow(job: Any, request: SlurmRequest, poll_s: float = 1.0, watcher: Any = None) -> tuple[str, int]:
    """Wait for the job, showing rank 0's output; (closing message, exit code). Ctrl-C cancels the job, as does Slurm
    saying it can never start. Its state comes from the one watcher (launch/slurm_watch.py), at its own pace."""
    from prelnx.launch.slurm_watch import WATCHER

    watcher = watcher or WATCHER
    output = Rank0Output(Path(job.task(0).paths.stdout))
    last_state = ""
    try:
        while (found := watcher.look(job.job_id)).active:  # before the log's new lines, which it may explain (running)
            if found.state != last_state and found.state in ("PENDING", "RUNNING", "REQUEUED"):
                waits = found.state == "PENDING" and found.reason not in ("", "None")
                log.info(f"Slurm job {job.job_id}: {found.state.lower()}" + (f" ({found.reason})" if waits else ""))
                last_state = found.state
            output.read()
            if time.monotonic() - watcher.answered > UNANSWERED_S:  # squeue's last answer
                why = (f"squeue has not answered for {UNANSWERED_S // 60} min; Slurm job {job.job_id} may still run "
                       f"(see squeue; logs in {Path(job.paths.folder)})")  # fmt: skip
                return why, Exit.FAILED
            if found.never_starts:
                slurm_task.cancel(job.job_id)
                why = (f"Slurm job {job.job_id} can never start: {found.reason} (it asks {request.describe()}; see "
                       f"{RESOURCES}); cancelled")  # fmt: skip
                return why, Exit.BAD_INPUT
            time.sleep(poll_s)
    except KeyboardInterrupt:
        slurm_task.cancel(job.job_id)
        return f"cancelled Slurm job {job.job_id}; run the same command again to resume", Exit.INTERRUPTED
    time.sleep(poll_s)  # the last lines of the log
    output.read()
    return outcome(job, found.state, output.raised)


def outcome(job: Any, state: str | None, raised: child_report.Raised | None = None) -> tuple[str, int]:
    """Rank 0's result, or why there is none; `raised`: what rank 0's task reported it raised."""
    rank0 = job.task(0)  # the job itself when it has one task
    if rank0.paths.result_pickle.exists():
        try:
            result = rank0.result()
        except Exception as error:  # noqa: BLE001 - rank 0's task raised: one line here, the trace in its log
            said = raised.describe() if raised else (str(error).strip().splitlines() or ["no message"])[-1]
            return f"Slurm job {job.job_id}: rank 0 failed ({said}); see {rank0.paths.stderr}", Exit.FAILED
        return result["reason"] if result["status"] == "error" else "", int(result["exit_code"])  # a refusal's line
    how = f"ended ({state.lower()})" if state not in (None, slurm_task.ENDED) else "left Slurm's queue"
    why = (f"Slurm job {job.job_id} {how} before rank 0 returned; its status.json says how far it got; run the "
           f"same command again to resume (logs: {rank0.paths.stdout})")  # fmt: skip
    return why, Exit.FAILED


def train_on_slurm(config: Config, run_dir: Path, request: SlurmRequest, *, force: bool = False) -> tuple[str, int]:
    """Check, submit, wait: (closing message, exit code) of the run. What stops a local `prelnx train` before it
    trains (bad batch, data not ready, a run dir in use) is raised here, before anything is submitted."""
    plan_run(config, run_dir, task_env("0"))  # the batch of nodes x processes workers: BatchError before submitting
    ensure_data(config)  # generated here once (synthetic), not by the tasks racing each other
    if is_locked(run_dir):
        from prelnx.launch.slurm_watch import WATCHER

        folder = submitit_folder(run_dir)  # it names every job submitted for this run dir
        ids = (sorted((p.name for p in folder.iterdir() if p.name.isdigit()), key=int, reverse=True)
               if folder.is_dir() else [])  # fmt: skip
        for job_id in ids:
            WATCHER.register_job(job_id)  # then one squeue call for all of them
        job_id = next((job_id for job_id in ids if WATCHER.look(job_id).active), None)  # the newest not ended
        if job_id is not None:  # e.g. the client that submitted it was stopped: the job trains on
            raise RunLocked(f"{run_dir}: Slurm job {job_id} still trains this run; follow it with `squeue -j {job_id}` "
                            f"(its log: {folder / job_id}), or stop it with `scancel {job_id}` and "
                            f"run this command again to resume")  # fmt: skip
        raise RunLocked(f"{run_dir}: this run dir is in use by another prelnx process (on this or another machine); "
                        f"wait for it to end, or stop it first")  # fmt: skip
    job = submit(config, run_dir, request, force)
    log.info(f"submitted Slurm job {job.job_id}: {request.describe()}; logs in {submitit_folder(run_dir) / job.job_id}")
    with sigterm_interrupts():  # SIGTERM to this process cancels the job, as Ctrl-C does
        return follow(job, request)


def dry_run_lines(config: Config, run_dir: Path, request: SlurmRequest, force: bool = False) -> list[str]:
    """What `prelnx train --executor slurm --dry-run` prints: the config the tasks train, the job, their command."""
    from prelnx.config.load import dump_config

    plan = plan_run(task_config(config, request), run_dir, task_env("0"))
    said = [f"# {line}" for line in check_before_training(plan, force)]  # refusals raise, as the real run's
    return said + [dump_config(plan.config, task_keys_only=True).rstrip("\n"),
            (f"# would submit one Slurm job (submitit): {request.describe()}; "
             f"logs in {submitit_folder(run_dir)}/<job id>"),
            f"# {plan.launch.batch}",
            ("# every task runs this (rank 0 under prelnx, which records the run); --distributed-port is 20000 + the "
             "job id % 20000:"),
            plan.launch.command_line()]  # fmt: skip
