"""A run's per-epoch results: `metrics.jsonl` (one JSON object per epoch) and TensorBoard scalars (step = epoch).

TensorBoard's event files are append-only, so a run that was killed could hold an epoch twice or miss one.
`rebuild_tensorboard` rewrites `tb/` from the reconciled rows on every (re)start and at the end of a run, so
TensorBoard shows exactly the epochs metrics.jsonl holds, each once.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic

SCALARS = {"valid/loss": "valid_loss", "valid/bleu": "valid_bleu", "train/loss": "train_loss", "lr": "lr"}
# Written once when a run ends, for the HParams tab's comparison of runs.
FINAL_SCALARS = {"final/valid_loss": "final_valid_loss", "best/valid_loss": "best_valid_loss",
                 "best/valid_bleu": "best_valid_bleu"}


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


RUN_EVENTS_SUFFIX = ".prelnx-run"


class TensorBoardLog:
    """Scalars at step = epoch, plus the run's hparams for the HParams tab."""

    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # The suffix marks the files the run owns (rebuilt on restart); `prelnx evaluate` writes its own.
        self.writer = SummaryWriter(str(log_dir), filename_suffix=RUN_EVENTS_SUFFIX)

    def hparams(self, hparams: dict[str, Any]) -> None:
        from torch.utils.tensorboard.summary import hparams as hparams_summary

        # test/* are written later by `prelnx evaluate`; listing them here puts them in the HParams table.
        tags = ("valid/loss", "valid/bleu", *FINAL_SCALARS, "test/bleu_tokenized", "test/sacrebleu")
        metric_names = {tag: 0.0 for tag in tags}
        experiment, session_start, session_end = hparams_summary(hparams, metric_names)
        for summary in (experiment, session_start, session_end):
            self.writer.file_writer.add_summary(summary)

    def epoch(self, row: dict[str, Any]) -> None:
        for tag, key in SCALARS.items():
            value = row.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(tag, value, global_step=row["epoch"])
        self.writer.flush()

    def final(self, results: dict[str, Any], step: int) -> None:
        for tag, key in FINAL_SCALARS.items():
            value = results.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(tag, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def rebuild_tensorboard(tb_dir: Path, rows: list[dict[str, Any]], hparams: dict[str, Any],
                        final: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Replace tb/'s event files by one holding `rows` (and the hparams, and `final` when the run has ended)."""
    staging = tb_dir.parent / f".tb-rebuild-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    log = TensorBoardLog(staging)
    try:
        log.hparams(hparams)
        for row in rows:
            log.epoch(row)
        if final is not None and rows:
            log.final(final, step=rows[-1]["epoch"])
    finally:
        log.close()
    tb_dir.mkdir(parents=True, exist_ok=True)
    for old in tb_dir.glob(f"events.out.tfevents.*{RUN_EVENTS_SUFFIX}"):
        old.unlink()
    for new in staging.iterdir():
        new.replace(tb_dir / new.name)
    staging.rmdir()
