"""`metrics.jsonl`: one `Row` per epoch, or per validation at the update grain, and turning the records fairseq's
progress bar logged (the child's `stats` events, prelnx/child_report.py: a tag, its values, the update) into rows.
fairseq logs, per epoch, `train_inner` records every --log-interval updates, the `valid` record, then the epoch's
`train` summary: at the epoch grain a row is complete with the `train` summary; at the update grain each `valid`
record ends a row. Other tags are skipped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from prelnx.atomic import write_text_atomic


class Row(TypedDict, total=False):
    """One line of metrics.jsonl: a validation, with the training since the previous one. A value prelnx does not
    know is None (absent), never a stale one."""

    epoch: int
    num_updates: int
    lr: float | None  # the learning rate at num_updates
    train_loss: float | None
    train_nll_loss: float | None
    valid_loss: float | None
    valid_nll_loss: float | None
    valid_ppl: float | None
    valid_bleu: float | None
    valid_accuracy: float | None  # sentence_prediction (fine-tuning), in %
    wall_seconds: float | None
    from_log: bool  # rebuilt from train.log by the reconciliation


VALID_FIELDS = ("valid_loss", "valid_nll_loss", "valid_ppl", "valid_bleu", "valid_accuracy")
TRAIN_FIELDS = ("lr", "train_loss", "train_nll_loss")


def make_row(epoch: int, num_updates: int, **values: Any) -> Row:
    """A row with every field of the type, None where `values` does not say."""
    row = {"epoch": int(epoch), "num_updates": int(num_updates), **dict.fromkeys(TRAIN_FIELDS + VALID_FIELDS)}
    return {**row, **values}  # type: ignore[typeddict-item]


def is_bad_loss(value: Any, ceiling: float | None) -> bool:
    return isinstance(value, (int, float)) and (not math.isfinite(value) or (ceiling is not None and value > ceiling))


@dataclass
class EpochRows:
    """Accumulates records into per-epoch rows."""

    pending: dict[str, Any] = field(default_factory=dict)
    last_update: int = 0
    last_lr: float | None = None

    def add(self, tag: str, record: dict[str, Any], step: int | None) -> Row | None:
        """Feed one record (fairseq's tag, values and update); returns a finished row when an epoch ends."""
        update = self.last_update if step is None else step
        if tag == "train_inner":
            self.last_update = update
            self.last_lr = record.get("lr", self.last_lr)
            return None
        if tag == "valid":
            self.pending = {"epoch": int(record["epoch"]), "num_updates": update,
                            **{key: record.get(key) for key in VALID_FIELDS}}  # fmt: skip
            self.last_update = update
            return None
        if tag == "train":
            epoch = int(record["epoch"])
            valid = self.pending if self.pending.get("epoch") == epoch else {}
            row = make_row(epoch, update, lr=record.get("train_lr", self.last_lr), train_loss=record.get("train_loss"),
                           train_nll_loss=record.get("train_nll_loss"),
                           **{key: valid.get(key) for key in VALID_FIELDS})  # fmt: skip
            self.pending, self.last_update = {}, update
            return row
        return None

    def pending_row(self) -> Row | None:
        """The epoch whose validation is known but not its train summary (a kill between the two), as a row."""
        return make_row(lr=self.last_lr, **self.pending) if self.pending else None


@dataclass
class UpdateRows:
    """Accumulates records into one row per `valid` record (the update grain): its epoch and update, the mean train
    loss of the progress records since the previous row, and the lr logged at the row's own update (else none)."""

    last_update: int = 0
    lr_at: tuple[int, float] | None = None  # (update, lr) of the last progress record
    losses: list[float] = field(default_factory=list)

    def add(self, tag: str, record: dict[str, Any], step: int | None) -> Row | None:
        """Feed one record (fairseq's tag, values and update); returns a row at each validation."""
        update = self.last_update if step is None else step
        if tag == "train_inner":
            if update < self.last_update:
                self.losses = []  # a later attempt redoing updates (train.log holds every attempt): not averaged in
            self.last_update = update
            if isinstance(record.get("lr"), float):
                self.lr_at = (update, record["lr"])
            if isinstance(record.get("loss"), float):
                self.losses.append(record["loss"])
            return None
        if tag != "valid":
            return None
        self.last_update = update
        lr = self.lr_at[1] if self.lr_at is not None and self.lr_at[0] == self.last_update else None
        row = make_row(int(record["epoch"]), self.last_update, lr=lr,
                       train_loss=round(sum(self.losses) / len(self.losses), 3) if self.losses else None,
                       **{key: record.get(key) for key in VALID_FIELDS})  # fmt: skip
        self.losses = []
        return row


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def write_metrics(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite the whole file atomically, in training order; a row repeated (same epoch and update) is kept once,
    the later one. The callers keep one row per epoch (or per validated update)."""
    by_step = {(row["epoch"], row["num_updates"]): row for row in rows}
    text = "".join(json.dumps(by_step[step]) + "\n" for step in sorted(by_step, key=lambda s: (s[1], s[0])))
    write_text_atomic(run_dir / "metrics.jsonl", text)
