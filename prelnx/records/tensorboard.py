"""A run's TensorBoard events, written in the run dir itself so that TensorBoard names each run by its run name.

- Scalars at step = epoch: `valid/loss`, `valid/bleu`, `train/loss`, `lr`; at step = update for runs that
  validate every N updates (eval.every_updates, task: masked_lm; records/grain.py).
- HParams: the config, and at the end the best valid loss / BLEU (`result.*`); the HParams metrics are the last
  values of `valid/loss` and `valid/bleu` (and `prelnx evaluate`'s `test/*`), so no one-point scalar is written.
- A custom-scalars layout (the paper's Figures 2 and 4: every run's valid loss on one chart, valid BLEU on
  another, lr and train loss beside them); TensorBoard merges the runs' layouts into one.

A run with train.diagnostics also gets `diagnostics/<quantity>/<group>` scalars at step = update, and their own
section of the layout (records/diagnostics.py owns both).

Event files are append-only, so a run that was killed could hold an epoch twice or miss one: `rebuild` rewrites
the run's own event files (marked by RUN_EVENTS_SUFFIX) from the reconciled rows on every (re)start and at the
end, so TensorBoard shows exactly the epochs metrics.jsonl holds, each once. `prelnx evaluate`'s files stay.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any

from prelnx.records import diagnostics as diagnostics_rows
from prelnx.records.grain import Grain

SCALARS = {"valid/loss": "valid_loss", "valid/bleu": "valid_bleu", "train/loss": "train_loss", "lr": "lr",
           "valid/accuracy": "valid_accuracy"}  # accuracy: fine-tuning (sentence_prediction) only
HPARAM_METRICS = ("valid/loss", "valid/bleu", "test/bleu_tokenized", "test/sacrebleu")
RESULTS = ("best_valid_loss", "best_valid_bleu", "final_valid_loss")
RUN_EVENTS_SUFFIX = ".prelnx-run"
LAYOUT = {
    "Figures 2 and 4 (every run)": {
        "valid loss": ["Multiline", [r"^valid/loss$"]],
        "valid BLEU": ["Multiline", [r"^valid/bleu$"]],
        "learning rate": ["Multiline", [r"^lr$"]],
        "train loss": ["Multiline", [r"^train/loss$"]],
    }
}


class TensorBoardLog:
    """Appends a row's scalars to a new event file of the run's own, at step = epoch or update (the run's grain)."""

    def __init__(self, log_dir: Path, grain: Grain = Grain.EPOCH) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(log_dir), filename_suffix=RUN_EVENTS_SUFFIX)
        self.grain = grain

    def row(self, row: dict[str, Any]) -> None:
        for tag, key in SCALARS.items():
            value = row.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                self.writer.add_scalar(tag, value, global_step=self.grain.step(row))
        self.writer.flush()

    def diagnostics(self, row: dict[str, Any]) -> None:
        for tag, value in diagnostics_rows.scalars(row):
            self.writer.add_scalar(tag, value, global_step=int(row["num_updates"]))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def _hparams(writer: Any, hparams: dict[str, Any], results: dict[str, Any] | None) -> None:
    from torch.utils.tensorboard.summary import hparams as hparams_summary

    values = dict(hparams)
    for key in RESULTS:
        value = (results or {}).get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            values[f"result.{key}"] = float(value)
    experiment, session_start, session_end = hparams_summary(values, {tag: 0.0 for tag in HPARAM_METRICS})
    for summary in (experiment, session_start, session_end):
        writer.file_writer.add_summary(summary)


def owned_event_files(run_dir: Path) -> list[Path]:
    """The run's own event files (a `prelnx evaluate` writes its own, without the suffix, and keeps them)."""
    return sorted(run_dir.glob(f"events.out.tfevents.*{RUN_EVENTS_SUFFIX}"))


def rebuild(run_dir: Path, rows: list[dict[str, Any]], hparams: dict[str, Any],
            results: dict[str, Any] | None = None, grain: Grain = Grain.EPOCH,
            diagnostics: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
    """Replace the run's event files by one holding the layout, the hparams (+ `results`) and `rows`; with
    `diagnostics` (a run that records them, even none yet) their layout section and scalars too."""
    staging = run_dir / f".tb-rebuild-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    log = TensorBoardLog(staging, grain)
    try:
        log.writer.add_custom_scalars(LAYOUT if diagnostics is None else LAYOUT | diagnostics_rows.LAYOUT)
        _hparams(log.writer, hparams, results)
        for row in rows:
            log.row(row)
        for row in diagnostics or []:
            log.diagnostics(row)
    finally:
        log.close()
    for old in owned_event_files(run_dir):
        old.unlink()
    for new in staging.iterdir():
        new.replace(run_dir / new.name)
    staging.rmdir()
