"""A run's `diagnostics.jsonl`: one JSON object per measured update (train.diagnostics), in update order.

The fairseq child computes each row and logs it as a `prelnx_diagnostics` record in train.log (the plugin's
prelnx_fairseq_plugin/diagnostics.py owns the row's keys and their meaning); prelnx copies the record as it is. The
file follows the checkpoints as metrics.jsonl does: on every (re)start and at the end of every attempt it is
rebuilt from what was saved and from train.log (every attempt; a redone update's later record wins) and keeps only
the updates the last checkpoint holds, so a run killed and resumed has each row once. A diverged run keeps its rows
up to the divergence (it is never resumed, and they are what the warm-up study reads). While the run trains, rows
are appended as they come (a row cut by a kill is skipped when read, and the next reconciliation rewrites the file).
TensorBoard: `scalars` (tags `diagnostics/<quantity>/<group>`, step = update) and `LAYOUT` (their section).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic

FILE = "diagnostics.jsonl"
_RECORD = re.compile(r"\|\s*prelnx_diagnostics\s*\|\s*(\{.*\})\s*$")  # the plugin's logger name
# The quantities the plugin measures per group (each a mapping group -> value), with their chart titles.
PER_GROUP = {"grad_norm": "gradient norm per sublayer", "update_ratio": "update / weight per sublayer",
             "attn_logit_max": "largest attention logit per attention module",
             "hidden_rms": "layer output RMS (residual stream) per layer"}  # fmt: skip
SCALARS = {"lambda_c": "critical sharpness lambda_c = 2 / eta_c", "lr_lambda_c": "lr x lambda_c (2: the step's edge)"}
SECTION = "Why warm-up: diagnostics (step = update)"
LAYOUT = {SECTION: {title: ["Multiline", [rf"^diagnostics/{key}/"]] for key, title in PER_GROUP.items()}
          | {title: ["Multiline", [rf"^diagnostics/{key}$"]] for key, title in SCALARS.items()}}  # fmt: skip

Diagnostics = dict[str, Any]


def parse_diagnostics(line: str) -> Diagnostics | None:
    """A train.log line holding a diagnostics record -> the row; any other line -> None."""
    found = _RECORD.search(line)
    if found is None:
        return None
    try:
        row = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("num_updates"), int) else None


def read_diagnostics(run_dir: Path) -> list[Diagnostics]:
    """The rows of diagnostics.jsonl ([] when there is none); a line a kill cut short is skipped."""
    path = run_dir / FILE
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("num_updates"), int):
            rows.append(row)
    return rows


def append_diagnostics(run_dir: Path, row: Diagnostics) -> None:
    with open(run_dir / FILE, "a") as out:
        out.write(json.dumps(row) + "\n")


def diagnostics_from_log(log_path: Path) -> dict[int, Diagnostics]:
    """Every record in train.log by update; a later attempt's record of the same update replaces the earlier."""
    rows: dict[int, Diagnostics] = {}
    if log_path.is_file():
        with open(log_path, errors="replace") as log:
            for line in log:
                row = parse_diagnostics(line)
                if row is not None:
                    rows[row["num_updates"]] = row
    return rows


def reconcile_diagnostics(run_dir: Path, log_path: Path, upto: int) -> list[Diagnostics]:
    """Rewrite diagnostics.jsonl as one row per measured update up to `upto` (the last checkpoint's update; for a
    run that ended diverged, the divergence's): saved, else from train.log. Returns the rows. A run that never
    recorded one (diagnostics off) gets no file."""
    saved = {row["num_updates"]: row for row in read_diagnostics(run_dir)}
    merged = {**diagnostics_from_log(log_path), **saved}
    rows = [merged[u] for u in sorted(merged) if u <= upto]
    if merged or (run_dir / FILE).is_file():
        write_text_atomic(run_dir / FILE, "".join(json.dumps(row) + "\n" for row in rows))
    return rows


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def scalars(row: Diagnostics) -> list[tuple[str, float]]:
    """A row's TensorBoard scalars: (tag, value), finite values only; the step is row["num_updates"]."""
    out = []
    for key in PER_GROUP:
        for group, value in (row.get(key) or {}).items():
            if _finite(value):
                out.append((f"diagnostics/{key}/{group}", float(value)))
    sharpness, lr = row.get("lambda_c"), row.get("lr")
    if _finite(sharpness):
        out.append(("diagnostics/lambda_c", float(sharpness)))
        if _finite(lr):
            out.append(("diagnostics/lr_lambda_c", float(lr) * float(sharpness)))
    return out
