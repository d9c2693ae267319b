"""Running one training: fairseq as a child process, its JSON log turned into the run dir's files.

The child is plain `fairseq-train` (as `python -m fairseq_cli.train`) with the arguments of command.txt,
so a crash or a divergence cannot take down the caller (a sweep), threads and GPUs are set per process,
and the run can be repeated by hand. Resume is fairseq's own: it continues from checkpoints/checkpoint_last.pt.
"""

from __future__ import annotations

import collections
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

from prelnx.atomic import write_text_atomic
from prelnx.config.load import config_to_dict, dump_config
from prelnx.config.schema import Config
from prelnx.run.metrics import TensorBoardLog, read_metrics, write_metrics
from prelnx.run.plan import ensure_data, plan_launch
from prelnx.run.records import EpochRows, is_bad_loss, parse_record
from prelnx.run.status import EXIT_CODES, read_status, write_status

# Keys that change how a run executes but not what it computes: they may differ when a run is resumed.
EXECUTION_KEYS = {"name", "train.threads", "train.num_workers", "train.log_interval", "train.loss_ceiling"}
DIVERGENCE_MARKERS = ("FloatingPointError", "Minimum loss scale reached", "gradients are Nan/Inf")


class RunConflict(ValueError):
    """The run dir holds a different run; the message says how to proceed."""


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
    return runs_root / (config.name or "run")


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_differences(saved: dict[str, Any], current: Config) -> list[str]:
    """Keys whose values differ between a run dir's config.yaml and `current` (execution-only keys ignored)."""
    old, new = _flat(saved), _flat(config_to_dict(current))
    keys = sorted((set(old) | set(new)) - EXECUTION_KEYS)
    return [f"{key}: {old.get(key)!r} -> {new.get(key)!r}" for key in keys if old.get(key) != new.get(key)]


def describe_model(config: Config) -> str:
    """e.g. "Pre-LN", "Pre-LN rmsnorm +qk-norm", "DeepNorm"."""
    m = config.model
    name = {"post": "Post-LN", "pre": "Pre-LN", "deepnorm": "DeepNorm"}[m.layout]
    return name + ("" if m.norm == "layernorm" else f" {m.norm}") + (" +qk-norm" if m.qk_norm else "")


def hparams_of(config: Config) -> dict[str, Any]:
    """The config as TensorBoard hparams (scalars and strings only)."""
    flat = _flat(config_to_dict(config))
    return {key: value if isinstance(value, (int, float, str, bool)) else str(value) for key, value in flat.items()}


def _check_run_dir(run_dir: Path, config: Config, force: bool) -> dict[str, Any] | None:
    """Returns the existing status when the run dir holds this same run; refuses a different one."""
    import yaml

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


def _format_inner(record: dict[str, Any]) -> str:
    def number(key: str, spec: str) -> str:
        value = record.get(key)
        return format(value, spec) if isinstance(value, float) and math.isfinite(value) else str(value)

    return (
        f"epoch {number('epoch', '.0f')} | update {number('num_updates', '.0f')} | loss {number('loss', '.3f')} | "
        f"lr {number('lr', '.3g')} | {number('wps', '.0f')} tok/s"
    )


def _format_row(row: dict[str, Any]) -> str:
    def show(value: Any, digits: int = 3) -> str:
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    return (
        f"epoch {row['epoch']} done | updates {row['num_updates']} | train loss {show(row['train_loss'])} | "
        f"valid loss {show(row['valid_loss'])} | valid BLEU {show(row['valid_bleu'], 2)} | "
        f"{row['wall_seconds']:.0f} s"
    )


TERMINAL = ("finished", "diverged")
# fairseq children of this process, so that a sweep stopped by SIGTERM can stop them all.
RUNNING_CHILDREN: set[subprocess.Popen] = set()


def stop_children() -> None:
    # SIGTERM, not SIGINT: a child started from a background job inherits SIGINT as ignored.
    for child in list(RUNNING_CHILDREN):
        if child.poll() is None:
            child.terminate()  # a re-run leaves these alone (unless --force)


