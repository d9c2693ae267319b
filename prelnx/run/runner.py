"""Running one training: fairseq as a child process that writes train.log itself, followed into the run dir.

The child is plain `fairseq-train` (as `python -m fairseq_cli.train`) with the arguments of command.txt,
so a crash or a divergence cannot take down the caller (a sweep), threads and GPUs are set per process,
and the run can be repeated by hand. Resume is fairseq's own (checkpoints/checkpoint_last.pt).

What makes the run dir trustworthy (README, "Failure modes"):
- one writer: an exclusive lock on the run dir for the life of the run, inherited by the child;
- the child dies with its parent (the plugin's parent watch) and writes its own log;
- on every start and at every end the run dir is reconciled with the checkpoints (`reconcile.py`);
- a full disk or another I/O error ends the run `failed` with the path, never a traceback.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from prelnx.atomic import io_reason, write_text_atomic
from prelnx.config.load import config_from_dict, config_to_dict, dump_config, flatten_values
from prelnx.config.schema import LAYOUT_NAMES, Config
from prelnx.run.checkpoints import CheckpointInfo, checkpoint_info, remove_partial_writes, resume_point
from prelnx.run.lock import RunLock
from prelnx.run.metrics import read_metrics, write_metrics
from prelnx.run.tensorboard import TensorBoardLog, rebuild
from prelnx.run.plan import ensure_data, plan_launch, resolve_batch
from prelnx.run import grain
from prelnx.run.reconcile import LOG_NAME, Reconciled, crash_update, reconcile_rows, reconcile_update_rows, rows_from_log
from prelnx.run.status import EXIT_CODES, read_status, write_status
from prelnx.run.watch import Watch

# Keys that change how a run executes but not what it computes: they may differ when a run is resumed.
# With train.effective_batch_tokens, workers (processes, nodes) and the derived update_freq are execution too:
# the batch per update stays the same (a resume on other hardware runs the same optimisation).
EXECUTION_KEYS = {"name", "train.threads", "train.num_workers", "train.log_interval", "train.loss_ceiling",
                  "train.keep_every_updates"}
BATCH_KEYS = {"train.processes", "train.nodes", "train.update_freq"}
TERMINAL = ("finished", "diverged")


class RunConflict(ValueError):
    """The run dir holds a different run; the message says how to proceed."""


class RunIOError(OSError):
    """The run dir could not be written (full disk, permissions); the message names the path."""


@dataclass
class RunResult:
    status: str
    reason: str
    update: int
    run_dir: Path

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.status, 1)


def default_run_dir(config: Config, runs_root: Path = Path("runs")) -> Path:
    """runs/<name>; a name that would leave runs/ (absolute, `..`, a backslash) is refused: give --run-dir."""
    return runs_subdir(config.name or "run", runs_root)


def runs_subdir(name: str, runs_root: Path = Path("runs")) -> Path:
    """runs_root/name, for a run's or a sweep's name; ValueError for a name that would leave runs_root."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or "\\" in name or not parts:
        raise ValueError(f"name: {name!r} would put the run outside {runs_root}/; use a plain name "
                         f"(letters, digits, - _ . and / for subfolders) or give --run-dir explicitly")  # fmt: skip
    return runs_root / name


def config_differences(saved: dict[str, Any], current: Config) -> list[str]:
    """Keys whose values differ between a run dir's config.yaml and `current` (execution-only keys ignored)."""
    try:  # today's defaults filled in (and renamed keys followed): a key a newer prelnx added is no difference
        saved = config_to_dict(config_from_dict(saved, "config.yaml"))
    except ValueError:
        pass
    old, new = flatten_values(saved), flatten_values(config_to_dict(current))
    ignored = EXECUTION_KEYS | (BATCH_KEYS if current.train.effective_batch_tokens is not None else set())
    keys = sorted((set(old) | set(new)) - ignored)
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in keys if old.get(key) != new.get(key)]


def describe_model(config: Config) -> str:
    """e.g. "Pre-LN", "Pre-LN rmsnorm +qk-norm", "DeepNorm"."""
    m = config.model
    name = LAYOUT_NAMES[m.layout]
    return name + ("" if m.norm == "layernorm" else f" {m.norm}") + (" +qk-norm" if m.qk_norm else "")


def hparams_of(config: Config) -> dict[str, Any]:
    """The config as TensorBoard hparams (scalars and strings only)."""
    flat = flatten_values(config_to_dict(config))
    return {key: value if isinstance(value, (int, float, str, bool)) else str(value) for key, value in flat.items()}


def _check_run_dir(run_dir: Path, config: Config, force: bool) -> dict[str, Any] | None:
    """Returns the existing status when the run dir holds this same run; refuses a different one."""
    saved_path = run_dir / "config.yaml"
    if not saved_path.is_file() or force:
        return None
    differences = config_differences(yaml.safe_load(saved_path.read_text()) or {}, config)
    if differences:
        raise RunConflict(
            f"{run_dir} holds a run of a different config ({'; '.join(differences[:5])}). "
            f"Use --run-dir for a new run, or --force to set the old one aside and start again."
        )
    return read_status(run_dir)


