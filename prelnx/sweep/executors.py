"""Where a sweep's runs execute: a local pool of threads, or submitit (Slurm, or submitit's local executor). Each run
is `launch.local.train` in its own fairseq child, so one that crashes or diverges never stops the others; a re-run
skips finished and diverged runs and resumes partial ones from their checkpoints."""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from prelnx.atomic import io_reason
from prelnx.console import counted
from prelnx.config.schema import Config
from prelnx.launch.errors import RunConflict
from prelnx.launch.events import Event, Listener, Note, Progress, RowDone, render
from prelnx.launch.local import core_slots, log_event, sigterm_interrupts, stop_children, train
from prelnx.launch.slurm_task import DEFAULT_TIME_MIN, ENDED, SlurmRequest, cancel, default_cpus_per_run
from prelnx.machine import may_have_gpu, usable_cores
from prelnx.plan.launch import with_threads
from prelnx.plan.parallel import visible_gpus
from prelnx.records.lock import RunLocked, is_locked
from prelnx.records.outcome import RunStatus
from prelnx.records.status import read_status, write_status
from prelnx.sweep.progress import Snapshot, SweepProgress
from prelnx.sweep.spec import SweepPoint

log = logging.getLogger(__name__)
RESULT_WAIT_S = 15.0  # how long a job's result may lag behind Slurm's end of the job (submitit's own wait)


def run_one(config: Config, run_dir: Path, on_event: Listener, env: dict[str, str] | None = None,
            force: bool = False, cpus: frozenset[int] | None = None) -> RunStatus:  # fmt: skip
    """Train one point; any error becomes a `failed` status instead of an exception. A point whose run dir another
    process holds (a second sweep on the same folder) is left alone, reported `running elsewhere`."""
    try:
        return train(config, run_dir=run_dir, on_event=on_event, extra_env=env, force=force, cpus=cpus).status
    except RunLocked:
        on_event(Note(f"{run_dir}: {RunStatus.ELSEWHERE} (another prelnx process trains it); skipped"))
        return RunStatus.ELSEWHERE
    except RunConflict as error:  # the folder holds another run: report it, and leave that run's files alone
        on_event(Note(f"{run_dir}: not trained ({error})", warning=True))
        return RunStatus.REFUSED
    except Exception as error:  # noqa: BLE001 - a sweep records the failure and goes on
        reason = io_reason(error, run_dir) if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        with contextlib.suppress(OSError):  # a full disk: the sweep's own output says it
            write_status(run_dir, RunStatus.FAILED, reason=reason)
        on_event(Note(f"{run_dir}: failed ({reason})"))
        return RunStatus.FAILED


