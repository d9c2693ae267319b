"""One run across the tasks of a Slurm job: `prelnx train --executor slurm`.

submitit submits ONE job of train.nodes nodes x train.processes tasks per node (one data-parallel worker per task;
1 per node by default). In every task (`SlurmTrainTask`):
- rank 0 runs prelnx's own `runner.train`: the lock, config.yaml, command.txt, status.json, metrics and TensorBoard
  (only rank 0 writes the run dir); its fairseq child is rank 0 of the group;
- every other rank runs plain fairseq (`python -m fairseq_cli.train` with the arguments of command.txt) as its own
  child, which watches that task's process (the plugin's parent watch: a pid means something only on its node),
  and stops it when rank 0's task has ended (a marker in the job's submitit folder, which the nodes share).
The fairseq processes meet through fairseq's own Slurm rendezvous (`--distributed-port` = 20000 + job id % 20000,
the same in every task, and SLURM_*); the CPU fix is in prelnx_fairseq_plugin/distributed.py. On timeout or
preemption (submitit's signal) rank 0 requeues the job, which resumes from checkpoint_last.pt as a re-run does.

The submitting process waits: it prints rank 0's output (the lines `prelnx train` prints), reports and cancels a
job Slurm says can never start (squeue's reason), cancels the job on Ctrl-C, and returns the run's exit code.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from prelnx.config.schema import Config
from prelnx.run.parallel import SLURM_PORT_ENV, rendezvous_port
from prelnx.run.status import EXIT_BUSY, EXIT_CODES
from prelnx.sweep import slurm

DEFAULT_TIME_MIN = 24 * 60
GRACE_S = 30  # how long the other ranks' fairseq may outlive rank 0's task (it ends its own training meanwhile)


@dataclass(frozen=True)
class SlurmRequest:
    """What the job asks of Slurm."""

    nodes: int
    tasks_per_node: int
    cpus_per_task: int
    gpus_per_node: int = 0
    mem_gb: int | None = None  # per node
    time_min: int = DEFAULT_TIME_MIN
    partition: str | None = None

    def parameters(self, name: str) -> dict[str, Any]:
        """submitit's parameters of the job."""
        found: dict[str, Any] = {"name": name, "nodes": self.nodes, "tasks_per_node": self.tasks_per_node,
                                 "cpus_per_task": self.cpus_per_task, "timeout_min": self.time_min}  # fmt: skip
        if self.gpus_per_node:
            found["gpus_per_node"] = self.gpus_per_node
        if self.mem_gb:
            found["mem_gb"] = self.mem_gb
        if self.partition:
            found["slurm_partition"] = self.partition
        return found

    def describe(self) -> str:
        text = (f"{self.nodes} node(s) x {self.tasks_per_node} task(s), {self.cpus_per_task} CPU(s) per task"
                + (f", {self.gpus_per_node} GPU(s) per node" if self.gpus_per_node else "")
                + (f", {self.mem_gb} GB per node" if self.mem_gb else ""))  # fmt: skip
        return f"{text}, partition {self.partition or '(default)'}, time limit {self.time_min} min"


def plan_request(config: Config, partition: str | None = None, cpus_per_task: int | None = None,
                 mem_gb: int | None = None, time_min: int | None = None) -> SlurmRequest:  # fmt: skip
    """One task per worker: train.processes (default 1) per node on train.nodes nodes; a GPU each with
    train.device: cuda. CPUs per task default to the partition's CPUs per node shared by its tasks (sinfo)."""
    tasks = config.train.processes or 1
    cpus = cpus_per_task or slurm.default_cpus_per_run(partition, tasks)
    gpus = tasks if config.train.device == "cuda" else 0
    return SlurmRequest(config.train.nodes, tasks, cpus, gpus, mem_gb, time_min or DEFAULT_TIME_MIN, partition)


def task_config(config: Config, request: SlurmRequest) -> Config:
    """The config the tasks train: train.threads = the CPUs of a task unless the config sets it."""
    if config.train.threads is not None:
        return config
    return dataclasses.replace(config, train=dataclasses.replace(config.train, threads=request.cpus_per_task))


def task_env(job_id: str) -> dict[str, str]:
    """The run's environment additions in every task of job `job_id` (parallel.resolve reads them)."""
    return {SLURM_PORT_ENV: str(rendezvous_port(job_id))}


def submitit_folder(run_dir: Path) -> Path:
    """Beside the run dir, not in it: `--force` moves the run dir aside while the job runs."""
    return run_dir.parent / ".submitit" / run_dir.name


