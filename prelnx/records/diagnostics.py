"""A run's `diagnostics.jsonl`: one JSON object per measured update (train.diagnostics), stored as it is from the
child's `diagnosed` events (prelnx/child_report.py; prelnx_fairseq_plugin/diagnostics.py owns the row's keys); rebuilt
like metrics.jsonl, from the events in train.log, up to the last checkpoint's update (records/reconcile.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.records.results import is_finite

FILE = "diagnostics.jsonl"
# The quantities the plugin measures per group (each a mapping group -> value), with their chart titles.
PER_GROUP = {"grad_norm": "gradient norm per sublayer", "update_ratio": "update / weight per sublayer",
             "attn_logit_max": "largest attention logit per attention module",
             "hidden_rms": "layer output RMS (residual stream) per layer"}  # fmt: skip
SCALARS = {"lambda_c": "critical sharpness lambda_c = 2 / eta_c", "lr_lambda_c": "lr x lambda_c (2: the step's edge)"}
SECTION = "Why warm-up: diagnostics (step = update)"
LAYOUT = {SECTION: {title: ["Multiline", [rf"^diagnostics/{key}/"]] for key, title in PER_GROUP.items()}
          | {title: ["Multiline", [rf"^diagnostics/{key}$"]] for key, title in SCALARS.items()}}  # fmt: skip

Diagnostics = dict[str, Any]


def valid_diagnostics(row: Any) -> Diagnostics | None:
    return row if isinstance(row, dict) and isinstance(row.get("num_updates"), int) else None


def _row(text: str) -> Diagnostics | None:
    try:
        return valid_diagnostics(json.loads(text))
    except json.JSONDecodeError:
        return None


def read_diagnostics(run_dir: Path) -> list[Diagnostics]:
    """The rows of diagnostics.jsonl ([] when there is none); a line a kill cut short is skipped."""
    path = run_dir / FILE
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    return [row for line in lines if (row := _row(line)) is not None]


def append_diagnostics(run_dir: Path, row: Diagnostics) -> None:
    with open(run_dir / FILE, "a") as out:
        out.write(json.dumps(row) + "\n")


def scalars(row: Diagnostics) -> list[tuple[str, float]]:
    """A row's TensorBoard scalars: (tag, value), finite values only; the step is row["num_updates"]."""
    out = []
    for key in PER_GROUP:
        for group, value in (row.get(key) or {}).items():
            if is_finite(value):
                out.append((f"diagnostics/{key}/{group}", float(value)))
    sharpness, lr = row.get("lambda_c"), row.get("lr")
    if is_finite(sharpness):
        out.append(("diagnostics/lambda_c", float(sharpness)))
        if is_finite(lr):
            out.append(("diagnostics/lr_lambda_c", float(lr) * float(sharpness)))
    return out
