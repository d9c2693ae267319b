"""What a training tells whoever watches it, as values: the console, a sweep's progress and the tests all receive
the same events; `render` is the one wording of them (rewording changes nothing any code decides)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config
from prelnx.layouts import display_name
from prelnx.records.grain import Grain
from prelnx.records.outcome import Outcome
from prelnx.records.metrics import Row


@dataclass(frozen=True)
class Started:
    """fairseq is about to start (or resume)."""

    config: Config
    data: Path
    run_dir: Path
    log: Path
    resumed_from: tuple[int, int] | None = None  # (epoch, update) of the checkpoint resumed from


@dataclass(frozen=True)
class Note:
    """Something the user should know (a reconciliation, a damaged checkpoint set aside, a run already done); a
    warning goes to stderr (prelnx/console.py says `warning:`)."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class Progress:
    """fairseq's progress record (every train.log_interval updates)."""

    epoch: int
    update: int
    loss: float | None
    lr: float | None
    words_per_second: float | None


@dataclass(frozen=True)
class RowDone:
    """A validation row was recorded (metrics.jsonl, TensorBoard)."""

    row: Row
    grain: Grain


@dataclass(frozen=True)
class Ended:
    run_dir: Path
    outcome: Outcome


Event = Started | Note | Progress | RowDone | Ended
Listener = Callable[[Event], None]


def _number(value: Any, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else str(value)  # nan and inf as str() says them


def render(event: Event) -> str:
    """The console line of an event."""
    if isinstance(event, Note):
        return event.text
    if isinstance(event, Progress):
        return (f"epoch {event.epoch} | update {event.update} | loss {_number(event.loss, '.3f')} | "
                f"lr {_number(event.lr, '.3g')} | {_number(event.words_per_second, '.0f')} tok/s")  # fmt: skip
    if isinstance(event, RowDone):  # `epoch 3 done | updates 150 | ...`, or `update 300 done | epoch 2 | ...`
        row = event.row
        parts = [f"update {row['num_updates']} done | epoch {row['epoch']}" if event.grain is Grain.UPDATE
                 else f"epoch {row['epoch']} done | updates {row['num_updates']}"]  # fmt: skip
        for label, key, digits in (("train loss", "train_loss", 3), ("valid loss", "valid_loss", 3),
                                   ("valid accuracy", "valid_accuracy", 1),
                                   ("valid BLEU", "valid_bleu", 2)):  # fmt: skip
            if (value := row.get(key)) is not None:  # a value the row does not have is left out
                shown = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
                parts.append(f"{label} {shown}" + (" %" if key == "valid_accuracy" else ""))
        wall = row.get("wall_seconds")
        parts.append(f"{wall:.0f} s" if isinstance(wall, (int, float)) else "wall time not recorded")
        return " | ".join(parts)
    if isinstance(event, Started):
        c, s, m = event.config, event.config.schedule, event.config.model  # the model: e.g. "Pre-LN rmsnorm +qk-norm"
        model = (display_name(m.layout) + ("" if m.norm == "layernorm" else f" {m.norm}")
                 + (" +qk-norm" if m.qk_norm else ""))  # fmt: skip
        return (f"{'resuming' if event.resumed_from else 'starting'} {c.name}: {model}, {c.optimizer.name} "
                f"lr {c.optimizer.lr:g}, warm-up {s.warmup_updates} updates, decay {s.decay}, data {event.data} -> "
                f"{event.run_dir} (fairseq log: {event.log})"
                + (f"; from epoch {event.resumed_from[0]}, update {event.resumed_from[1]}" if event.resumed_from else ""))  # fmt: skip
    reason = event.outcome.reason()
    return f"{event.run_dir}: {event.outcome.status}" + (f" ({reason})" if reason else "")

