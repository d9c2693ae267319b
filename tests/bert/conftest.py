"""A tiny real masked-LM config (BERT-style encoder on the synthetic text), small enough for seconds per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import config_writer

TINY_MLM = {
    "task": "masked_lm",
    "data": {
        "dataset": "synthetic",
        "tokens_per_sample": 32,
        "synthetic": {"vocab_size": 40, "min_words": 2, "max_words": 6, "train_pairs": 400, "valid_pairs": 40,
                      "test_pairs": 40, "seed": 3},
    },
    "model": {"arch": "roberta_base", "layout": "pre", "encoder_layers": 2, "embed_dim": 32, "ffn_dim": 64,
              "attention_heads": 2, "dropout": 0.0, "attention_dropout": 0.0},
    "optimizer": {"name": "adam", "lr": 0.003},
    "schedule": {"warmup_updates": 0, "decay": "constant"},
    "train": {"max_tokens": 256, "max_update": 30, "threads": 1, "log_interval": 5, "num_workers": 0,
              "keep_last_epochs": 3},
    "eval": {"every_updates": 10},
}


@pytest.fixture
def mlm_config_file(tmp_path: Path):
    """Write the tiny masked-LM config (sections merged with the overrides) and return its path."""
    return config_writer(TINY_MLM, tmp_path, "mlm.yaml")
