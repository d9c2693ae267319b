"""Where a sweep's runs execute: a local pool, or submitit (Slurm, or submitit's local executor).

Each run is `prelnx.launch.local.train`, which trains in its own fairseq child process, so one run that
crashes or diverges never stops the others; re-running a sweep skips finished/diverged runs and resumes
partial ones from their checkpoints.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

from prelnx.atomic import io_reason
from prelnx.config.schema import Config
from prelnx.launch import slurm_queue
from prelnx.launch.children import core_slots, restore, stop_children, stop_on_sigterm
from prelnx.launch.errors import RunConflict
from prelnx.launch.events import Event, Listener, Note, Progress, RowDone, render
from prelnx.launch.local import train
from prelnx.launch.slurm_task import DEFAULT_TIME_MIN, SlurmRequest
from prelnx.machine import may_have_gpu, usable_cores
from prelnx.plan.launch import with_threads
from prelnx.records.lock import RunLocked, is_locked
from prelnx.records.outcome import RunStatus
from prelnx.records.status import read_status, write_status
from prelnx.sweep.progress import SweepProgress
from prelnx.sweep.spec import SweepPoint

RESULT_WAIT_S = 15.0  # how long a job's result may lag behind Slurm's end of the job (submitit's own wait)


def _visible_gpus() -> int:
    if not may_have_gpu():
        return 0
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - no usable CUDA is the same as no GPU here
        return 0


def run_one(config: Config, run_dir: Path, on_event: Listener, env: dict[str, str] | None = None,
            force: bool = False, cpus: frozenset[int] | None = None) -> RunStatus:  # fmt: skip
    """Train one point; any error becomes a `failed` status instead of an exception.

    A point whose run dir another process holds (a second sweep on the same folder) is left alone and
    reported as `running elsewhere`; nothing of it is written.
    """
    def echo(line: str) -> None:
        on_event(Note(line))

    try:
        return train(config, run_dir=run_dir, on_event=on_event, extra_env=env, force=force, cpus=cpus).status
    except RunLocked:
        echo(f"{run_dir}: {RunStatus.ELSEWHERE} (another prelnx process trains it); skipped")
        return RunStatus.ELSEWHERE
    except RunConflict as error:  # the folder holds another run: report it, and leave that run's files alone
        echo(f"{run_dir}: not trained ({error})")
        return RunStatus.FAILED
    except Exception as error:  # noqa: BLE001 - a sweep records the failure and goes on
        reason = io_reason(error, run_dir) if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            write_status(run_dir, RunStatus.FAILED, reason=reason)
        except OSError:
            pass  # a full disk: the sweep's own output says it
        echo(f"{run_dir}: failed ({reason})")
        return RunStatus.FAILED


def run_local(
    points: list[SweepPoint],
    sweep_dir: Path,
    jobs: int,
    on_done: Callable[[SweepPoint, RunStatus], None],
    echo: Callable[[str], None],
    force: bool = False,
    pin_cores: bool = False,
) -> dict[str, RunStatus]:
    """`jobs` runs at a time, each with cores/jobs CPU threads and, where GPUs exist, its own GPU(s).
    force: train every point again (a finished run is set aside, as `prelnx train --force` does).
    pin_cores: each job slot's processes kept on their own cores (docs/benchmarks.md: measured, off by default)."""
    threads = max(1, usable_cores() // jobs)
    slots_cores = core_slots(jobs) if pin_cores else None
    gpus = _visible_gpus()
    per_job = max(1, gpus // jobs) if gpus else 0
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)
    lock = threading.Lock()
    statuses: dict[str, RunStatus] = {}
    progress = SweepProgress(points)

    def work(point: SweepPoint, picked_up: bool = False) -> RunStatus:
        slot = slots.get()
        try:
            env = {}
            if per_job:
                first = (slot * per_job) % gpus
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(first + i) for i in range(per_job))
            status = run_one(with_threads(point.config, threads), sweep_dir / point.name,
                             on_event=_sweep_listener(point.name, progress, echo), env=env,
                             force=force and not picked_up, cpus=slots_cores[slot] if slots_cores else None)  # fmt: skip
        finally:
            slots.put(slot)
        with lock:
            statuses[point.name] = status
            if status is not RunStatus.ELSEWHERE:
                echo(f"[{point.name}] {status} || {progress.run_done(point.name, status)}")
            on_done(point, status)
        return status

    previous_handler = stop_on_sigterm()
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = [pool.submit(work, point) for point in points]
    try:
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
    except KeyboardInterrupt:
        # Ctrl-C reached the fairseq children too; SIGTERM did not: stop them. Runs not started are cancelled.
        stop_children()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        restore(previous_handler)
    pool.shutdown(wait=True)
    waiting = [point for point in points if statuses.get(point.name) is RunStatus.ELSEWHERE]
    if waiting:
        echo(f"waiting for {len(waiting)} run(s) {RunStatus.ELSEWHERE} to end, to pick up what they leave "
             f"(Ctrl-C stops waiting; their own process goes on)")  # fmt: skip
    while waiting:
        time.sleep(2.0)
        for point in [p for p in waiting if not is_locked(sweep_dir / p.name)]:
            waiting.remove(point)
            work(point, picked_up=True)  # finished elsewhere: "already finished"; stopped elsewhere: resumed here
    return statuses


def _sweep_listener(name: str, progress: SweepProgress, echo: Callable[[str], None]) -> Listener:
    """A run's events in a sweep: starts, notes, rows (with the sweep's progress) and ends; not every progress
    record."""

    def listen(event: Event) -> None:
        if isinstance(event, Progress):
            return
        line = render(event)
        if isinstance(event, RowDone):
            line += f" || {progress.row_done(name, event.step)}"
        echo(f"[{name}] {line}")

    return listen