def run_local(
    points: list[SweepPoint],
    sweep_dir: Path,
    jobs: int,
    on_done: Callable[[SweepPoint, RunStatus], None],
    force: bool = False,
    pin_cores: bool = False,
    also: Callable[[Snapshot], str] | None = None,
) -> None:
    """`jobs` runs at a time, each with cores/jobs CPU threads and, where GPUs exist, its own GPU(s).
    force: train every point again (a finished run is set aside, as `prelnx train --force` does).
    pin_cores: each job slot's processes kept on their own cores (docs/benchmarks.md: measured, off by default).
    also: what the sweep's progress lines end with (sweep/progress.py)."""
    threads = max(1, usable_cores() // jobs)
    slots_cores = core_slots(jobs) if pin_cores else None
    gpus = visible_gpus() if may_have_gpu() else 0  # torch imported only where a GPU may be
    per_job = max(1, gpus // jobs) if gpus else 0  # each slot's GPUs
    envs = [{"CUDA_VISIBLE_DEVICES": ",".join(str((slot * per_job) % gpus + i) for i in range(per_job))} if per_job
            else {} for slot in range(jobs)]  # fmt: skip
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)  # a job's GPUs and cores
    lock = threading.Lock()
    statuses: dict[str, RunStatus] = {}  # this call's, for the runs trained elsewhere
    progress = SweepProgress(points, also)

    def listen(name: str, event: Event) -> None:
        """A run's events in the sweep: all but its progress records; rows with the sweep's progress; a warning on
        stderr, as `prelnx train` says it."""
        if isinstance(event, Progress):
            return
        line = render(event)
        if isinstance(event, RowDone):
            line += f" || {progress.row_done(name, progress.budget[name].step(event.row))}"
        log.log(logging.WARNING if isinstance(event, Note) and event.warning else logging.INFO, f"[{name}] {line}")

    def work(point: SweepPoint, picked_up: bool = False) -> RunStatus:
        slot = slots.get()
        try:
            status = run_one(with_threads(point.config, threads), sweep_dir / point.name,
                             on_event=functools.partial(listen, point.name), env=envs[slot],
                             force=force and not picked_up, cpus=slots_cores[slot] if slots_cores else None)  # fmt: skip
        finally:
            slots.put(slot)
        with lock:
            statuses[point.name] = status
            if status is not RunStatus.ELSEWHERE:
                log.info(f"[{point.name}] {status} || {progress.run_done(point.name, status)}")
            on_done(point, status)
        return status

    with sigterm_interrupts():
        pool = ThreadPoolExecutor(max_workers=jobs)
        pending = {pool.submit(work, point) for point in points}
        try:
            while pending:  # in steps: the main thread takes Ctrl-C and SIGTERM between them
                _, pending = wait(pending, timeout=1.0)
        except KeyboardInterrupt:
            # Ctrl-C reached the fairseq children too; SIGTERM did not: stop them. Runs not started are cancelled.
            stop_children()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    pool.shutdown(wait=True)
    waiting = [point for point in points if statuses.get(point.name) is RunStatus.ELSEWHERE]
    if waiting:
        log.info(f"waiting for {len(waiting)} run(s) {RunStatus.ELSEWHERE} to end, to pick up what they leave "
             f"(Ctrl-C stops waiting; their own process goes on)")  # fmt: skip
    while waiting:
        time.sleep(2.0)
        for point in [p for p in waiting if not is_locked(sweep_dir / p.name)]:
            waiting.remove(point)
            work(point, picked_up=True)  # finished elsewhere: "already finished"; stopped elsewhere: resumed here


def _ended_without_result(job_id: str, state: str | None, run_dir: Path) -> RunStatus:
    """The status of a run whose Slurm job ended without returning: the run's own terminal status if it wrote one,
    else `failed` with why (the update it had reached is kept)."""
    recorded = read_status(run_dir)
    if RunStatus.of(recorded).done:
        return RunStatus.of(recorded)
    how = f"ended ({state.lower()})" if state not in (None, ENDED) else "left Slurm's queue"
    write_status(run_dir, RunStatus.FAILED, update=int(recorded.get("update", 0)),
                 reason=f"Slurm job {job_id} {how} before the run returned (cancelled, killed, out of memory?); "
                        f"run the sweep again to resume")  # fmt: skip
    return RunStatus.FAILED


class SubmititRun:
    """A submitit job: train one point; on timeout or preemption, requeue itself (fairseq then resumes)."""

    def __init__(self, config: Config, run_dir: Path) -> None:
        self.config, self.run_dir = config, run_dir

    def __call__(self) -> RunStatus:
        from prelnx import console

        console.configure()  # the run's lines, in the job's log
        return run_one(self.config, self.run_dir, on_event=log_event)

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(SubmititRun(self.config, self.run_dir))


SWEEP_GPUS_DEFAULT = "one with train.device: cuda (a sweep's run is one worker), else 0"  # sweep_request's


def sweep_request(options: dict[str, Any], cuda: bool = False) -> SlurmRequest:
    """Each run's job from the sweep's options (spec.SLURM_KEYS, typed by the spec's check and prelnx sweep's flags,
    which win over the spec's slurm:): one task of `cpus_per_run` CPUs (default: the partition's CPUs per node up to 8
    on Slurm; 1 for submitit's local executor, set by run_sweep) and `gpus_per_run` GPUs (default: one with
    train.device: cuda)."""
    cpus = options.get("cpus_per_run") or default_cpus_per_run(options.get("partition"))
    gpus = options.get("gpus_per_run")
    return SlurmRequest(1, 1, cpus, gpus_per_node=int(cuda) if gpus is None else gpus,
                        mem_gb=options.get("mem_gb_per_run"), time_min=options.get("time_min") or DEFAULT_TIME_MIN,
                        partition=options.get("partition"), array_parallelism=options.get("array_parallelism", 64))


def run_submitit(
    points: list[SweepPoint],
    sweep_dir: Path,
    cluster: str | None,
    options: dict[str, Any],
    on_done: Callable[[SweepPoint, RunStatus], None],
) -> None:
    """Submit the points as one job array (`cluster` None: Slurm, "local": submitit's local executor). Slurm's jobs are
    followed by the one watcher (launch/slurm_watch.py), submitit's local jobs by their own."""
    import submitit

    request = sweep_request(options, any(p.config.train.device == "cuda" for p in points))
    executor = submitit.AutoExecutor(folder=sweep_dir / ".submitit" / "%j", cluster=cluster)
    executor.update_parameters(**request.parameters(options.get("job_name", sweep_dir.name)))
    jobs = []
    with executor.batch():
        for point in points:
            config = with_threads(point.config, request.cpus_per_task)
            jobs.append((point, executor.submit(SubmititRun(config, sweep_dir / point.name))))
    log.info(f"submitted {counted(len(jobs), 'job')} ({'Slurm' if cluster is None else 'submitit ' + cluster}); logs in {sweep_dir / '.submitit'}")
    watcher = None
    if cluster is None:
        from prelnx.launch.slurm_watch import WATCHER

        watcher = WATCHER
        for _, job in jobs:
            watcher.register_job(job.job_id)
    waiting = list(jobs)
    ended_at: dict[str, float] = {}  # when Slurm was first seen to have ended a job whose result is not there
    try:
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
                    cancel(job.job_id)
                    status, why = RunStatus.FAILED, (f"Slurm job {job.job_id} can never start: {found.reason} (it asks "
                                                     f"{request.describe()}; see --cpus-per-run, --mem-gb-per-run, "
                                                     f"--partition)")  # fmt: skip
                    write_status(run_dir, status, reason=why)
                    log.warning(f"[{point.name}] {why}")
                elif found is not None and not found.active:
                    # its result may reach this file system a little after Slurm ends the job (submitit waits as long)
                    if time.monotonic() - ended_at.setdefault(point.name, time.monotonic()) < RESULT_WAIT_S:
                        continue
                    status = _ended_without_result(job.job_id, found.state, run_dir)
                else:
                    continue
                waiting.remove((point, job))
                log.info(f"[{point.name}] {status}")
                on_done(point, status)
            if waiting:
                time.sleep(1.0)  # a look at files; the watcher asks Slurm at its own pace
    except KeyboardInterrupt:
        if watcher is None:
            raise
        left = [job.job_id for _, job in waiting]  # Ctrl-C and kill stop this client, not its jobs
        raise KeyboardInterrupt(f"this client stopped, but Slurm jobs {', '.join(left)} train on (or wait in the "
                                f"queue): follow them with `prelnx status {sweep_dir}`, stop them with `scancel "
                                f"{' '.join(left)}`; the same command run again trains none twice (a run a job still "
                                f"trains is left to it, `running elsewhere`, exit 5)") from None
