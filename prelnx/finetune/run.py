"""Running the fine-tunings one after the other (each a normal prelnx run: lock, records, resume), then the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from prelnx.finetune.summary import summarize, write_summary


def run_all(runs: list[Any], folder: Path, echo: Callable[[str], None] = print) -> int:
    """Train every fine-tuning not yet finished; write the summary; 0 when all finished, else 1."""
    from prelnx.run.lock import RunLocked
    from prelnx.run.runner import train

    statuses = []
    for index, run in enumerate(runs, 1):
        echo(f"fine-tuning {index}/{len(runs)}: {run.checkpoint.name}, seed {run.seed} -> {run.run_dir}")
        try:
            statuses.append(train(run.config, run_dir=run.run_dir, echo=echo).status)
        except RunLocked as error:
            echo(f"skipped: {error}")
            statuses.append("busy")
    summary = write_summary(folder, summarize(runs))
    echo(summary.read_text().rstrip())
    echo(f"summary: {summary}")
    return 0 if all(status == "finished" for status in statuses) else 1
