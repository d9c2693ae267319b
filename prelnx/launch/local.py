"""Running one training here: command.txt's `fairseq-train` (through launch/fairseq_entry.py; torchrun for several
workers) as a child process writing train.log, followed into the run dir: a crash cannot take down the caller (a
sweep), threads and GPUs are set per process, the run can be repeated by hand, and resume is fairseq's own. What
keeps the run dir trustworthy: docs/usage.md, "Failure modes"."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.atomic import io_reason, write_text_atomic
from prelnx.exits import STATUS_EXIT
from prelnx.config.schema import Config
from prelnx.console import results
from prelnx.launch.errors import RunConflict, RunIOError
from prelnx.launch.events import Ended, Event, Listener, Note, Started, render
from prelnx.launch.prepare import ensure_data
from prelnx.launch.watch import Watch, status_counts
from prelnx.plan.data import DataNotReady, data_problem
from prelnx.plan.launch import Launch, RunPlan, default_run_dir, plan_run
from prelnx.records import grain
from prelnx.records.checkpoints import CheckpointDamaged, checkpoint_info, resume_point
from prelnx.records.machine_record import record_machine
from prelnx.records.lock import RunLock, RunLocked, is_locked
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import Outcome, RunStatus
from prelnx.records.reconcile import LOG_NAME, crash_update, reconcile_run
from prelnx.records.results import SWEEP_INDEX
from prelnx.records.run_config import (BUDGET_KEYS, LAYOUT_SUM, Difference, RunConfigError, changed_layout_file,
                                       has_config, record_layout_sum, saved_differences, write_run_config)
from prelnx.records.status import read_status, write_status
from prelnx.records.tensorboard import hparams_of

log = logging.getLogger(__name__)
RUNNING_CHILDREN: set[subprocess.Popen] = set()  # a sweep stopped by SIGTERM stops them all


def stop_children() -> None:
    # SIGTERM, not SIGINT: a child started from a background job inherits SIGINT as ignored.
    for child in list(RUNNING_CHILDREN):
        child.terminate()  # a re-run leaves these alone (unless --force); one that has ended gets nothing


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """In the main thread, SIGTERM (kill, a scheduler's stop) raises KeyboardInterrupt inside, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # raises KeyboardInterrupt
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def pin(pid: int, cpus: frozenset[int]) -> bool:
    """Keep a just-started child on `cpus` (its threads and data-loader processes inherit it). Set after the start,
    not in a preexec_fn (unsafe in a threaded sweep); False where the OS does not allow it (the child runs unpinned)."""
    try:
        os.sched_setaffinity(pid, cpus)
    except (AttributeError, OSError):
        return False
    return True


def core_slots(jobs: int) -> list[frozenset[int]] | None:
    """This process's cores split into `jobs` disjoint slots (None: fewer cores than jobs, or the OS cannot tell)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    size = len(cores) // jobs
    return [frozenset(cores[i * size:(i + 1) * size]) for i in range(jobs)] if size else None


def start_child(launch: Launch, env: dict[str, str] | None, **streams: Any) -> subprocess.Popen:
    """command.txt's fairseq as a child that ends with this process (PRELNX_PARENT_PID: the plugin's parent watch)."""
    return subprocess.Popen(launch.child_argv(sys.executable), stdin=subprocess.DEVNULL,
                            env={**os.environ, **launch.env, **(env or {}), "PRELNX_PARENT_PID": str(os.getpid())},
                            **streams)  # fmt: skip


def reap(process: subprocess.Popen) -> int:
    """The exit code of a child that is ending (killed if it has not ended within a minute)."""
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def log_event(event: Event) -> None:
    """An event's line on the console (prelnx/console.py): a warning on stderr, the rest on stdout; how the run ended
    is the command's answer, said under -q too."""
    level = logging.WARNING if isinstance(event, Note) and event.warning else logging.INFO
    (results if isinstance(event, Ended) else log).log(level, render(event))


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    status: RunStatus
    update: int
    reason: str  # the outcome's one wording

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT[self.status]


@dataclass(frozen=True)
class Existing:
    """What a run dir already holds of this run."""

    status: dict[str, Any]  # its status.json ({}: no run there yet)
    extended: list[Difference]  # budget keys raised since (train on from the last checkpoint)

    @property
    def done(self) -> bool:
        """Nothing to train: finished (and not extended) or diverged."""
        state = RunStatus.of(self.status)
        return state.done and not (state is RunStatus.FINISHED and self.extended)


