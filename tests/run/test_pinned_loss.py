"""A regression pin, as torchtune's recipe tests pin losses: a tiny deterministic training's validation loss after
one epoch. A silent numeric change in fairseq, torch or prelnx's plan (schedule, criterion, model flags) fails here.

The value was measured with the versions of this commit (torch 2.13.0 CPU, ve-fairseq 0.12.3, one thread).
The tolerance (2e-3 relative, ~0.01) is far below what a changed schedule moves it (a 2-update warm-up: 3-4%)
and above fairseq's 3-decimal rounding and float reordering across CPUs.
"""

from __future__ import annotations

import pytest

from prelnx.config.load import load_config
from prelnx.records.metrics import read_metrics
from prelnx.launch.local import train

pytestmark = pytest.mark.slow

# fairseq logs losses to 3 decimals. Measured twice each, identical. A 2-update warm-up alone moves them to
# 4.924 (post) and 5.119 (pre): 3% and 4%, far outside the tolerance.
PINNED_VALID_LOSS = {"post": 4.767, "pre": 4.909}
TOLERANCE = 2e-3


@pytest.mark.parametrize("layout", ["post", "pre"])
def test_one_epoch_of_a_tiny_training_gives_the_pinned_valid_loss(tiny_config_file, tmp_path, layout):
    config, _ = load_config(tiny_config_file(
        model={"layout": layout, "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0},
        train={"max_epoch": 1, "seed": 1, "threads": 1},
    ))  # fmt: skip
    result = train(config, run_dir=tmp_path / "run")
    assert result.status == "finished"
    loss = read_metrics(tmp_path / "run")[0]["valid_loss"]
    assert loss == pytest.approx(PINNED_VALID_LOSS[layout], rel=TOLERANCE), f"{layout}: valid loss {loss}"
