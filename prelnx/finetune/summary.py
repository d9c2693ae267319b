"""The fine-tuning summary: per pre-trained checkpoint, the accuracy of each seed and their mean with a 95 %
interval (Student's t over the seeds, as the paper's Figure 5b/c error bars over six fine-tunings).

A seed's accuracy is its best validation accuracy over the fine-tuning's epochs (how GLUE dev results are
usually reported); an unfinished fine-tuning is listed with its status and left out of the mean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.interval import mean_interval
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import finite
from prelnx.records.status import recorded_status

SUMMARY_JSON, SUMMARY_MD = "finetune_summary.json", "finetune_summary.md"  # in the fine-tuning's folder


def summarize(runs: list[Any]) -> list[dict[str, Any]]:
    """One entry per checkpoint (in the order given): its pre-training update, the seeds' accuracies, mean, interval."""
    by_checkpoint: dict[tuple[Path, int], list[Any]] = {}
    for run in runs:
        by_checkpoint.setdefault((run.checkpoint, run.pretrain_update), []).append(run)
    entries = []
    for (checkpoint, update), group in by_checkpoint.items():
        seeds = {}
        for run in group:
            status = recorded_status(run.run_dir)
            rows = read_metrics(run.run_dir) if status is RunStatus.FINISHED else []
            accuracy = max(finite(row.get("valid_accuracy") for row in rows), default=None)
            seeds[run.seed] = {"status": status.value, "accuracy": accuracy}
        accuracies = [s["accuracy"] for s in seeds.values() if s["accuracy"] is not None]
        mean, half = mean_interval(accuracies)
        entries.append({"checkpoint": str(checkpoint), "pretrain_update": update,
                        "seeds": seeds, "mean_accuracy": mean, "interval95": half})  # fmt: skip
    return entries


def format_mean(entry: dict[str, Any]) -> str:
    """`93.9 ± 2.9`, `93.9 (one seed: no interval)` or `-`."""
    if entry["mean_accuracy"] is None:
        return "-"
    half = entry["interval95"]
    return f"{entry['mean_accuracy']:.1f}" + (f" ± {half:.1f}" if half is not None else " (one seed: no interval)")


def write_summary(out: Path, entries: list[dict[str, Any]]) -> str:
    """Write SUMMARY_JSON and SUMMARY_MD into `out`; returns the table SUMMARY_MD holds."""
    write_text_atomic(out / SUMMARY_JSON, json.dumps(entries, indent=2) + "\n")
    lines = ["| checkpoint | pre-training update | seeds | accuracy per seed (%) | mean ± 95 % interval |", "|---|---|---|---|---|"]
    for e in entries:
        per_seed = ", ".join(f"{s['accuracy']:.1f}" if s["accuracy"] is not None else s["status"] for s in e["seeds"].values())
        lines.append(f"| {Path(e['checkpoint']).name} | {e['pretrain_update']} | {len(e['seeds'])} | {per_seed} | "
                     f"{format_mean(e)} |")  # fmt: skip
    table = "\n".join(lines) + "\n"
    write_text_atomic(out / SUMMARY_MD, table)
    return table
