"""Following a training: prelnx reads train.log as the child writes it, its events (prelnx/child_report.py) read as
the restart reads them (records/reconcile.py's ChildRecords). A `stats` event is also progress and a divergence
decision; how the child ended (done, or what it raised, by type) and its exit code a typed `Outcome`; every other
line is only kept, as the tail a crash is told by. The log is a file, not a pipe: fairseq's record of every update
survives if prelnx dies, and the restart rebuilds what prelnx missed from it."""

from __future__ import annotations

import codecs
import collections
import io
import locale
import os
import re
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from prelnx import child_report
from prelnx.atomic import io_reason
from prelnx.child_report import Kind, Raised, Stats
from prelnx.exits import Refusal
from prelnx.launch.events import Listener, Note, Progress, RowDone
from prelnx.plan.launch import RunPlan
from prelnx.records.checkpoints import CheckpointInfo, checkpoint_info, remove_partial_writes
from prelnx.records.diagnostics import append_diagnostics
from prelnx.records.grain import Grain, stride
from prelnx.records.metrics import Row, is_bad_loss, write_metrics
from prelnx.records.outcome import Divergence, Failure, Outcome, RunStatus, Signal, io_failure
from prelnx.records.reconcile import ChildRecords, reconcile_run
from prelnx.records.results import best_and_final
from prelnx.records.status import write_status
from prelnx.records.tensorboard import TensorBoardLog, rebuild

STOP_CODES = (-signal.SIGINT, -signal.SIGTERM, 130, 143)
_TORCHRUN_FIELD = re.compile(r"^\s*(rank|exitcode|traceback)\s*:\s*(.*)$")  # a field of torchrun's "Root Cause" block