def error_exit(error: BaseException) -> tuple[str, int] | None:
    """`prelnx train`'s message and exit code for an error that stops a run before it trains; None for others."""
    from prelnx.atomic import io_reason
    from prelnx.config.load import ConfigError
    from prelnx.run.checkpoints import CheckpointRefused
    from prelnx.run.datacheck import DataDamaged
    from prelnx.run.lock import RunLocked
    from prelnx.run.plan import DataNotReady
    from prelnx.run.runner import RunConflict, RunIOError

    if isinstance(error, RunLocked):
        return str(error), EXIT_BUSY
    if isinstance(error, RunIOError):
        return str(error.strerror), 1
    if isinstance(error, OSError):  # e.g. --run-dir under a file
        return io_reason(error), 1
    if isinstance(error, (ConfigError, DataNotReady, DataDamaged, CheckpointRefused, RunConflict, ValueError)):
        return str(error), 2
    return None


class PortableConfig:
    """A config pickled as plain values, rebuilt by the code that unpickles it: a job requeued after prelnx was
    upgraded gets today's defaults for keys it did not know (as a run dir's config.yaml does), not a broken object."""

    def __init__(self, config: Config) -> None:
        from prelnx.config.load import config_to_dict

        self.values = config_to_dict(config)

    @property
    def config(self) -> Config:
        from prelnx.config.load import config_from_dict

        return config_from_dict(self.values, "the config of the Slurm job")


class SlurmTrainTask(PortableConfig):
    """The function every task of the job runs (pickled by submitit); rank 0 returns the run's outcome."""

    def __init__(self, config: Config, run_dir: Path, force: bool = False) -> None:
        super().__init__(config)
        self.run_dir, self.force = run_dir, force

    def __call__(self) -> dict[str, Any]:
        import submitit

        job = submitit.JobEnvironment()
        env = task_env(os.environ.get("SLURM_JOB_ID", job.job_id))
        marker = Path(job.paths.folder) / f"rank0-ended.{os.environ.get('SLURM_RESTART_COUNT', '0')}"
        if job.global_rank == 0:
            try:
                return train_rank0(self.config, self.run_dir, env, self.force)
            finally:
                marker.touch()
        return {"status": "worker", "reason": "", "exit_code": run_worker(self.config, self.run_dir, env, marker)}

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """Timeout or preemption: the same task again, resuming (never --force again)."""
        import submitit

        return submitit.helpers.DelayedSubmission(SlurmTrainTask(self.config, self.run_dir))


def _echo(line: str) -> None:
    print(line, flush=True)


def train_rank0(config: Config, run_dir: Path, env: dict[str, str], force: bool) -> dict[str, Any]:
    from prelnx.run.runner import train

    try:
        result = train(config, run_dir=run_dir, force=force, echo=_echo, extra_env=env)
    except Exception as error:  # known refusals become the command's message and exit code
        known = error_exit(error)
        if known is None:
            raise
        _echo(f"error: {known[0]}")
        return {"status": "error", "reason": known[0], "exit_code": known[1]}
    return {"status": result.status, "reason": result.reason, "exit_code": result.exit_code}


def run_worker(config: Config, run_dir: Path, env: dict[str, str], rank0_ended: Path,
               poll_s: float = 1.0) -> int:  # fmt: skip
    """A rank above 0: the run's fairseq command in this task, until it ends or rank 0's task has ended."""
    from prelnx.run.plan import data_dir, plan_launch, resolve_batch

    config = resolve_batch(config, env)
    launch = plan_launch(config, data_dir(config), run_dir / "checkpoints", env)
    child_env = {**os.environ, **launch.env, **env, "PRELNX_PARENT_PID": str(os.getpid())}  # watches this task
    process = subprocess.Popen(launch.child_argv(sys.executable), stdin=subprocess.DEVNULL, env=child_env)
    ended_at = None
    while process.poll() is None:
        if ended_at is None and rank0_ended.exists():
            ended_at = time.monotonic()
        if ended_at is not None and time.monotonic() - ended_at > GRACE_S:
            process.terminate()  # rank 0 is gone (refused, finished or stopped): nothing to meet any more
            break
        time.sleep(poll_s)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def submit(config: Config, run_dir: Path, request: SlurmRequest, force: bool = False) -> Any:
    """Submit the job (submitit's Slurm executor); returns the submitit job."""
    import submitit

    executor = submitit.AutoExecutor(folder=submitit_folder(run_dir) / "%j", cluster="slurm")
    executor.update_parameters(**request.parameters(config.name or run_dir.name))
    return executor.submit(SlurmTrainTask(task_config(config, request), run_dir, force))


