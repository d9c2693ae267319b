"""Reading fairseq's `--log-format json` lines and turning them into one metrics row per epoch.

fairseq prints, per epoch: `train_inner` records every --log-interval updates, then the `valid` record,
then the epoch's `train` summary. A row is complete when the `train` summary arrives.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

_RECORD = re.compile(r"\|\s*(train_inner|train|valid)\s*\|\s*(\{.*\})\s*$")


def parse_record(line: str) -> tuple[str, dict[str, Any]] | None:
    """`... | valid | {"epoch": 1, ...}` -> ("valid", {...}) with numbers as floats; other lines -> None."""
    match = _RECORD.search(line)
    if match is None:
        return None
    try:
        raw = json.loads(match.group(2))
    except json.JSONDecodeError:
        return None
    return match.group(1), {key: _number(value) for key, value in raw.items()}


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def is_bad_loss(value: Any, ceiling: float | None) -> bool:
    if not isinstance(value, (int, float)):
        return False
    return not math.isfinite(value) or (ceiling is not None and value > ceiling)


@dataclass
class EpochRows:
    """Accumulates records into per-epoch rows (`metrics.jsonl` rows)."""

    pending: dict[str, Any] = field(default_factory=dict)
    last_update: int = 0
    last_lr: float | None = None

    def add(self, kind: str, record: dict[str, Any]) -> dict[str, Any] | None:
        """Feed one record; returns a finished row when an epoch ends."""
        if kind == "train_inner":
            self.last_update = int(record.get("num_updates", self.last_update))
            self.last_lr = record.get("lr", self.last_lr)
            return None
        if kind == "valid":
            self.pending = {
                "epoch": int(record["epoch"]),
                "num_updates": int(record.get("valid_num_updates", self.last_update)),
                "valid_loss": record.get("valid_loss"),
                "valid_nll_loss": record.get("valid_nll_loss"),
                "valid_ppl": record.get("valid_ppl"),
                "valid_bleu": record.get("valid_bleu"),
                "valid_accuracy": record.get("valid_accuracy"),  # sentence_prediction (fine-tuning), in %
            }
            self.last_update = self.pending["num_updates"]
            return None
        if kind == "train":
            row = {
                "epoch": int(record["epoch"]),
                "num_updates": int(record.get("train_num_updates", self.last_update)),
                "lr": record.get("train_lr", self.last_lr),
                "train_loss": record.get("train_loss"),
                "train_nll_loss": record.get("train_nll_loss"),
                "valid_loss": None,
                "valid_nll_loss": None,
                "valid_ppl": None,
                "valid_bleu": None,
                "valid_accuracy": None,
            }
            if self.pending.get("epoch") == row["epoch"]:
                row.update({k: v for k, v in self.pending.items() if k not in ("epoch", "num_updates")})
            self.pending = {}
            self.last_update = row["num_updates"]
            return row
        return None


@dataclass
class UpdateRows:
    """Accumulates records into one row per validation (eval.every_updates: `metrics.jsonl` at the update grain).

    fairseq validates every N updates and when training stops; each `valid` record ends a row carrying its epoch
    and update, the lr of the last progress record and the mean train loss of the progress records since the
    previous row. The epoch summaries (`train`) are not rows at this grain.
    """

    last_update: int = 0
    last_lr: float | None = None
    losses: list[float] = field(default_factory=list)

    def add(self, kind: str, record: dict[str, Any]) -> dict[str, Any] | None:
        if kind == "train_inner":
            update = int(record.get("num_updates", self.last_update))
            if update < self.last_update:
                self.losses = []  # a later attempt redoing updates (train.log holds every attempt): not averaged in
            self.last_update = update
            self.last_lr = record.get("lr", self.last_lr)
            if isinstance(record.get("loss"), float):
                self.losses.append(record["loss"])
            return None
        if kind != "valid":
            return None
        self.last_update = int(record.get("valid_num_updates", self.last_update))
        row = {
            "epoch": int(record["epoch"]),
            "num_updates": self.last_update,
            "lr": self.last_lr,
            "train_loss": round(sum(self.losses) / len(self.losses), 3) if self.losses else None,
            "train_nll_loss": None,
            "valid_loss": record.get("valid_loss"),
            "valid_nll_loss": record.get("valid_nll_loss"),
            "valid_ppl": record.get("valid_ppl"),
            "valid_bleu": record.get("valid_bleu"),
            "valid_accuracy": record.get("valid_accuracy"),
        }
        self.losses = []
        return row


def row_builder(by_update: bool, last_update: int = 0) -> EpochRows | UpdateRows:
    """The accumulator of a run's grain (prelnx.run.grain)."""
    return UpdateRows(last_update=last_update) if by_update else EpochRows(last_update=last_update)
