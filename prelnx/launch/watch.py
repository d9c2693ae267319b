"""Following a training: the child writes train.log itself; prelnx reads it as it grows.

Each JSON record becomes an event (progress, a validation row written to metrics.jsonl and TensorBoard, a
diagnostics row appended to diagnostics.jsonl and TensorBoard) and a divergence decision; the child's exit becomes a typed `Outcome`. The log is a file the child writes, not a pipe,
so fairseq's record of every update survives if prelnx dies, and the restart rebuilds what prelnx missed from it
(records/reconcile.py).
"""

from __future__ import annotations

import collections
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from prelnx.launch.events import Listener, Progress, RowDone
from prelnx.records.diagnostics import append_diagnostics, parse_diagnostics
from prelnx.records.grain import Grain
from prelnx.records.metrics import write_metrics
from prelnx.records.outcome import Divergence, Failure, Outcome, RunStatus, Signal, io_failure
from prelnx.records.rows import Row, is_bad_loss, parse_record, row_builder
from prelnx.records.status import write_status
from prelnx.records.tensorboard import TensorBoardLog, rebuild

# What fairseq's own output says (its wording, not ours): a NaN/Inf it raised on, an exception line, a full disk.
DIVERGENCE_MARKERS = ("FloatingPointError", "Minimum loss scale reached", "gradients are Nan/Inf")
EXCEPTION = re.compile(r"^[\w.]*(Error|Exception|Interrupt)\b[^:]*:")
DISK_FULL = re.compile(r"\[Errno (?:28|122)\][^:]*:\s*'?([^']*)'?|No space left on device|file write failed")
DONE_TRAINING = "| fairseq_cli.train | done training in"
STOP_CODES = (-signal.SIGINT, -signal.SIGTERM, 130, 143)