def check_run_dir(run_dir: Path, config: Config, force: bool) -> Existing:
    """What the run dir holds of this run; refuses a different run (RunConflict). A finished run's budget
    (train.max_epoch, train.max_update) may grow when the schedule does not depend on it."""
    if (run_dir / SWEEP_INDEX).is_file():  # (a file: refused by the option, commands/options.py)
        raise RunConflict(f"--run-dir {run_dir}: a sweep's folder, not a run dir; give the run a folder of its own")
    differences = None if force else saved_differences(run_dir, config)
    if differences is None:
        return Existing({}, [])
    grown = [d for d in differences if d.grows_budget]
    others = [d for d in differences if not d.grows_budget]
    if others:
        lowered = [d for d in others if d.key in BUDGET_KEYS]
        raise RunConflict(
            f"{run_dir} holds a run of a different config ({'; '.join(str(d) for d in others[:5])}). "
            + (f"A budget may only grow on a trained run ({lowered[0].key} cannot go from {lowered[0].old!r} to "
               f"{lowered[0].new!r}). " if lowered else "")
            + "Use --run-dir for a new run, or --force to set the old one aside and start again."
        )  # fmt: skip
    try:
        changed = changed_layout_file(run_dir, config)
    except RunConfigError as error:  # its layout.sha256 damaged: refused as another run (a sweep leaves it alone)
        raise RunConflict(str(error)) from None
    if changed:
        raise RunConflict(f"{changed}: changed since the run in {run_dir} started with it ({LAYOUT_SUM} there); "
                          f"restore it, or train into a new run dir (--run-dir, or --force to set the old run aside)")
    if config.schedule.decay == "linear" and (d := next((d for d in grown if d.key == "train.max_update"), None)):
        raise RunConflict(f"{run_dir}: {d}: schedule.decay linear reaches its end lr at train.max_update, so a longer "
                          f"budget would change the lr of every update already trained; train a new run (--run-dir) "
                          f"or start this one again (--force)")  # fmt: skip
    return Existing(read_status(run_dir), grown)


def check_before_training(plan: RunPlan, force: bool) -> list[str]:
    """`--dry-run`: every refusal the real run would make before it trains, raised as it raises them, with nothing
    written or generated; returns what the real run would say before training (a warning: said now, on stderr)."""
    existing = check_run_dir(plan.run_dir, plan.config, force)
    if (problem := data_problem(plan.config)) is not None:
        raise DataNotReady(problem)
    if is_locked(plan.run_dir):
        raise RunLocked(f"{plan.run_dir}: this run dir is in use by another prelnx process; the run would be refused "
                        f"until it ends")  # fmt: skip
    said = []
    last = plan.checkpoints / "checkpoint_last.pt"
    if not force and last.is_file():
        try:
            checkpoint_info(last)  # a planted checkpoint: CheckpointRefused, as the real run
        except CheckpointDamaged as error:
            log.warning(f"{error}; the run would fall back to the newest intact checkpoint")
    if existing.done:
        said.append(f"{plan.run_dir}: already {existing.status['status']}; the run would train nothing (use --force "
                    f"to train it again)")  # fmt: skip
    elif existing.extended:
        said.append(f"{plan.run_dir}: the budget grows ({'; '.join(str(d) for d in existing.extended)}); the run would "
                    f"train on from its last checkpoint")  # fmt: skip
    elif existing.status:
        said.append(f"{plan.run_dir}: holds this run ({existing.status.get('status')}); the run would resume it")
    return said


