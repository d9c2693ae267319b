"""A run's TensorBoard events, in the run dir itself (TensorBoard names each run by its run name): scalars at the
run's grain, HParams (the config and, at the end, `result.*`) and a custom-scalars layout (Figures 2 and 4). Event
files are append-only, so `rebuild` rewrites the run's own (RUN_EVENTS_SUFFIX); `prelnx evaluate`'s files stay.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from prelnx.config.load import config_to_dict, flatten_values
from prelnx.config.schema import Config
from prelnx.records import diagnostics as diagnostics_rows
from prelnx.records.grain import Grain
from prelnx.records.results import is_finite

SCALARS = {"valid/loss": "valid_loss", "valid/bleu": "valid_bleu", "train/loss": "train_loss", "lr": "lr",
           "valid/accuracy": "valid_accuracy"}  # accuracy: fine-tuning (sentence_prediction) only
HPARAM_METRICS = ("valid/loss", "valid/bleu", "test/bleu_tokenized", "test/sacrebleu")
RUN_EVENTS_SUFFIX = ".prelnx-run"
LAYOUT = {
    "Figures 2 and 4 (every run)": {
        "valid loss": ["Multiline", [r"^valid/loss$"]],
        "valid BLEU": ["Multiline", [r"^valid/bleu$"]],
        "learning rate": ["Multiline", [r"^lr$"]],
        "train loss": ["Multiline", [r"^train/loss$"]],
    }
}


def hparams_of(config: Config) -> dict[str, Any]:
    """The config as TensorBoard hparams (scalars and strings only)."""
    flat = flatten_values(config_to_dict(config))
    return {key: value if isinstance(value, (int, float, str, bool)) else str(value) for key, value in flat.items()}


class TensorBoardLog:
    """Appends a row's scalars to a new event file of the run's own, at step = epoch or update (the run's grain)."""

    def __init__(self, log_dir: Path, grain: Grain = Grain.EPOCH) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(log_dir), filename_suffix=RUN_EVENTS_SUFFIX)
        self.grain = grain

    def row(self, row: dict[str, Any]) -> None:
        for tag, key in SCALARS.items():
            if is_finite(row.get(key)):
                self.writer.add_scalar(tag, row[key], global_step=self.grain.step(row))
        self.writer.flush()

    def diagnostics(self, row: dict[str, Any]) -> None:
        for tag, value in diagnostics_rows.scalars(row):
            self.writer.add_scalar(tag, value, global_step=int(row["num_updates"]))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def rebuild(run_dir: Path, rows: list[dict[str, Any]], hparams: dict[str, Any],
            results: dict[str, Any] | None = None, grain: Grain = Grain.EPOCH,
            diagnostics: list[dict[str, Any]] | None = None) -> None:  # fmt: skip
    """Replace the run's event files by one holding the layout, the hparams (+ `results`) and `rows`; with
    `diagnostics` (a run that records them, even none yet) their layout section and scalars too."""
    from torch.utils.tensorboard.summary import hparams as hparams_summary

    staging = run_dir / f".tb-rebuild-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    log = TensorBoardLog(staging, grain)
    try:
        log.writer.add_custom_scalars(LAYOUT if diagnostics is None else LAYOUT | diagnostics_rows.LAYOUT)
        values = hparams | {f"result.{key}": float(value) for key, value in (results or {}).items() if is_finite(value)}
        for summary in hparams_summary(values, {tag: 0.0 for tag in HPARAM_METRICS}):  # experiment, session start, end
            log.writer.file_writer.add_summary(summary)
        for row in rows:
            log.row(row)
        for row in diagnostics or []:
            log.diagnostics(row)
    finally:
        log.close()
    for old in run_dir.glob(f"events.out.tfevents.*{RUN_EVENTS_SUFFIX}"):  # the run's own (prelnx evaluate's stay)
        old.unlink()
    for new in staging.iterdir():
        new.replace(run_dir / new.name)
    staging.rmdir()
