"""A sweep's `summary.csv` and `summary.md`, read only from its run dirs' status.json and metrics.jsonl."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.run.metrics import read_metrics
from prelnx.run.status import read_status

RESULT_COLUMNS = ["status", "update", "best_valid_loss", "final_valid_loss", "best_valid_bleu", "epochs",
                  "updates", "wall_seconds"]  # fmt: skip
TEST_COLUMNS = ["test_bleu_tokenized", "test_sacrebleu"]  # present once `prelnx evaluate` ran


def read_points(sweep_dir: Path) -> list[dict[str, Any]]:
    """The sweep's runs as saved by `prelnx sweep` (sweep.json): [{"name", "overrides"}]."""
    index = sweep_dir / "sweep.json"
    if not index.is_file():
        return []
    try:
        return json.loads(index.read_text())["runs"]
    except (json.JSONDecodeError, KeyError, TypeError, OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{index}: not the sweep index `prelnx sweep` writes ({type(error).__name__}); run the "
                         f"sweep again to rewrite it") from None  # fmt: skip


def _finite(values: list[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


def run_results(run_dir: Path) -> dict[str, Any]:
    status = read_status(run_dir) or {}
    rows = read_metrics(run_dir)
    losses = _finite([r.get("valid_loss") for r in rows])
    bleus = _finite([r.get("valid_bleu") for r in rows])
    test_path = run_dir / "eval" / "test.json"
    test = json.loads(test_path.read_text()) if test_path.is_file() else {}
    return {
        "test_bleu_tokenized": test.get("bleu_tokenized"),
        "test_sacrebleu": test.get("sacrebleu"),
        "status": status.get("status", "pending"),
        "update": status.get("update"),
        "reason": status.get("reason", ""),
        "best_valid_loss": min(losses) if losses else None,
        "final_valid_loss": rows[-1].get("valid_loss") if rows else None,
        "best_valid_bleu": max(bleus) if bleus else None,
        "epochs": rows[-1]["epoch"] if rows else 0,  # epochs trained (rows are per epoch or per validation)
        "updates": rows[-1].get("num_updates") if rows else None,
        "wall_seconds": rows[-1].get("wall_seconds") if rows else None,
    }


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per run: its overrides, then its results. Also (re)writes summary.csv and summary.md."""
    points = read_points(sweep_dir)
    keys = list(dict.fromkeys(key for point in points for key in point["overrides"]))
    rows = []
    for point in points:
        row = {"run": point["name"], **{key: point["overrides"].get(key) for key in keys}}
        row.update(run_results(sweep_dir / point["name"]))
        rows.append(row)
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
        if row.get("status") == "diverged" and row.get("update") is not None:
            cells[columns.index("status")] = f"diverged (update {row['update']})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
