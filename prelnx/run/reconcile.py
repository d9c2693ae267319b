"""Making a run dir agree with its checkpoints, on every (re)start and at the end of every attempt.

The checkpoints are what was trained; `train.log` is fairseq's own record of every update (the child writes
it directly, so it survives prelnx's death); `metrics.jsonl` is what prelnx saw. Reconciling keeps one row per
epoch the checkpoints completed: prelnx's row where it has one, else the row rebuilt from fairseq's log, else
the epoch is listed as lost. Epochs past the checkpoint are dropped: fairseq trains them again on resume.
At the update grain (eval.every_updates, prelnx.run.grain) the same holds for the validations: one row per
validated update up to the checkpoint's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.run.checkpoints import CheckpointDamaged, CheckpointRefused, load_checkpoint
from prelnx.run.records import EpochRows, parse_record, row_builder

LOG_NAME = "train.log"


def rows_from_log(log_path: Path, update_grain: bool = False) -> list[dict[str, Any]]:
    """Rows from fairseq's JSON records in train.log (every attempt; a redone epoch's later row wins)."""
    if not log_path.is_file():
        return []
    if update_grain:
        return _update_rows_from_log(log_path)
    epochs = EpochRows()
    rows: dict[int, dict[str, Any]] = {}
    with open(log_path, errors="replace") as log:
        for line in log:
            parsed = parse_record(line)
            if parsed is None:
                continue
            kind, record = parsed
            row = epochs.add(kind, record)
            if row is not None:
                rows[row["epoch"]] = {**row, "wall_seconds": None, "from_log": True}
            elif kind == "valid" and epochs.pending:
                # The valid record comes before the checkpoint is saved and the train summary after it:
                # a kill between the two leaves an epoch whose validation is known but not its train summary.
                rows[epochs.pending["epoch"]] = {**epochs.pending, "lr": epochs.last_lr, "train_loss": None,
                                                 "train_nll_loss": None, "wall_seconds": None, "from_log": True}  # fmt: skip
    return [rows[epoch] for epoch in sorted(rows)]


def _update_rows_from_log(log_path: Path) -> list[dict[str, Any]]:
    builder = row_builder(True)
    rows: dict[int, dict[str, Any]] = {}
    with open(log_path, errors="replace") as log:
        for line in log:
            parsed = parse_record(line)
            if parsed is not None:
                row = builder.add(*parsed)
                if row is not None:
                    rows[row["num_updates"]] = {**row, "wall_seconds": None, "from_log": True}
    return [rows[update] for update in sorted(rows)]


@dataclass
class Reconciled:
    """The rows kept, and which epochs (or validated updates, at the update grain) were recovered, dropped or lost."""

    rows: list[dict[str, Any]]
    lost_epochs: list[int] = field(default_factory=list)
    recovered_epochs: list[int] = field(default_factory=list)
    dropped_epochs: list[int] = field(default_factory=list)
    unit: str = "epochs"

    def describe(self) -> list[str]:
        said, unit = [], self.unit
        if self.recovered_epochs:
            said.append(f"{unit} {_span(self.recovered_epochs)} were missing from metrics.jsonl; rebuilt from train.log")
        if self.dropped_epochs:
            said.append(f"{unit} {_span(self.dropped_epochs)} are past the last checkpoint; they will be trained again")
        if self.lost_epochs:
            said.append(f"the metrics of {unit} {_span(self.lost_epochs)} were lost (trained, but in no record)")
        return said


def _span(epochs: list[int]) -> str:
    return ", ".join(str(e) for e in epochs)


def reconcile_rows(saved: list[dict[str, Any]], logged: list[dict[str, Any]], completed_epochs: int,
                   checkpoint_update: int | None = None) -> Reconciled:  # fmt: skip
    """One row for each epoch 1..completed_epochs: saved, else logged, else lost.

    Rows past the checkpoint (a later epoch, or more updates than it holds) are dropped.
    """
    def within(row: dict[str, Any]) -> bool:
        return checkpoint_update is None or int(row.get("num_updates") or 0) <= checkpoint_update

    by_saved = {row["epoch"]: row for row in saved if within(row)}
    by_logged = {row["epoch"]: row for row in logged if within(row)}
    result = Reconciled(rows=[])
    for epoch in range(1, completed_epochs + 1):
        if epoch in by_saved:
            result.rows.append(by_saved[epoch])
        elif epoch in by_logged:
            result.rows.append(by_logged[epoch])
            result.recovered_epochs.append(epoch)
        else:
            result.lost_epochs.append(epoch)
    result.dropped_epochs = sorted(row["epoch"] for row in saved if row["epoch"] > completed_epochs or not within(row))
    return result


def reconcile_update_rows(saved: list[dict[str, Any]], logged: list[dict[str, Any]], checkpoint_update: int,
                          every: int) -> Reconciled:  # fmt: skip
    """One row per validated update up to the checkpoint's: saved, else logged; a multiple of `every` up to the
    checkpoint in neither is lost (the last validation, when training stopped, is not a multiple)."""
    by_saved = {row["num_updates"]: row for row in saved if row["num_updates"] <= checkpoint_update}
    by_logged = {row["num_updates"]: row for row in logged if row["num_updates"] <= checkpoint_update}
    result = Reconciled(rows=[], unit="validations at updates")
    for update in sorted(set(by_saved) | set(by_logged)):
        result.rows.append(by_saved.get(update) or by_logged[update])
        if update not in by_saved:
            result.recovered_epochs.append(update)
    result.lost_epochs = [u for u in range(every, checkpoint_update + 1, every) if u not in by_saved and u not in by_logged]
    result.dropped_epochs = sorted(row["num_updates"] for row in saved if row["num_updates"] > checkpoint_update)
    return result


def crash_update(checkpoint_dir: Path, since: float) -> int | None:
    """The update count in fairseq's crash.pt (saved when a step raised), if written after `since`."""
    crash = checkpoint_dir / "crash.pt"
    if not crash.is_file() or crash.stat().st_mtime < since:
        return None
    try:
        return int(load_checkpoint(crash, mmap=True)["optimizer_history"][-1]["num_updates"])
    except (CheckpointDamaged, CheckpointRefused, KeyError, IndexError, TypeError, ValueError):
        return None
