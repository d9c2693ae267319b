"""Running the fine-tunings one after the other (each a normal prelnx run: lock, records, resume), then the summary."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.finetune.summary import summarize, write_summary
from prelnx.records.outcome import RunStatus


def take_snapshot(run: Any) -> None:
    """The stage's pretrained.pt: a hard link to the checkpoint (fairseq replaces checkpoint files by renaming, so
    the link keeps these weights), or a copy across file systems; refused if the checkpoint moved on meanwhile."""
    from prelnx.finetune.plan import FinetunePlanError
    from prelnx.records.checkpoints import checkpoint_info

    if run.snapshot.is_file():
        return
    run.snapshot.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(run.checkpoint, run.snapshot)
    except OSError:
        partial = run.snapshot.with_name(run.snapshot.name + ".tmp")
        shutil.copyfile(run.checkpoint, partial)
        os.replace(partial, run.snapshot)
    if checkpoint_info(run.snapshot).update != run.pretrain_update:
        run.snapshot.unlink()
        raise FinetunePlanError(f"{run.checkpoint} moved on past update {run.pretrain_update} while planning; run again")


def run_all(runs: list[Any], folder: Path, echo: Callable[[str], None] = print) -> int:
    """Train every fine-tuning not yet finished; write the summary; 0 when all finished, else 1."""
    from prelnx.launch.local import train
    from prelnx.records.lock import RunLocked

    statuses: list[RunStatus] = []
    for index, run in enumerate(runs, 1):
        take_snapshot(run)
        echo(f"fine-tuning {index}/{len(runs)}: {run.checkpoint.name}, seed {run.seed} -> {run.run_dir}")
        try:
            statuses.append(train(run.config, run_dir=run.run_dir, echo=echo).status)
        except RunLocked as error:
            echo(f"skipped: {error}")
            statuses.append(RunStatus.ELSEWHERE)
    summary = write_summary(folder, summarize(runs))
    echo(summary.read_text().rstrip())
    echo(f"summary: {summary}")
    return 0 if all(status is RunStatus.FINISHED for status in statuses) else 1