def _set_aside(run_dir: Path) -> Path:
    """--force never deletes: the old run dir is renamed with a timestamp."""
    target = run_dir.with_name(f"{run_dir.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
    shutil.move(str(run_dir), target)
    return target


# fairseq children of this process, so that a sweep stopped by SIGTERM can stop them all.
RUNNING_CHILDREN: set[subprocess.Popen] = set()


def stop_children() -> None:
    # SIGTERM, not SIGINT: a child started from a background job inherits SIGINT as ignored.
    for child in list(RUNNING_CHILDREN):
        if child.poll() is None:
            child.terminate()  # a re-run leaves these alone (unless --force)


def stop_on_sigterm() -> Any:
    """In the main thread, make SIGTERM (kill, a scheduler's stop) stop the fairseq child too, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


def train(
    config: Config,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    echo: Callable[[str], None] = print,
    extra_env: dict[str, str] | None = None,
    on_start: Callable[[], Any] | None = None,
) -> RunResult:
    """Train (or resume) the run; returns its final status.

    Raises before starting: RunConflict, DataNotReady, CheckpointRefused, RunLocked, RunIOError.
    `extra_env` is added to the child's environment only (e.g. CUDA_VISIBLE_DEVICES from a sweep); `on_start` is
    called once every check has passed and the run dir is locked, just before fairseq starts (Slurm's rank 0).
    """
    run_dir = run_dir or default_run_dir(config)
    config = resolve_batch(config, extra_env)  # update_freq from train.effective_batch_tokens and this run's workers
    _check_run_dir(run_dir, config, force)
    data = ensure_data(config)  # checks the binarized data too: DataNotReady names the damaged file
    launch = plan_launch(config, data, run_dir / "checkpoints", extra_env)
    try:
        lock = RunLock(run_dir).acquire()  # after every check, so that a refused run creates nothing
    except OSError as error:
        raise RunIOError(error.errno, io_reason(error, run_dir)) from None
    try:
        existing = _check_run_dir(run_dir, config, force)  # again, now that no one else can change it
        if existing and existing.get("status") in TERMINAL:
            update = int(existing.get("update", 0))
            echo(f"{run_dir}: already {existing['status']} at update {update}; use --force to train it again")
            return RunResult(existing["status"], existing.get("reason", ""), update, run_dir)
        if force and (run_dir / "config.yaml").exists():
            old_lock = lock  # held while the old dir moves: no one can start on it meanwhile
            echo(f"--force: the previous run is kept as {_set_aside(run_dir)}")
            try:
                lock = RunLock(run_dir).acquire()
            finally:
                old_lock.release()
        return _train_locked(config, run_dir, launch, data, lock, echo, extra_env, on_start)
    except OSError as error:  # moving a run aside, reading its checkpoints: never a traceback
        if isinstance(error, RunIOError):
            raise
        raise RunIOError(error.errno, io_reason(error, run_dir)) from None
    finally:
        lock.release()


def _train_locked(config: Config, run_dir: Path, launch: Any, data: Path, lock: RunLock, echo: Callable[[str], None],
                  extra_env: dict[str, str] | None, on_start: Callable[[], Any] | None = None) -> RunResult:  # fmt: skip
    notes: list[str] = []
    start = resume_point(run_dir / "checkpoints", notes.append)  # refuses a planted checkpoint: nothing runs
    hparams = hparams_of(config)
    try:
        write_text_atomic(run_dir / "config.yaml", dump_config(config))
        write_text_atomic(run_dir / "command.txt", f"# {launch.batch}\n{launch.command_line()}\n")
        reconciled = _reconcile(run_dir, config, read_metrics(run_dir), start)
        write_status(run_dir, "running", update=start.update if start else 0, **_counts(config, reconciled.rows, start))
    except OSError as error:
        raise RunIOError(error.errno, io_reason(error, run_dir)) from None
    echo(
        f"{'resuming' if start else 'starting'} {config.name}: {describe_model(config)}, {config.optimizer.name} "
        f"lr {config.optimizer.lr:g}, warm-up {config.schedule.warmup_updates} updates, decay {config.schedule.decay}, "
        f"data {data} -> {run_dir} (fairseq log: {run_dir / LOG_NAME})"
        + (f"; from epoch {start.epoch}, update {start.update}" if start else "")
    )
    for line in notes + reconciled.describe():
        echo(line)
    log_path = run_dir / LOG_NAME
    watch = Watch(config, run_dir, reconciled.rows, None, echo)
    if on_start is not None:
        on_start()
    started_at = time.time()
    with open(log_path, "ab") as log:
        log.write(f"prelnx: {'resuming' if start else 'starting'} fairseq at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
        offset = log.tell()
        process = subprocess.Popen(
            launch.child_argv(sys.executable),
            env={**os.environ, **launch.env, **(extra_env or {}), "PRELNX_PARENT_PID": str(os.getpid())},
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            pass_fds=(lock.fd,) if lock.fd is not None else (),  # the child keeps the run dir locked too
        )  # fmt: skip
    RUNNING_CHILDREN.add(process)
    previous_handler = stop_on_sigterm()
    try:
        try:  # TensorBoard (and its torch import) while fairseq starts up, not before it
            rebuild(run_dir, reconciled.rows, hparams, update_grain=watch.update_grain)
            watch.tensorboard = TensorBoardLog(run_dir, watch.update_grain)
        except OSError as error:
            watch.io_error = io_reason(error, run_dir)
            process.terminate()
        else:
            watch.follow(process, log_path, offset)
    except KeyboardInterrupt:
        watch.interrupted = True
        process.terminate()
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
        try:
            returncode = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        RUNNING_CHILDREN.discard(process)
        if watch.tensorboard is not None:
            watch.tensorboard.close()
    status, reason, update = watch.outcome(returncode, crash_update(run_dir / "checkpoints", started_at))
    return _finish(run_dir, watch, status, reason, update, hparams, echo)


def _reconcile(run_dir: Path, config: Config, saved: list[dict[str, Any]], checkpoint: CheckpointInfo | None) -> Reconciled:
    completed, update = (checkpoint.epoch, checkpoint.update) if checkpoint else (0, 0)
    update_grain = grain.by_update(config)
    logged = rows_from_log(run_dir / LOG_NAME, update_grain)
    if update_grain:
        reconciled = reconcile_update_rows(saved, logged, update, config.eval.every_updates or 1)
    else:
        reconciled = reconcile_rows(saved, logged, completed, update)
    write_metrics(run_dir, reconciled.rows)
    return reconciled


def _counts(config: Config, rows: list[dict[str, Any]], checkpoint: CheckpointInfo | None) -> dict[str, int]:
    """status.json's `epochs` (rows, at the epoch grain) and, at the update grain, `validations` (rows)."""
    if grain.by_update(config):
        return {"epochs": checkpoint.epoch if checkpoint else 0, "validations": len(rows)}
    return {"epochs": len(rows)}


def _finish(run_dir: Path, watch: Watch, status: str, reason: str, update: int, hparams: dict[str, Any],
            echo: Callable[[str], None]) -> RunResult:  # fmt: skip
    """Reconcile with the last checkpoint and write the final status (on a full disk: a `failed` status)."""
    remove_partial_writes(run_dir / "checkpoints")  # the child is gone: a *.pt.tmp is a save it never finished
    last = run_dir / "checkpoints" / "checkpoint_last.pt"
    unreadable = ""
    try:
        info = checkpoint_info(last) if last.is_file() else None
    except (ValueError, OSError) as error:  # damaged, refused or unreadable: the next start deals with it
        info, unreadable = None, str(error)
        echo(f"warning: {error}")
    extra: dict[str, Any] = {}
    try:
        if unreadable:  # nothing to reconcile against: keep what was seen, and do not call the run finished
            rows = watch.rows
            if status == "finished":
                status, reason = "interrupted", f"the last checkpoint cannot be read ({unreadable}); run again"
        else:
            reconciled = _reconcile(run_dir, watch.config, watch.rows, info)
            rows = reconciled.rows
            if reconciled.lost_epochs:
                extra["lost_validations" if watch.update_grain else "lost_epochs"] = reconciled.lost_epochs
        rebuild(run_dir, rows, hparams, _best(rows), watch.update_grain)
    except OSError as error:
        rows = watch.rows
        if status != "failed" or not reason.startswith(("no space", "disk quota")):
            status, reason = "failed", io_reason(error, run_dir)
    if info is not None:
        extra["checkpoint"] = {"epoch": info.epoch, "update": info.update}
        update = info.update if status == "finished" else max(update, info.update)
    if status == "diverged" and "after update" not in reason and " at update " not in reason:
        reason = f"{reason} (after update {update})"
    try:
        write_status(run_dir, status, reason=reason, update=update, **_counts(watch.config, rows, info), **_best(rows), **extra)
    except OSError as error:
        echo(f"warning: status.json could not be written ({io_reason(error, run_dir)})")
    echo(f"{run_dir}: {status}" + (f" ({reason})" if reason else ""))
    return RunResult(status, reason, update, run_dir)


def _best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    losses = [r["valid_loss"] for r in rows if isinstance(r.get("valid_loss"), float) and math.isfinite(r["valid_loss"])]
    bleus = [r["valid_bleu"] for r in rows if isinstance(r.get("valid_bleu"), float)]
    return {
        "best_valid_loss": min(losses) if losses else None,
        "best_valid_bleu": max(bleus) if bleus else None,
        "final_valid_loss": rows[-1].get("valid_loss") if rows else None,
    }