class Watch:
    """Follows the child's log file: rows, status heartbeats, divergence and I/O failures."""

    def __init__(self, run_dir: Path, grain: Grain, rows: list[Row], listener: Listener,
                 loss_ceiling: float | None, hparams: dict[str, Any],
                 diagnostics: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
        self.run_dir, self.grain, self.rows, self.listener = run_dir, grain, rows, listener
        self.diagnostics = diagnostics  # the diagnostics rows (None: the run records none)
        self.loss_ceiling, self.hparams = loss_ceiling, hparams
        self.builder = row_builder(grain, last_update=rows[-1]["num_updates"] if rows else 0)
        walls = [r["wall_seconds"] for r in rows if isinstance(r.get("wall_seconds"), (int, float))]
        self.wall_before = walls[-1] if walls else 0.0
        self.started = time.monotonic()
        self.tail: collections.deque[str] = collections.deque(maxlen=60)
        self.tensorboard: TensorBoardLog | None = None
        self.divergence: Divergence | None = None  # prelnx itself stops a diverging run
        self.fairseq_nan = False  # fairseq raised on NaN/Inf
        self.stopped = False  # by the user
        self.io_failed: tuple[Failure, str] | None = None  # prelnx could not write the run dir's files
        self.done_training = False  # fairseq logged the end of its training (its last checkpoint is saved by then)

    def follow(self, process: subprocess.Popen, log_path: Path, offset: int) -> None:
        """Open TensorBoard (while fairseq starts up), then read the log from `offset` until the child exits (or
        prelnx stops it). Ctrl-C: `stop` and return."""
        try:
            try:
                rebuild(self.run_dir, self.rows, self.hparams, grain=self.grain, diagnostics=self.diagnostics)
                self.tensorboard = TensorBoardLog(self.run_dir, self.grain)
            except OSError as error:
                self.io_failed = io_failure(error, self.run_dir)
                process.terminate()
                return
            self._read(process, log_path, offset)
        except KeyboardInterrupt:
            self.stopped = True
            process.terminate()

    def _read(self, process: subprocess.Popen, log_path: Path, offset: int) -> None:
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
                    if self.divergence or self.io_failed:
                        process.terminate()
                        return
                    continue
                if process.poll() is not None:
                    for line in (partial + log.read()).splitlines():
                        self._line(line)
                    return
                time.sleep(0.1)

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()

    def _line(self, line: str) -> None:
        self.tail.append(line.rstrip("\n"))
        if not self.fairseq_nan and any(marker in line for marker in DIVERGENCE_MARKERS):
            self.fairseq_nan = True  # its traceback follows
        if DONE_TRAINING in line:
            self.done_training = True
        diagnosed = parse_diagnostics(line)
        if diagnosed is not None:
            try:
                self._diagnostics(diagnosed)
            except OSError as error:
                self.io_failed = io_failure(error, self.run_dir)
            return
        parsed = parse_record(line)
        if parsed is None:
            return
        try:
            self._record(*parsed)
        except OSError as error:
            self.io_failed = io_failure(error, self.run_dir)

    def _record(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "train_inner":
            update = int(record.get("num_updates", 0))
            self.listener(Progress(int(record.get("epoch", 0)), update, record.get("loss"), record.get("lr"),
                                   record.get("wps")))  # fmt: skip
            if is_bad_loss(record.get("loss"), self.loss_ceiling):
                self.divergence = Divergence(Signal.TRAIN_LOSS, update, record.get("loss"))
        if kind == "valid" and is_bad_loss(record.get("valid_loss"), None):
            update = int(record.get("valid_num_updates", self.builder.last_update))
            epoch = None if self.grain is Grain.UPDATE else int(record.get("epoch", 0))
            self.divergence = Divergence(Signal.VALID_LOSS, update, record.get("valid_loss"), epoch)
        row = self.builder.add(kind, record)
        if row is not None:
            row["wall_seconds"] = round(self.wall_before + time.monotonic() - self.started, 1)
            step = self.grain.step(row)
            self.rows = [r for r in self.rows if self.grain.step(r) != step] + [row]
            write_metrics(self.run_dir, self.rows)
            if self.tensorboard is not None:
                self.tensorboard.row(row)
            self.listener(RowDone(row, self.grain))
        write_status(self.run_dir, RunStatus.RUNNING, update=self.builder.last_update)

    def _diagnostics(self, row: dict[str, Any]) -> None:
        self.diagnostics = [r for r in self.diagnostics or [] if r["num_updates"] != row["num_updates"]] + [row]
        append_diagnostics(self.run_dir, row)
        if self.tensorboard is not None:
            self.tensorboard.diagnostics(row)

    def outcome(self, returncode: int, crash_update: int | None) -> Outcome:
        """How the attempt ended, once the child has exited."""
        update = max(self.builder.last_update, crash_update or 0)
        if self.io_failed:
            return Outcome(RunStatus.FAILED, update, self.io_failed[0], detail=self.io_failed[1])
        if self.divergence:
            return Outcome(RunStatus.DIVERGED, update, divergence=self.divergence)
        if self.stopped or returncode in STOP_CODES:
            return Outcome(RunStatus.INTERRUPTED, update, Failure.STOPPED)
        if returncode == 0:
            return Outcome(RunStatus.FINISHED, update)
        if self.done_training:  # e.g. a C++ abort while the interpreter shuts down, after the last save
            return Outcome(RunStatus.FINISHED, update, Failure.FINISHED_THEN_CRASHED,
                           detail=f"code {returncode}: {self.last_error()}")  # fmt: skip
        if self.fairseq_nan:
            return Outcome(RunStatus.DIVERGED, update, divergence=Divergence(Signal.FAIRSEQ_NAN, update))
        disk = self.disk_full()
        if disk is not None:
            return Outcome(RunStatus.FAILED, update, Failure.DISK_FULL, detail=disk)
        return Outcome(RunStatus.FAILED, update, Failure.CRASH, detail=f"fairseq exited with code {returncode}: {self.last_error()}")

    def last_error(self) -> str:
        """The exception a worker raised (not torchrun's summary banner), which worker torchrun saw die and how, else
        the last line of output."""
        died = torchrun_failure(list(self.tail))
        if died is not None:
            return died
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


_TORCHRUN_FIELD = re.compile(r"^\s*(rank|exitcode|traceback)\s*:\s*(.*)$")


def torchrun_failure(lines: list[str]) -> str | None:
    """torchrun's "Root Cause (first observed failure)" block, as one sentence: which worker ended and how (a signal
    by its name, an exit code with the worker's own error line when it printed one); None if there is no such
    block (one worker, or torchrun's own output is not there)."""
    try:
        start = max(i for i, line in enumerate(lines) if "Root Cause (first observed failure)" in line)
    except ValueError:
        return None
    fields = {}
    for line in lines[start:]:
        found = _TORCHRUN_FIELD.match(line)
        if found and found.group(1) not in fields:
            fields[found.group(1)] = found.group(2).strip()
    rank = fields.get("rank", "?").split(" ")[0]
    code = fields.get("exitcode", "").split(" ")[0]
    if code.lstrip("-").isdigit() and int(code) < 0:
        number = -int(code)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"worker rank {rank} was killed by signal {number} ({name}); the other workers were stopped"
    errors = [line.strip() for line in lines[:start] if EXCEPTION.match(line.strip()) and "ChildFailedError" not in line]
    return f"worker rank {rank} exited with code {code or '?'}" + (f": {errors[-1]}" if errors else "")
