"""What a launch needs on disk before fairseq starts: the synthetic task generated (once), the data checked, and a
fine-tuning's pre-trained checkpoint checked for safe loading. Writes only the generated data cache."""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.data.synthetic import SyntheticTask, prepare_synthetic, prepare_synthetic_pairs, prepare_synthetic_text
from prelnx.plan.data import DataNotReady, data_dir, data_problem, synthetic_dir
from prelnx.records.checkpoints import checkpoint_info


def ensure_data(config: Config) -> Path:
    """Generate the synthetic task if needed; check any other dataset is binarized and intact (and a fine-tuning's
    pre-trained checkpoint: CheckpointRefused, CheckpointDamaged). Returns the folder."""
    folder = data_dir(config)
    if config.data.dataset == "synthetic" and config.task in ("masked_lm", "language_model", "sentence_prediction"):
        task = SyntheticTask(**vars(config.data.synthetic))
        text = synthetic_dir("masked_lm", task)  # fine-tuning pairs use the pre-training text's dictionary
        prepare_synthetic_text(task, text)
        if config.task == "sentence_prediction":
            prepare_synthetic_pairs(task, text / "dict.txt", folder)
    elif config.data.dataset == "synthetic":
        prepare_synthetic(SyntheticTask(**vars(config.data.synthetic)), folder)
    if (problem := data_problem(config)) is not None:
        raise DataNotReady(problem)
    if config.task == "sentence_prediction":  # the pre-trained weights load safely, or nothing starts
        if config.finetune.from_checkpoint is None or not Path(config.finetune.from_checkpoint).is_file():
            raise DataNotReady(f"finetune.from_checkpoint: {config.finetune.from_checkpoint!r} is not a checkpoint "
                               f"file; fine-tune with `prelnx finetune --pretrained <masked_lm run>`")  # fmt: skip
        checkpoint_info(Path(config.finetune.from_checkpoint))
    return folder
