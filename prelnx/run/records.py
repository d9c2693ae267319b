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
            }
            if self.pending.get("epoch") == row["epoch"]:
                row.update({k: v for k, v in self.pending.items() if k not in ("epoch", "num_updates")})
            self.pending = {}
            self.last_update = row["num_updates"]
            return row
        return None