def _ended_without_result(job_id: str, state: str | None, run_dir: Path) -> RunStatus:
    """The status of a run whose Slurm job ended without returning: the run's own terminal status if it wrote one,
    else `failed` with why (the update it had reached is kept)."""
    recorded = read_status(run_dir) or {}
    if RunStatus.of(recorded).done:
        return RunStatus.of(recorded)
    how = f"ended ({state.lower()})" if state not in (None, slurm_queue.ENDED) else "left Slurm's queue"
    write_status(run_dir, RunStatus.FAILED, update=int(recorded.get("update", 0)),
                 reason=f"Slurm job {job_id} {how} before the run returned (cancelled, killed, out of memory?); "
                        f"run the sweep again to resume")  # fmt: skip
    return RunStatus.FAILED


class SubmititRun:
    """A submitit job: train one point; on timeout or preemption, requeue itself (fairseq then resumes)."""

    def __init__(self, config: Config, run_dir: Path) -> None:
        self.config, self.run_dir = config, run_dir

    def __call__(self) -> RunStatus:
        return run_one(self.config, self.run_dir, on_event=lambda event: print(render(event), flush=True))

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(SubmititRun(self.config, self.run_dir))


SWEEP_GPUS_DEFAULT = "one with train.device: cuda (a sweep's run is one worker), else 0"  # sweep_request's


def sweep_request(options: dict[str, Any], cluster: str | None, runs: int, cuda: bool = False) -> SlurmRequest:
    """What each run's job asks: the sweep's options (spec.SLURM_KEYS; prelnx sweep's flags over the spec's slurm:),
    one task of `cpus_per_run` CPUs (default: the partition's CPUs per node up to 8 on Slurm, this machine's cores
    shared by the runs for submitit's local executor) and `gpus_per_run` GPUs (default: train's rule, a GPU per
    worker with train.device: cuda - a sweep's run is one worker - else none)."""
    if options.get("cpus_per_run"):
        cpus = int(options["cpus_per_run"])
    elif cluster is None:
        cpus = slurm_queue.default_cpus_per_run(options.get("partition"))
    else:
        cpus = max(1, usable_cores() // runs)
    mem = options.get("mem_gb_per_run")
    gpus = options.get("gpus_per_run")
    return SlurmRequest(1, 1, cpus, gpus_per_node=int(gpus) if gpus is not None else int(cuda),
                        mem_gb=int(mem) if mem else None, time_min=int(options.get("time_min") or DEFAULT_TIME_MIN),
                        partition=options.get("partition"),
                        array_parallelism=int(options.get("array_parallelism", 64)))  # fmt: skip


def run_submitit(
    points: list[SweepPoint],
    sweep_dir: Path,
    cluster: str | None,
    options: dict[str, Any],
    on_done: Callable[[SweepPoint, RunStatus], None],
    echo: Callable[[str], None],
    watcher: Any = None,
) -> dict[str, RunStatus]:
    """Submit the points as one job array; `cluster` None means Slurm, "local" submitit's local executor.
    Slurm's jobs are followed by the one watcher (launch/slurm_watch.py: one squeue call for all of them, at
    submitit's pace); submitit's local jobs by their own."""
    import submitit

    request = sweep_request(options, cluster, len(points), any(p.config.train.device == "cuda" for p in points))
    executor = submitit.AutoExecutor(folder=sweep_dir / ".submitit" / "%j", cluster=cluster)
    executor.update_parameters(**request.parameters(options.get("job_name", sweep_dir.name)))
    jobs = []
    with executor.batch():
        for point in points:
            config = with_threads(point.config, request.cpus_per_task)
            jobs.append((point, executor.submit(SubmititRun(config, sweep_dir / point.name))))
    echo(f"submitted {len(jobs)} jobs ({'Slurm' if cluster is None else 'submitit ' + cluster}); logs in {sweep_dir / '.submitit'}")
    if cluster is None:
        from prelnx.launch.slurm_watch import WATCHER

        watcher = watcher or WATCHER
        for _, job in jobs:
            watcher.register_job(job.job_id)
    statuses: dict[str, RunStatus] = {}
    waiting = list(jobs)
    ended_at: dict[str, float] = {}  # when Slurm was first seen to have ended a job whose result is not there
    while waiting:
        for point, job in list(waiting):
            run_dir = sweep_dir / point.name
            found = watcher.look(job.job_id) if watcher is not None else None
            if job.paths.result_pickle.exists() or (found is None and job.done()):
                try:
                    status = RunStatus(job.result())
                except Exception as error:  # noqa: BLE001 - a job that died records its failure
                    write_status(run_dir, RunStatus.FAILED, reason=f"submitit job {job.job_id}: {error}")
                    status = RunStatus.FAILED
            elif found is not None and found.never_starts:
                slurm_queue.cancel(job.job_id)
                status, why = RunStatus.FAILED, (f"Slurm job {job.job_id} can never start: {found.reason} (it asks "
                                                 f"{request.describe()}; see --cpus-per-run, --mem-gb-per-run, "
                                                 f"--partition)")  # fmt: skip
                write_status(run_dir, status, reason=why)
                echo(f"[{point.name}] {why}")
            elif found is not None and not found.active:
                # its result may reach this file system a little after Slurm ends the job (submitit waits as long)
                if time.monotonic() - ended_at.setdefault(point.name, time.monotonic()) < RESULT_WAIT_S:
                    continue
                status = _ended_without_result(job.job_id, found.state, run_dir)
            else:
                continue
            waiting.remove((point, job))
            statuses[point.name] = status
            echo(f"[{point.name}] {status}")
            on_done(point, status)
        if waiting:
            time.sleep(1.0)  # a look at files; the watcher asks Slurm at its own pace
    return statuses
