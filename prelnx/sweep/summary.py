"""A sweep's `summary.csv` and `summary.md`, read only through the records (records/results.py)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.records.outcome import RunStatus
from prelnx.records.results import read_points, sweep_rows

# `update`: the last update trained (status.json); the last row's update is the same for an ended run
RESULT_COLUMNS = ["status", "update", "best_valid_loss", "final_valid_loss", "best_valid_bleu", "epochs",
                  "wall_seconds"]  # fmt: skip
TEST_COLUMNS = ["test_bleu_tokenized", "test_sacrebleu"]  # present once `prelnx evaluate` ran


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per run: its overrides, then its results. Also (re)writes summary.csv and summary.md."""
    keys = list(dict.fromkeys(key for point in read_points(sweep_dir) for key in point["overrides"]))
    rows = sweep_rows(sweep_dir)
    columns = ["run", *keys, *RESULT_COLUMNS]
    if any(row["test_bleu_tokenized"] is not None for row in rows):
        columns += TEST_COLUMNS
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(sweep_dir / "summary.csv", buffer.getvalue())
    write_text_atomic(sweep_dir / "summary.md", _markdown(rows, columns))
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-2 else f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def _markdown(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns]
        if row.get("status") == RunStatus.DIVERGED and row.get("update") is not None:
            cells[columns.index("status")] = f"diverged (update {row['update']})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