class LogLines:
    """The lines a log gains as a process writes it, decoded as a text file reads them (a line not ended yet waits
    for the next call, or for `final`); a log that shrank (a requeued Slurm job's) is read again from its start."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path, self.offset, self.partial = path, offset, ""
        decoder = codecs.getincrementaldecoder(locale.getpreferredencoding(False))("replace")
        self.decoder = io.IncrementalNewlineDecoder(decoder, translate=True)

    def lines(self, final: bool = False) -> list[str]:
        try:
            if self.path.stat().st_size < self.offset:
                self.offset = 0
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return []
        self.offset += len(data)
        *complete, self.partial = (self.partial + self.decoder.decode(data, final)).split("\n")
        return complete + ([self.partial] if final and self.partial else [])


class Watch(ChildRecords):
    """Follows the child's log: its records, status heartbeats, divergence and I/O failures."""

    def __init__(self, run_dir: Path, grain: Grain, rows: list[Row], listener: Listener,
                 loss_ceiling: float | None, hparams: dict[str, Any],
                 diagnostics: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
        super().__init__(grain, rows, diagnostics)
        self.run_dir, self.listener = run_dir, listener
        self.loss_ceiling, self.hparams = loss_ceiling, hparams
        walls = [r["wall_seconds"] for r in self.rows if isinstance(r.get("wall_seconds"), (int, float))]
        self.wall_before = walls[-1] if walls else 0.0
        self.started = time.monotonic()
        self.tail: collections.deque[str] = collections.deque(maxlen=60)
        self.divergence: Divergence | None = None  # prelnx itself stops a diverging run
        self.stopped = False  # by the user
        self.io_failed: Outcome | None = None  # prelnx could not write the run dir's files

    def follow(self, process: subprocess.Popen, log_path: Path, offset: int) -> None:
        """Open TensorBoard (while fairseq starts up), read the log from `offset` until the child exits (or prelnx
        stops it: Ctrl-C, a divergence, an I/O failure), close TensorBoard."""
        log = LogLines(log_path, offset)
        tensorboard: TensorBoardLog | None = None  # the rows' and diagnostics' TensorBoard events, once it opens
        try:
            rebuild(self.run_dir, self.rows, self.hparams, grain=self.grain, diagnostics=self.diagnostics)
            tensorboard = TensorBoardLog(self.run_dir, self.grain)
            while not (self.divergence or self.io_failed):  # the lines after one are never read (an ended child's too)
                ended = process.poll() is not None
                for line in log.lines(final=ended):
                    self._line(line, tensorboard)
                    if self.divergence or self.io_failed:
                        break
                if ended:
                    break
                time.sleep(0.1)
        except OSError as error:  # opening TensorBoard (_line records the failures of what it writes)
            self.io_failed = io_failure(error, self.run_dir)
        except KeyboardInterrupt:
            self.stopped = True
        finally:
            process.terminate()  # prelnx stops it; nothing for a child that has exited
            if tensorboard is not None:
                tensorboard.close()

    def _line(self, line: str, tensorboard: TensorBoardLog) -> None:
        event = child_report.parse(line)
        if event is None:
            self.tail.append(line.rstrip("\n"))
        try:
            if isinstance(event, Stats):
                self._record(event, tensorboard)
            elif (row := self.take(event)) is not None:  # a diagnostics row
                append_diagnostics(self.run_dir, row)
                tensorboard.diagnostics(row)
        except OSError as error:
            self.io_failed = io_failure(error, self.run_dir)

    def _record(self, event: Stats, tensorboard: TensorBoardLog) -> None:
        record, update = event.stats, self.builder.last_update if event.step is None else event.step
        if event.tag == "train_inner":
            self.listener(Progress(int(record.get("epoch", 0)), update, record.get("loss"), record.get("lr"),
                                   record.get("wps")))  # fmt: skip
            if is_bad_loss(record.get("loss"), self.loss_ceiling):
                self.divergence = Divergence(Signal.TRAIN_LOSS, update, record.get("loss"))
        if event.tag == "valid" and is_bad_loss(record.get("valid_loss"), None):
            epoch = None if self.grain is Grain.UPDATE else int(record.get("epoch", 0))
            self.divergence = Divergence(Signal.VALID_LOSS, update, record.get("valid_loss"), epoch)
        if (row := self.take(event)) is not None:
            row["wall_seconds"] = round(self.wall_before + time.monotonic() - self.started, 1)
            write_metrics(self.run_dir, self.rows)
            tensorboard.row(row)
            self.listener(RowDone(row, self.grain))
        write_status(self.run_dir, RunStatus.RUNNING, update=self.builder.last_update)

    def outcome(self, returncode: int, crash_update: int | None) -> Outcome:
        """How the attempt ended, once the child has exited."""
        update = max(self.builder.last_update, crash_update or 0)
        if self.io_failed:
            return replace(self.io_failed, update=update)
        if self.divergence:
            return Outcome(RunStatus.DIVERGED, update, divergence=self.divergence)
        if self.stopped or returncode in STOP_CODES:
            return Outcome(RunStatus.INTERRUPTED, update, Failure.STOPPED)
        if returncode == 0:
            return Outcome(RunStatus.FINISHED, update)
        if self.done:  # e.g. a C++ abort while the interpreter shuts down, after the last save
            return Outcome(RunStatus.FINISHED, update, Failure.FINISHED_THEN_CRASHED,
                           detail=f"code {returncode}: {self.last_error()}")  # fmt: skip
        raised = self.telling()
        if raised is not None and raised.kind is Kind.DIVERGED:
            return Outcome(RunStatus.DIVERGED, update, divergence=Divergence(Signal.FAIRSEQ_NAN, update))
        if raised is not None and raised.kind is Kind.DISK_FULL and raised.errno is not None:
            error = OSError(raised.errno, os.strerror(raised.errno), raised.path)
            return io_failure(error, self.run_dir / "checkpoints", update)
        if raised is not None and raised.kind is Kind.OUT_OF_MEMORY:
            return Outcome(RunStatus.FAILED, update, Failure.OUT_OF_MEMORY, detail=raised.describe())
        how = (f"was killed by signal {-returncode} ({signal_name(-returncode)})" if returncode < 0
               else f"exited with code {returncode}: {self.last_error()}")
        return Outcome(RunStatus.FAILED, update, Failure.CRASH, detail=f"fairseq {how}")

    def telling(self) -> Raised | None:
        """Of what the workers raised, the first of the kind that says most (one worker's divergence makes the
        others' connections fail)."""
        order = list(Kind)  # DIVERGED, DISK_FULL, OUT_OF_MEMORY, FAILED
        return min(self.raised, key=lambda event: order.index(event.kind), default=None)

    def last_error(self) -> str:
        """What a worker raised, which worker torchrun saw die and how, else the last line of output."""
        shown = [line.strip() for line in self.tail if line.strip() and set(line.strip()) != {"="}]
        raised = self.telling()
        return torchrun_failure(list(self.tail), raised) or (raised.describe() if raised else (shown or [""])[-1])

    def finish(self, plan: RunPlan, outcome: Outcome) -> Outcome:
        """Once the child has gone: reconcile with the last checkpoint and write the final status (on a full disk
        `failed` if it fits); returns the outcome as recorded."""
        remove_partial_writes(plan.checkpoints)  # the child is gone: a *.pt.tmp is a save it never finished
        last = plan.checkpoints / "checkpoint_last.pt"
        unreadable = ""
        try:
            info = checkpoint_info(last) if last.is_file() else None
        except (Refusal, OSError) as error:  # damaged, refused or unreadable: the next start deals with it
            info, unreadable = None, str(error)
            self.listener(Note(str(error), warning=True))
        extra: dict[str, Any] = {}
        rows, diagnostics = self.rows, self.diagnostics
        try:
            if unreadable and outcome.status is RunStatus.FINISHED:  # nothing to reconcile against: not finished
                outcome = Outcome(RunStatus.INTERRUPTED, outcome.update, Failure.UNREADABLE_CHECKPOINT,
                                  detail=unreadable)  # fmt: skip
            elif not unreadable:  # (an unreadable checkpoint: the rows seen are kept)
                # a diverged run is never resumed: its diagnostics up to the divergence stay (records/diagnostics.py),
                # this attempt's rows too, which may run a little past its last progress line
                upto = info.update if info else 0
                if outcome.status is RunStatus.DIVERGED:
                    upto = max([upto, outcome.update] + [row["num_updates"] for row in self.diagnostics or []])
                reconciled = reconcile_run(self.run_dir, self.grain, stride(plan.config), self.rows, info, upto)
                rows, kept = reconciled.rows, reconciled.diagnostics
                if reconciled.lost:
                    extra["lost_validations" if self.grain is Grain.UPDATE else "lost_epochs"] = reconciled.lost
                diagnostics = kept if diagnostics is not None or kept else None
            rebuild(self.run_dir, rows, self.hparams, best_and_final(rows), self.grain, diagnostics)
        except OSError as error:
            rows = self.rows
            # a full disk that fairseq reported keeps fairseq's own path
            if not (outcome.status is RunStatus.FAILED and outcome.failure is Failure.DISK_FULL):
                outcome = io_failure(error, self.run_dir, outcome.update)
        if info is not None:
            extra["checkpoint"] = {"epoch": info.epoch, "update": info.update}
            update = info.update if outcome.status is RunStatus.FINISHED else max(outcome.update, info.update)
            outcome = replace(outcome, update=update)
        try:
            write_status(self.run_dir, outcome.status, update=outcome.update, **outcome.record(),
                         **status_counts(self.grain, rows, info), **best_and_final(rows), **extra)  # fmt: skip
        except OSError as error:
            self.listener(Note(f"status.json could not be written ({io_reason(error, self.run_dir)})", warning=True))
        return outcome


def status_counts(run_grain: Grain, rows: list[Row], checkpoint: CheckpointInfo | None) -> dict[str, int]:
    """status.json's `epochs` (rows, at the epoch grain) and, at the update grain, `validations` (rows)."""
    if run_grain is Grain.UPDATE:
        return {"epochs": checkpoint.epoch if checkpoint else 0, "validations": len(rows)}
    return {"epochs": len(rows)}


def signal_name(number: int) -> str:
    return next((s.name for s in signal.Signals if s.value == number), f"signal {number}")


def torchrun_failure(lines: list[str], raised: Raised | None = None) -> str | None:
    """torchrun's "Root Cause (first observed failure)" block as one sentence: which worker ended and how (a signal by
    its name, an exit code with what a worker reported it raised); None without such a block (one worker, no
    torchrun)."""
    start = max((i for i, line in enumerate(lines) if "Root Cause (first observed failure)" in line), default=None)
    if start is None:
        return None
    fields: dict[str, str] = {}
    for found in filter(None, map(_TORCHRUN_FIELD.match, lines[start:])):
        fields.setdefault(found.group(1), found.group(2).strip())
    rank = fields.get("rank", "?").split(" ")[0]
    code = fields.get("exitcode", "").split(" ")[0]
    if code.lstrip("-").isdigit() and int(code) < 0:
        number = -int(code)
        name = signal_name(number)
        return f"worker rank {rank} was killed by signal {number} ({name}); the other workers were stopped"
    return f"worker rank {rank} exited with code {code or '?'}" + (f": {raised.describe()}" if raised else "")
