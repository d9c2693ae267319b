"""Making a run dir agree with its checkpoints (what was trained), on every (re)start and at the end of every attempt:
one row per epoch (or validated update) the checkpoint holds, prelnx's (metrics.jsonl), else rebuilt from train.log
(the child's, so it survives prelnx's death), else listed as lost; later ones are dropped (fairseq trains them again).
diagnostics.jsonl likewise, from the same reading of train.log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from prelnx import child_report
from prelnx.atomic import write_text_atomic
from prelnx.records.checkpoints import CheckpointDamaged, CheckpointInfo, CheckpointRefused, load_checkpoint
from prelnx.records.diagnostics import FILE, Diagnostics, read_diagnostics, valid_diagnostics
from prelnx.records.grain import Grain
from prelnx.records.metrics import EpochRows, Row, UpdateRows, write_metrics

LOG_NAME = "train.log"


class ChildRecords:
    """The one reading of the child's events (prelnx/child_report.py) into a run's records, live (launch/watch.py's
    Watch is one) and rebuilt from train.log on a restart (`read_log`, `from_log`): the rows of its `stats` events (a
    later record of a step replaces an earlier one: train.log holds every attempt), its `diagnosed` rows (None: the
    run records none), whether it reported `done`, and what each worker `raised`."""

    def __init__(self, grain: Grain, rows: list[Row] | None = None, diagnostics: list[Diagnostics] | None = None,
                 from_log: bool = False) -> None:  # fmt: skip
        self.grain, self.rows, self.diagnostics, self.from_log = grain, rows or [], diagnostics, from_log
        builder = UpdateRows if grain is Grain.UPDATE else EpochRows
        self.builder = builder(last_update=self.rows[-1]["num_updates"] if self.rows else 0)
        self.done = False
        self.raised: list[child_report.Raised] = []

    def take(self, event: child_report.Event | None) -> Row | Diagnostics | None:
        """Record the event: the row or the diagnostics row it completes, else None."""
        self.done = self.done or isinstance(event, child_report.Done)
        self.raised += [event] if isinstance(event, child_report.Raised) else []
        if isinstance(event, child_report.Diagnosed) and (found := valid_diagnostics(event.row)) is not None:
            update = found["num_updates"]  # a row without its update is none
            self.diagnostics = [r for r in self.diagnostics or [] if r["num_updates"] != update] + [found]
            return found
        if not isinstance(event, child_report.Stats):
            return None
        row = self.builder.add(event.tag, event.stats, event.step)
        if row is None and self.from_log and event.tag == "valid" and isinstance(self.builder, EpochRows):
            # The valid record comes before the checkpoint is saved and the train summary after it:
            # a kill between the two leaves an epoch whose validation is known but not its train summary.
            row = self.builder.pending_row()
        if row is None:
            return None
        if self.from_log:
            row.update(wall_seconds=None, from_log=True)
        self.rows = [r for r in self.rows if self.grain.step(r) != self.grain.step(row)] + [row]
        return row


def read_log(log_path: Path, grain: Grain = Grain.EPOCH) -> tuple[list[Row], list[Diagnostics]]:
    """What the child reported in train.log (every attempt): its rows in training order, its diagnostics rows."""
    records = ChildRecords(grain, from_log=True)
    if log_path.is_file():
        with open(log_path, errors="replace") as log:
            for line in log:
                records.take(child_report.parse(line))
    return sorted(records.rows, key=grain.step), records.diagnostics or []


@dataclass
class Reconciled:
    """The rows kept, and which steps of the grain (epochs, or validated updates) were recovered, dropped or lost;
    the diagnostics rows kept."""

    rows: list[Row]
    grain: Grain = Grain.EPOCH
    lost: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    diagnostics: list[Diagnostics] = field(default_factory=list)

    def describe(self) -> list[str]:
        unit = "validations at updates" if self.grain is Grain.UPDATE else "epochs"
        sentences = ((self.recovered, "{} {} were missing from metrics.jsonl; rebuilt from train.log"),
                     (self.dropped, "{} {} are past the last checkpoint; they will be trained again"),
                     (self.lost, "the metrics of {} {} were lost (trained, but in no record)"))  # fmt: skip
        return [sentence.format(unit, ", ".join(str(s) for s in steps)) for steps, sentence in sentences if steps]


def reconcile_rows(saved: list[Row], logged: list[Row], grain: Grain, checkpoint_update: int,
                   completed_epochs: int = 0, every: int = 1) -> Reconciled:  # fmt: skip
    """One row per step of the grain the checkpoint holds, saved, else logged, else lost: each epoch
    1..completed_epochs, or at the update grain each validated update (a multiple of `every` in neither is lost; the
    last validation, when training stopped, need not be one). Rows past the checkpoint (a later epoch, or more updates
    than it holds) are dropped."""
    def within(row: Row) -> bool:
        epoch_held = grain is Grain.UPDATE or row["epoch"] <= completed_epochs
        return epoch_held and int(row.get("num_updates") or 0) <= checkpoint_update

    by_saved = {grain.step(row): row for row in saved if within(row)}
    by_logged = {grain.step(row): row for row in logged if within(row)}
    steps = sorted(set(by_saved) | set(by_logged))
    held = range(every, checkpoint_update + 1, every) if grain is Grain.UPDATE else range(1, completed_epochs + 1)
    return Reconciled([by_saved[s] if s in by_saved else by_logged[s] for s in steps], grain,
                      lost=[s for s in held if s not in by_saved and s not in by_logged],
                      recovered=[s for s in steps if s not in by_saved],
                      dropped=sorted(grain.step(row) for row in saved if not within(row)))  # fmt: skip


def reconcile_diagnostics(run_dir: Path, logged: list[Diagnostics], upto: int) -> list[Diagnostics]:
    """Rewrite diagnostics.jsonl as one row per measured update up to `upto` (the last checkpoint's, or the
    divergence's), saved, else `logged`, and return the rows; a run that never recorded one gets no file."""
    merged = {row["num_updates"]: row for row in [*logged, *read_diagnostics(run_dir)]}  # a saved row wins
    rows = [merged[u] for u in sorted(merged) if u <= upto]
    if merged or (run_dir / FILE).is_file():
        write_text_atomic(run_dir / FILE, "".join(json.dumps(row) + "\n" for row in rows))
    return rows


def reconcile_run(run_dir: Path, grain: Grain, every: int, saved: list[Row], checkpoint: CheckpointInfo | None,
                  diagnostics_upto: int | None = None) -> Reconciled:  # fmt: skip
    """Reconcile `saved` rows with train.log and the checkpoint, and write the result as metrics.jsonl; the
    diagnostics likewise, up to `diagnostics_upto` (default: the checkpoint's update)."""
    completed, update = (checkpoint.epoch, checkpoint.update) if checkpoint else (0, 0)
    logged, diagnostics = read_log(run_dir / LOG_NAME, grain)
    reconciled = reconcile_rows(saved, logged, grain, update, completed, every)
    write_metrics(run_dir, reconciled.rows)
    upto = update if diagnostics_upto is None else diagnostics_upto
    reconciled.diagnostics = reconcile_diagnostics(run_dir, diagnostics, upto)
    return reconciled


def crash_update(checkpoint_dir: Path, since: float) -> int | None:
    """The update count in fairseq's crash.pt (saved when a step raised), if written after `since`."""
    crash = checkpoint_dir / "crash.pt"
    if not crash.is_file() or crash.stat().st_mtime < since:
        return None
    try:
        return int(load_checkpoint(crash, mmap=True)["optimizer_history"][-1]["num_updates"])
    except (CheckpointDamaged, CheckpointRefused, KeyError, IndexError, TypeError, ValueError):
        return None
