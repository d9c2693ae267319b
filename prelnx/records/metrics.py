"""`metrics.jsonl`: one `Row` (records/rows.py) per epoch, or per validation at the update grain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def write_metrics(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Rewrite the whole file atomically, in training order; a row repeated (same epoch and update) is kept once,
    the later one. The callers keep one row per epoch (or per validated update)."""
    by_step = {(row["epoch"], row["num_updates"]): row for row in rows}
    text = "".join(json.dumps(by_step[step]) + "\n" for step in sorted(by_step, key=lambda s: (s[1], s[0])))
    write_text_atomic(run_dir / "metrics.jsonl", text)