class LogTail:
    """New lines of a file that grows (and may start again when a requeued job truncates it)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, ""

    def lines(self) -> list[str]:
        try:
            size = self.path.stat().st_size
            if size < self.offset:
                self.offset = 0
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return []
        self.offset += len(data)
        text = self.partial + data.decode(errors="replace")
        *complete, self.partial = text.split("\n")
        return complete


def _progress(line: str) -> bool:
    return bool(line.strip()) and not line.startswith("submitit ")


def follow(job: Any, request: SlurmRequest, echo: Callable[[str], None], poll_s: float = 2.0) -> tuple[str, int]:
    """Wait for the job, echoing rank 0's output; (closing message, exit code). Ctrl-C cancels the job."""
    tail = LogTail(Path(job.task(0).paths.stdout))
    last_state = ""
    try:
        while True:
            for line in filter(_progress, tail.lines()):
                echo(line)
            found = slurm.job_state(job.job_id)
            if found is None or found[0] not in slurm.ACTIVE:
                break
            state, reason = found
            if state == "PENDING" and slurm.never_starts(reason):
                slurm.cancel(job.job_id)
                why = (f"Slurm job {job.job_id} can never start: {reason} (it asks {request.describe()}; see "
                       f"--cpus-per-task, --mem-gb, --time-min, --partition, train.nodes, train.processes); "
                       f"cancelled")  # fmt: skip
                return why, 2
            if state != last_state and state in ("PENDING", "RUNNING", "REQUEUED"):
                waits = state == "PENDING" and reason not in ("", "None")
                echo(f"Slurm job {job.job_id}: {state.lower()}" + (f" ({reason})" if waits else ""))
                last_state = state
            time.sleep(poll_s)
    except KeyboardInterrupt:
        slurm.cancel(job.job_id)
        return f"cancelled Slurm job {job.job_id}; run the same command again to resume", EXIT_CODES["interrupted"]
    time.sleep(1.0)  # the last lines of the log
    for line in filter(_progress, tail.lines()):
        echo(line)
    return outcome(job, found[0] if found else "ended")


def outcome(job: Any, state: str) -> tuple[str, int]:
    """Rank 0's result, or why there is none."""
    rank0 = job.task(0)  # the job itself when it has one task
    if rank0.paths.result_pickle.exists():
        try:
            result = rank0.result()
        except Exception as error:  # noqa: BLE001 - rank 0's task raised: one line here, the trace in its log
            return f"Slurm job {job.job_id}: rank 0 failed ({last_error(str(error))}); see {rank0.paths.stderr}", 1
        return "", int(result["exit_code"])
    why = (f"Slurm job {job.job_id} ended ({state.lower()}) before rank 0 returned; its status.json says how far it "
           f"got; run the same command again to resume (logs: {rank0.paths.stdout})")  # fmt: skip
    return why, 1


def last_error(trace: str) -> str:
    """The exception line of a Python trace (the last line that names an error), else its last line."""
    lines = [line.strip() for line in trace.splitlines() if line.strip() and not line.startswith("-")]
    found = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Interrupt)\b", line)]
    return (found or lines or ["no message"])[-1]


def train_on_slurm(config: Config, run_dir: Path, request: SlurmRequest, *, force: bool = False,
                   echo: Callable[[str], None] = print) -> tuple[str, int]:  # fmt: skip
    """Check, submit, wait: (closing message, exit code) of the run. Errors that stop a local `prelnx train`
    before it trains (bad batch, data not ready, a run dir in use) are raised here, before anything is submitted."""
    from prelnx.run.lock import RunLocked, is_locked
    from prelnx.run.plan import ensure_data, resolve_batch
    from prelnx.run.runner import stop_on_sigterm

    resolve_batch(config, task_env("0"))  # the batch of nodes x processes workers: BatchError before submitting
    ensure_data(config)  # generated here once (synthetic), not by the tasks racing each other
    if is_locked(run_dir):
        raise RunLocked(f"{run_dir}: this run dir is in use by another prelnx process (on this or another machine); "
                        f"wait for it to end, or stop it first")  # fmt: skip
    job = submit(config, run_dir, request, force)
    echo(f"submitted Slurm job {job.job_id}: {request.describe()}; logs in {submitit_folder(run_dir) / job.job_id}")
    previous = stop_on_sigterm()  # SIGTERM to this process cancels the job, as Ctrl-C does
    try:
        return follow(job, request, echo)
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)


def dry_run_lines(config: Config, run_dir: Path, request: SlurmRequest) -> list[str]:
    """What `prelnx train --executor slurm --dry-run` prints: the config the tasks train, the job, their command."""
    from prelnx.config.load import dump_config
    from prelnx.run.plan import data_dir, plan_launch, resolve_batch

    env = task_env("0")
    config = resolve_batch(task_config(config, request), env)
    launch = plan_launch(config, data_dir(config), run_dir / "checkpoints", env)
    return [dump_config(config).rstrip("\n"),
            (f"# would submit one Slurm job (submitit): {request.describe()}; "
             f"logs in {submitit_folder(run_dir)}/<job id>"),
            f"# {launch.batch}",
            ("# every task runs this (rank 0 under prelnx, which records the run); --distributed-port is 20000 + the "
             "job id % 20000:"),
            launch.command_line()]  # fmt: skip
