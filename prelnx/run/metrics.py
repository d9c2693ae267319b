"""A run's per-epoch results: `metrics.jsonl`, one JSON object per epoch (TensorBoard: `run/tensorboard.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic



def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_metrics(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite the whole file atomically; a resumed run's repeated epoch replaces the earlier row."""
    by_epoch = {row["epoch"]: row for row in rows}
    text = "".join(json.dumps(by_epoch[epoch]) + "\n" for epoch in sorted(by_epoch))
    write_text_atomic(run_dir / "metrics.jsonl", text)
