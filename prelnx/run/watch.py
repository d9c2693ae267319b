"""Following a training: the child writes train.log itself; prelnx reads it as it grows.

Each JSON record becomes terminal progress, an epoch row (metrics.jsonl, TensorBoard) and a divergence
decision. The log is a file the child writes, not a pipe, so fairseq's record of every update survives if
prelnx dies, and the restart rebuilds what prelnx missed from it (`prelnx.run.reconcile`).
"""

from __future__ import annotations

import collections
import math
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from prelnx.atomic import io_reason
from prelnx.config.schema import Config
from prelnx.run.metrics import write_metrics
from prelnx.run.tensorboard import TensorBoardLog
from prelnx.run import grain
from prelnx.run.records import is_bad_loss, parse_record, row_builder
from prelnx.run.status import write_status

DIVERGENCE_MARKERS = ("FloatingPointError", "Minimum loss scale reached", "gradients are Nan/Inf")
EXCEPTION = re.compile(r"^[\w.]*(Error|Exception|Interrupt)\b[^:]*:")
DISK_FULL = re.compile(r"\[Errno (?:28|122)\][^:]*:\s*'?([^']*)'?|No space left on device|file write failed")


def format_inner(record: dict[str, Any]) -> str:
    def number(key: str, spec: str) -> str:
        value = record.get(key)
        return format(value, spec) if isinstance(value, float) and math.isfinite(value) else str(value)

    return (
        f"epoch {number('epoch', '.0f')} | update {number('num_updates', '.0f')} | loss {number('loss', '.3f')} | "
        f"lr {number('lr', '.3g')} | {number('wps', '.0f')} tok/s"
    )


def format_row(row: dict[str, Any], update_grain: bool = False) -> str:
    """`epoch 3 done | updates 150 | ...`, or at the update grain `update 300 done | epoch 2 | ...` (the sweep's
    progress reads the first words)."""

    def show(value: Any, digits: int = 3) -> str:
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    wall = row.get("wall_seconds")
    head = (f"update {row['num_updates']} done | epoch {row['epoch']}" if update_grain
            else f"epoch {row['epoch']} done | updates {row['num_updates']}")  # fmt: skip
    if row.get("valid_accuracy") is not None:
        bleu = f"valid accuracy {show(row['valid_accuracy'], 1)} % | "
    else:
        bleu = "" if update_grain else f"valid BLEU {show(row['valid_bleu'], 2)} | "
    return (
        f"{head} | train loss {show(row['train_loss'])} | valid loss {show(row['valid_loss'])} | {bleu}"
        + (f"{wall:.0f} s" if isinstance(wall, (int, float)) else "wall time not recorded")
    )


