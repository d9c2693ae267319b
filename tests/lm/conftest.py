"""A tiny real decoder-only language model (task: language_model) on the synthetic text, seconds per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import config_writer

TINY_LM = {
    "task": "language_model",
    "data": {
        "dataset": "synthetic",
        "tokens_per_sample": 16,
        "sample_break_mode": "none",
        "synthetic": {"vocab_size": 40, "min_words": 2, "max_words": 6, "train_pairs": 400, "valid_pairs": 40,
                      "test_pairs": 40, "seed": 3},
    },
    "model": {"arch": "transformer_lm", "layout": "pre", "decoder_layers": 2, "embed_dim": 32, "ffn_dim": 64,
              "attention_heads": 2, "dropout": 0.0},
    "optimizer": {"name": "adam", "lr": 0.003},
    "schedule": {"warmup_updates": 0, "decay": "constant"},
    "train": {"max_tokens": 256, "max_update": 30, "threads": 1, "log_interval": 5, "num_workers": 0,
              "keep_last_epochs": 3},
    "eval": {"every_updates": 10},
}


@pytest.fixture
def lm_config_file(tmp_path: Path):
    """Write the tiny language-model config (sections merged with the overrides) and return its path."""
    return config_writer(TINY_LM, tmp_path, "lm.yaml")