def train(
    config: Config,
    *,
    run_dir: Path | None = None,
    force: bool = False,
    echo: Callable[[str], None] = print,
    extra_env: dict[str, str] | None = None,
) -> RunResult:
    """Train (or resume) the run; returns its final status. Raises RunConflict/DataNotReady before starting.

    `extra_env` is added to the child's environment only (e.g. CUDA_VISIBLE_DEVICES from a sweep).
    """
    run_dir = run_dir or default_run_dir(config)
    existing = _check_run_dir(run_dir, config, force)
    if existing and existing.get("status") in TERMINAL:
        update = int(existing.get("update", 0))
        echo(f"{run_dir}: already {existing['status']} at update {update}; use --force to train it again")
        return RunResult(existing["status"], existing.get("reason", ""), update, run_dir)
    if force and run_dir.exists():
        echo(f"--force: the previous run is kept as {_set_aside(run_dir)}")

    data = ensure_data(config)
    launch = plan_launch(config, data, run_dir / "checkpoints")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_dir / "config.yaml", dump_config(config))
    write_text_atomic(run_dir / "command.txt", launch.command_line() + "\n")

    rows = read_metrics(run_dir)
    resuming = (run_dir / "checkpoints" / "checkpoint_last.pt").is_file()
    echo(
        f"{'resuming' if resuming else 'starting'} {config.name}: {describe_model(config)}, {config.optimizer.name} "
        f"lr {config.optimizer.lr:g}, warm-up {config.schedule.warmup_updates} updates, decay {config.schedule.decay}, "
        f"data {data} -> {run_dir} (fairseq log: {run_dir / 'train.log'})"
    )
    write_status(run_dir, "running", update=rows[-1]["num_updates"] if rows else 0)
    tensorboard = TensorBoardLog(run_dir / "tb", first_epoch=rows[-1]["epoch"] + 1 if rows else 1)
    tensorboard.hparams(hparams_of(config))
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "fairseq_cli.train", *launch.argv],
        env={**os.environ, **launch.env, **(extra_env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    RUNNING_CHILDREN.add(process)
    watch = _Watch(config, run_dir, rows, tensorboard, echo)
    previous_handler = stop_on_sigterm()
    try:
        watch.follow(process)
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
    status, reason = watch.outcome(returncode)
    tensorboard.final(_best(watch.rows), step=watch.rows[-1]["epoch"] if watch.rows else 0)
    tensorboard.close()
    write_status(run_dir, status, reason=reason, update=watch.epochs.last_update, epochs=len(watch.rows),
                 **_best(watch.rows))  # fmt: skip
    echo(f"{run_dir}: {status}" + (f" ({reason})" if reason else ""))
    return RunResult(status, reason, watch.epochs.last_update, run_dir)


def stop_on_sigterm() -> Any:
    """In the main thread, make SIGTERM (kill, a scheduler's stop) stop the fairseq child too, as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


class _Watch:
    """Follows the child's output: tees it to train.log, writes epoch rows, decides divergence."""

    def __init__(self, config: Config, run_dir: Path, rows: list[dict[str, Any]], tensorboard: TensorBoardLog,
                 echo: Callable[[str], None]) -> None:  # fmt: skip
        self.config, self.run_dir, self.rows, self.tensorboard, self.echo = config, run_dir, rows, tensorboard, echo
        self.epochs = EpochRows(last_update=rows[-1]["num_updates"] if rows else 0)
        self.wall_before = rows[-1].get("wall_seconds", 0.0) if rows else 0.0
        self.started = time.monotonic()
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self.divergence = ""  # set when prelnx itself stops a diverging run
        self.fairseq_nan = False  # set when fairseq raised on NaN/Inf
        self.interrupted = False

    def follow(self, process: subprocess.Popen) -> None:
        assert process.stdout is not None
        with open(self.run_dir / "train.log", "a", buffering=1) as log:  # line-buffered: `tail -f` works
            for line in process.stdout:
                log.write(line)
                self.tail.append(line.rstrip("\n"))
                if not self.fairseq_nan and any(marker in line for marker in DIVERGENCE_MARKERS):
                    self.fairseq_nan = True  # its traceback follows
                parsed = parse_record(line)
                if parsed is not None:
                    self._record(*parsed)
                if self.divergence:
                    process.terminate()
                    return

    def _record(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "train_inner":
            self.echo(_format_inner(record))
            if is_bad_loss(record.get("loss"), self.config.train.loss_ceiling):
                self.divergence = f"train loss {record.get('loss')} at update {int(record.get('num_updates', 0))}"
        if kind == "valid" and is_bad_loss(record.get("valid_loss"), None):
            self.divergence = f"valid loss {record.get('valid_loss')} at epoch {int(record.get('epoch', 0))}"
        row = self.epochs.add(kind, record)
        if row is not None:
            row["wall_seconds"] = round(self.wall_before + time.monotonic() - self.started, 1)
            self.rows = [r for r in self.rows if r["epoch"] != row["epoch"]] + [row]
            write_metrics(self.run_dir, self.rows)
            self.tensorboard.epoch(row)
            self.echo(_format_row(row))
        write_status(self.run_dir, "running", update=self.epochs.last_update)

    def outcome(self, returncode: int) -> tuple[str, str]:
        update = self.epochs.last_update
        if self.divergence:
            return "diverged", self.divergence
        if self.interrupted or returncode in (-signal.SIGINT, -signal.SIGTERM, 130, 143):
            return "interrupted", "stopped by the user; run the same command again to resume"
        if returncode == 0:
            return "finished", ""
        if self.fairseq_nan:
            return "diverged", f"fairseq stopped on NaN/Inf after update {update}"
        last_error = next((line for line in reversed(self.tail) if line.strip()), "")
        return "failed", f"fairseq exited with code {returncode}: {last_error.strip()}"


def _best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    losses = [r["valid_loss"] for r in rows if isinstance(r.get("valid_loss"), float) and math.isfinite(r["valid_loss"])]
    bleus = [r["valid_bleu"] for r in rows if isinstance(r.get("valid_bleu"), float)]
    return {
        "best_valid_loss": min(losses) if losses else None,
        "best_valid_bleu": max(bleus) if bleus else None,
        "final_valid_loss": rows[-1].get("valid_loss") if rows else None,
    }