class Watch:
    """Follows the child's log file: epoch rows, status heartbeats, divergence and I/O failures."""

    def __init__(self, config: Config, run_dir: Path, rows: list[dict[str, Any]], tensorboard: TensorBoardLog | None,
                 echo: Callable[[str], None]) -> None:  # fmt: skip
        self.config, self.run_dir, self.rows, self.tensorboard, self.echo = config, run_dir, rows, tensorboard, echo
        self.update_grain = grain.by_update(config)
        self.epochs = row_builder(self.update_grain, last_update=rows[-1]["num_updates"] if rows else 0)
        walls = [r["wall_seconds"] for r in rows if isinstance(r.get("wall_seconds"), (int, float))]
        self.wall_before = walls[-1] if walls else 0.0
        self.started = time.monotonic()
        self.tail: collections.deque[str] = collections.deque(maxlen=60)
        self.divergence = ""  # set when prelnx itself stops a diverging run
        self.fairseq_nan = False  # set when fairseq raised on NaN/Inf
        self.interrupted = False
        self.io_error = ""  # set when prelnx could not write the run dir's files
        self.done_training = False  # fairseq logged the end of its training (its last checkpoint is saved by then)

    def follow(self, process: subprocess.Popen, log_path: Path, offset: int) -> None:
        """Read the log from `offset` until the child exits (or prelnx stops it)."""
        with open(log_path, errors="replace") as log:
            log.seek(offset)
            partial = ""
            while True:
                chunk = log.readline()
                if chunk:
                    partial += chunk
                    if not partial.endswith("\n"):
                        continue
                    line, partial = partial, ""
                    self._line(line)
                    if self.divergence or self.io_error:
                        process.terminate()
                        return
                    continue
                if process.poll() is not None:
                    rest = partial + log.read()
                    for line in rest.splitlines():
                        self._line(line)
                    return
                time.sleep(0.1)

    def _line(self, line: str) -> None:
        self.tail.append(line.rstrip("\n"))
        if not self.fairseq_nan and any(marker in line for marker in DIVERGENCE_MARKERS):
            self.fairseq_nan = True  # its traceback follows
        if "| fairseq_cli.train | done training in" in line:
            self.done_training = True
        parsed = parse_record(line)
        if parsed is None:
            return
        try:
            self._record(*parsed)
        except OSError as error:
            self.io_error = io_reason(error, self.run_dir)

    def _record(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "train_inner":
            self.echo(format_inner(record))
            if is_bad_loss(record.get("loss"), self.config.train.loss_ceiling):
                self.divergence = f"train loss {record.get('loss')} at update {int(record.get('num_updates', 0))}"
        if kind == "valid" and is_bad_loss(record.get("valid_loss"), None):
            where = (f"update {int(record.get('valid_num_updates', 0))}" if self.update_grain
                     else f"epoch {int(record.get('epoch', 0))}")  # fmt: skip
            self.divergence = f"valid loss {record.get('valid_loss')} at {where}"
        row = self.epochs.add(kind, record)
        if row is not None:
            row["wall_seconds"] = round(self.wall_before + time.monotonic() - self.started, 1)
            key = grain.key(self.update_grain)
            self.rows = [r for r in self.rows if r[key] != row[key]] + [row]
            write_metrics(self.run_dir, self.rows)
            if self.tensorboard is not None:
                self.tensorboard.row(row)
            self.echo(format_row(row, self.update_grain))
        write_status(self.run_dir, "running", update=self.epochs.last_update)

    def outcome(self, returncode: int, crash_update: int | None) -> tuple[str, str, int]:
        """(status, reason, last update trained) once the child has exited."""
        update = max(self.epochs.last_update, crash_update or 0)
        if self.io_error:
            return "failed", self.io_error, update
        if self.divergence:
            return "diverged", self.divergence, update
        if self.interrupted or returncode in (-signal.SIGINT, -signal.SIGTERM, 130, 143):
            return "interrupted", "stopped by the user; run the same command again to resume", update
        if returncode == 0:
            return "finished", "", update
        if self.done_training:  # e.g. a C++ abort while the interpreter shuts down, after the last save
            return "finished", f"fairseq finished training, then exited with code {returncode}: {self.last_error()}", update
        if self.fairseq_nan:
            return "diverged", f"fairseq stopped on NaN/Inf after update {update}", update
        disk = self.disk_full()
        if disk is not None:
            return "failed", disk, update
        return "failed", f"fairseq exited with code {returncode}: {self.last_error()}", update

    def last_error(self) -> str:
        """The exception a worker raised (not torchrun's summary banner), else the last line of output."""
        for line in reversed(self.tail):
            if EXCEPTION.match(line.strip()) and "ChildFailedError" not in line:
                return line.strip()
        return next((line.strip() for line in reversed(self.tail) if line.strip() and set(line.strip()) != {"="}), "")

    def disk_full(self) -> str | None:
        """'no space left on device: <path>' when the child's output says its writes failed for lack of space."""
        for line in reversed(self.tail):
            found = DISK_FULL.search(line)
            if found:
                path = found.group(1) if found.lastindex and found.group(1) else str(self.run_dir / "checkpoints")
                return f"no space left on device: {path}"
        return None
