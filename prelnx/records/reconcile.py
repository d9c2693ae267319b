"""Making a run dir agree with its checkpoints (what was trained), on every (re)start and at the end of every attempt:
one row per epoch (or validated update) the checkpoint holds, prelnx's (metrics.jsonl), else rebuilt from train.log
(the child's, so it survives prelnx's death), else listed as lost; later ones are dropped (fairseq trains them again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prelnx import child_report
from prelnx.records.checkpoints import CheckpointDamaged, CheckpointInfo, CheckpointRefused, load_checkpoint
from prelnx.records.grain import Grain
from prelnx.records.metrics import write_metrics
from prelnx.records.rows import EpochRows, Row, row_builder

LOG_NAME = "train.log"


def rows_from_log(log_path: Path, grain: Grain = Grain.EPOCH) -> list[Row]:
    """Rows from the records the child reported in train.log (its `stats` events; every attempt; a redone step's
    later row wins)."""
    if not log_path.is_file():
        return []
    builder = row_builder(grain)
    rows: dict[int, Row] = {}
    with open(log_path, errors="replace") as log:
        for line in log:
            event = child_report.parse(line)
            if not isinstance(event, child_report.Stats):
                continue
            row = builder.add(event.tag, event.stats, event.step)
            if row is None and event.tag == "valid" and isinstance(builder, EpochRows):
                # The valid record comes before the checkpoint is saved and the train summary after it:
                # a kill between the two leaves an epoch whose validation is known but not its train summary.
                row = builder.pending_row()
            if row is not None:
                rows[grain.step(row)] = {**row, "wall_seconds": None, "from_log": True}
    return [rows[step] for step in sorted(rows)]


@dataclass
class Reconciled:
    """The rows kept, and which steps of the grain (epochs, or validated updates) were recovered, dropped or lost."""

    rows: list[Row]
    grain: Grain = Grain.EPOCH
    lost: list[int] = field(default_factory=list)
    recovered: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)

    def describe(self) -> list[str]:
        said, unit = [], "validations at updates" if self.grain is Grain.UPDATE else "epochs"
        if self.recovered:
            said.append(f"{unit} {_span(self.recovered)} were missing from metrics.jsonl; rebuilt from train.log")
        if self.dropped:
            said.append(f"{unit} {_span(self.dropped)} are past the last checkpoint; they will be trained again")
        if self.lost:
            said.append(f"the metrics of {unit} {_span(self.lost)} were lost (trained, but in no record)")
        return said


def _span(steps: list[int]) -> str:
    return ", ".join(str(s) for s in steps)


def reconcile_rows(saved: list[Row], logged: list[Row], completed_epochs: int,
                   checkpoint_update: int | None = None) -> Reconciled:  # fmt: skip
    """One row for each epoch 1..completed_epochs: saved, else logged, else lost; rows past the checkpoint (a later
    epoch, or more updates than it holds) are dropped."""
    def within(row: Row) -> bool:
        return checkpoint_update is None or int(row.get("num_updates") or 0) <= checkpoint_update

    by_saved = {row["epoch"]: row for row in saved if within(row)}
    by_logged = {row["epoch"]: row for row in logged if within(row)}
    result = Reconciled(rows=[])
    for epoch in range(1, completed_epochs + 1):
        if epoch in by_saved:
            result.rows.append(by_saved[epoch])
        elif epoch in by_logged:
            result.rows.append(by_logged[epoch])
            result.recovered.append(epoch)
        else:
            result.lost.append(epoch)
    result.dropped = sorted(row["epoch"] for row in saved if row["epoch"] > completed_epochs or not within(row))
    return result


def reconcile_update_rows(saved: list[Row], logged: list[Row], checkpoint_update: int, every: int) -> Reconciled:
    """One row per validated update up to the checkpoint's: saved, else logged; a multiple of `every` up to the
    checkpoint in neither is lost (the last validation, when training stopped, is not a multiple)."""
    by_saved = {row["num_updates"]: row for row in saved if row["num_updates"] <= checkpoint_update}
    by_logged = {row["num_updates"]: row for row in logged if row["num_updates"] <= checkpoint_update}
    result = Reconciled(rows=[], grain=Grain.UPDATE)
    for update in sorted(set(by_saved) | set(by_logged)):
        result.rows.append(by_saved.get(update) or by_logged[update])
        if update not in by_saved:
            result.recovered.append(update)
    result.lost = [u for u in range(every, checkpoint_update + 1, every) if u not in by_saved and u not in by_logged]
    result.dropped = sorted(row["num_updates"] for row in saved if row["num_updates"] > checkpoint_update)
    return result


def reconcile_run(run_dir: Path, grain: Grain, every: int, saved: list[Row],
                  checkpoint: CheckpointInfo | None) -> Reconciled:  # fmt: skip
    """Reconcile `saved` rows with train.log and the checkpoint, and write the result as metrics.jsonl."""
    completed, update = (checkpoint.epoch, checkpoint.update) if checkpoint else (0, 0)
    logged = rows_from_log(run_dir / LOG_NAME, grain)
    if grain is Grain.UPDATE:
        reconciled = reconcile_update_rows(saved, logged, update, every)
    else:
        reconciled = reconcile_rows(saved, logged, completed, update)
    write_metrics(run_dir, reconciled.rows)
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