def train(
    config: Config,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    on_event: Listener = log_event,
    extra_env: dict[str, str] | None = None,
    on_start: Callable[[], Any] | None = None,
    cpus: frozenset[int] | None = None,
) -> RunResult:
    """Train (or resume) the run; raises before starting: RunConflict, DataNotReady, CheckpointRefused, RunLocked,
    RunIOError, BatchError. Events go to `on_event` (default: the console's lines). `extra_env`: the child's
    only (e.g. CUDA_VISIBLE_DEVICES from a sweep); `on_start`: called once every check has passed and the run dir is
    locked, just before fairseq starts (Slurm's rank 0); `cpus`: the cores of the run's processes (a pinned sweep job).
    """
    plan = plan_run(config, run_dir or default_run_dir(config), extra_env)
    run_dir = plan.run_dir
    check_run_dir(run_dir, plan.config, force)
    ensure_data(plan.config)  # checks the binarized data too: DataNotReady names the damaged file
    lock = RunLock(run_dir)
    try:
        lock.acquire()  # after every check, so that a refused run creates nothing
        existing = check_run_dir(run_dir, plan.config, force)  # again, now that no one else can change it
        if existing.done:
            status, update = RunStatus.of(existing.status), int(existing.status.get("update", 0))
            on_event(Note(f"{run_dir}: already {status} at update {update}; use --force to train it again"))
            return RunResult(run_dir, status, update, existing.status.get("reason", ""))
        if existing.extended:
            on_event(Note(f"{run_dir}: the budget grows ({'; '.join(str(d) for d in existing.extended)}): training "
                          f"on from the last checkpoint"))  # fmt: skip
        if force and has_config(run_dir):  # --force never deletes: the old run dir is renamed with a timestamp
            old_lock = lock  # held while the old dir moves: no one can start on it meanwhile
            target = run_dir.with_name(f"{run_dir.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
            shutil.move(str(run_dir), target)
            on_event(Note(f"--force: the previous run is kept as {target}"))
            try:
                lock = RunLock(run_dir).acquire()
            finally:
                old_lock.release()
        outcome = _attempt(plan, lock, on_event, extra_env, on_start, cpus)
        on_event(Ended(run_dir, outcome))
        return RunResult(run_dir, outcome.status, outcome.update, outcome.reason())
    except OSError as error:  # taking the lock, moving a run aside, reading its checkpoints: never a traceback
        raise RunIOError(error.errno, io_reason(error, run_dir)) from None
    finally:
        lock.release()


def _attempt(plan: RunPlan, lock: RunLock, listener: Listener, extra_env: dict[str, str] | None,
             on_start: Callable[[], Any] | None, cpus: frozenset[int] | None) -> Outcome:  # fmt: skip
    """One attempt at the locked run: reconcile, start fairseq (unless the budget is already trained), follow it,
    record how it ended."""
    config, run_dir, t = plan.config, plan.run_dir, plan.config.train
    notes: list[Note] = []
    start = resume_point(plan.checkpoints, lambda text: notes.append(Note(text, warning=True)))  # refuses a planted one
    run_grain = grain.of(config)
    write_run_config(run_dir, config)  # an OSError here: train's RunIOError
    if start is None:  # trained from scratch: with this layout file (a resume keeps what it started with)
        record_layout_sum(run_dir, config)
    write_text_atomic(run_dir / "command.txt", plan.launch.command_file())
    record_machine(run_dir, t.device)  # the CPU this attempt trains on (studies pool seeds across machines)
    reconciled = reconcile_run(run_dir, run_grain, grain.stride(config), read_metrics(run_dir), start)
    notes += [Note(line) for line in reconciled.describe()]
    write_status(run_dir, RunStatus.RUNNING, update=start.update if start else 0,
                 **status_counts(run_grain, reconciled.rows, start))  # fmt: skip
    log_path = run_dir / LOG_NAME
    diagnosed = t.diagnostics.every_updates is not None or t.diagnostics.sharpness_every_updates is not None
    watch = Watch(run_dir, run_grain, reconciled.rows, listener, t.loss_ceiling, hparams_of(config),
                  reconciled.diagnostics if diagnosed or reconciled.diagnostics else None)  # fmt: skip
    trained = start is not None and start.meets(t.max_epoch, t.max_update)
    if not trained:
        listener(Started(config, plan.data, run_dir, log_path, (start.epoch, start.update) if start else None))
    for note in notes:
        listener(note)
    if trained:
        listener(Note(f"{run_dir}: the last checkpoint (epoch {start.epoch}, update {start.update}) already holds "
                      f"the whole budget; recorded finished without training more"))  # fmt: skip
        return watch.finish(plan, Outcome(RunStatus.FINISHED, start.update))
    if on_start is not None:
        on_start()
    started_at = time.time()
    with open(log_path, "ab") as out:
        out.write(f"prelnx: {'resuming' if start else 'starting'} fairseq at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
        offset = out.tell()
        process = start_child(plan.launch, extra_env, stdout=out, stderr=subprocess.STDOUT,
                              pass_fds=(lock.fd,) if lock.fd is not None else ())  # the child keeps the run dir locked
    RUNNING_CHILDREN.add(process)
    if cpus:
        pin(process.pid, cpus)
    try:
        with sigterm_interrupts():
            watch.follow(process, log_path, offset)
    finally:
        returncode = reap(process)
        RUNNING_CHILDREN.discard(process)
    outcome = watch.outcome(returncode, crash_update(plan.checkpoints, started_at))
    return watch.finish(plan, outcome)
