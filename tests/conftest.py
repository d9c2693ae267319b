"""Shared fixtures: a tiny real config on the synthetic task, and a private data cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Small enough for a real fairseq training of two epochs in seconds on one CPU core.
TINY = {
    "name": "tiny",
    "data": {
        "dataset": "synthetic",
        "synthetic": {"vocab_size": 40, "min_words": 2, "max_words": 6, "train_pairs": 400, "valid_pairs": 40,
                      "test_pairs": 40, "seed": 3},
    },
    "model": {"layout": "post", "encoder_layers": 2, "decoder_layers": 2, "embed_dim": 32, "ffn_dim": 64,
              "attention_heads": 2},
    "optimizer": {"name": "adam", "lr": 0.003},
    "schedule": {"warmup_updates": 0, "decay": "constant"},
    "train": {"max_tokens": 512, "max_epoch": 2, "threads": 1, "log_interval": 2, "num_workers": 0},
    "eval": {"bleu": {"beam": 1}},
}


@pytest.fixture(autouse=True, scope="session")
def _private_data_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    import os

    os.environ["PRELNX_DATA_HOME"] = str(tmp_path_factory.mktemp("data-home"))


@pytest.fixture
def tiny_config_file(tmp_path: Path):
    """Write the tiny config (with optional overrides of whole sections) and return its path."""

    def write(**sections: dict) -> Path:
        data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in TINY.items()}
        for key, value in sections.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return write
