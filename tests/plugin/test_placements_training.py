"""The norm placements of issue 32 trained for real: a few updates per layout on the tiny translation task (their
checkpoints rebuild the same model), ResiDual stopped after an epoch and resumed, and the gradient study's
per-layer output RMS at initialisation (hidden.csv) beside its gradient norms.
"""

from __future__ import annotations

import csv
import math

import pytest

from prelnx.config.load import load_config
from prelnx.launch.inprocess import load_plugin
from prelnx.launch.local import train
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.metrics import read_metrics
from tests.helpers import FAR_EPOCHS, epochs_recorded, stop_after_an_epoch
from tests.plugin import build


def module_types(model) -> set[str]:
    return {type(module).__name__ for module in model.modules()}


def checkpoint_module_types(run_dir) -> set[str]:
    """The model `prelnx evaluate` and a resume rebuild from the run's last checkpoint."""
    from fairseq import checkpoint_utils

    load_plugin()
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(run_dir / "checkpoints" / "checkpoint_last.pt")])
    return module_types(models[0])


# ---------------------------------------------------------------------------------------------------- training


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["peri", "reorder", "mixln", "lnscale"])  # residual: the resume test below
def test_a_tiny_training_of_each_placement_finishes_and_its_checkpoint_rebuilds_it(tiny_config_file, tmp_path, layout):
    """A few updates with validation BLEU (beam search: incremental decoding through the placement)."""
    model = {"layout": layout, "mixln_alpha": 0.5}  # 2 layers per stack: one Post-LN layer each for Mix-LN
    config, _ = load_config(tiny_config_file(model=model, train={"max_update": 3, "max_epoch": 1}))
    run_dir = tmp_path / "run"
    result = train(config, run_dir=run_dir)
    assert result.status == "finished", (run_dir / "train.log").read_text()[-3000:]
    rows = read_metrics(run_dir)
    assert rows and all(math.isfinite(row["valid_loss"]) and math.isfinite(row["train_loss"]) for row in rows)
    assert f"--layout-scheme {layout}" in (run_dir / "command.txt").read_text()
    config_model = build.translation(config)[2]
    assert checkpoint_module_types(run_dir) == module_types(config_model)


@pytest.mark.slow
def test_a_placement_run_stopped_after_an_epoch_resumes_from_its_checkpoint(tiny_config_file, tmp_path):
    """ResiDual (the placement with state across layers; its one training) stopped after its first epoch, resumed
    and stopped again: the budget (FAR_EPOCHS) is far beyond both stops; every epoch is recorded once, finite; the
    checkpoint rebuilds the model. Validation BLEU on: beam search decodes through the two streams."""
    config, _ = load_config(tiny_config_file(model={"layout": "residual"}, train={"max_epoch": FAR_EPOCHS}))
    run_dir = tmp_path / "run"
    assert train(config, run_dir=run_dir, on_event=stop_after_an_epoch()).status == "interrupted"
    reached = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch
    lines: list[str] = []
    result = train(config, run_dir=run_dir, on_event=stop_after_an_epoch(lines, past=reached))
    assert result.status == "interrupted", (run_dir / "train.log").read_text()[-3000:]
    assert lines[0].startswith("resuming"), lines
    epochs = epochs_recorded(run_dir)
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) > reached
    assert all(math.isfinite(row["valid_loss"]) for row in read_metrics(run_dir))
    assert "--layout-scheme residual" in (run_dir / "command.txt").read_text()
    assert checkpoint_module_types(run_dir) == module_types(build.translation(config)[2])


@pytest.mark.slow
def test_the_gradient_study_writes_each_layers_output_rms_beside_the_gradients(tiny_config_file, tmp_path):
    """hidden.csv: every layer's output RMS at init, per layout. Post-LN-based streams (post, ResiDual's x_a) leave
    each layer at a norm's scale (RMS 1); Pre-LN's stream grows with the layer."""
    from prelnx.analysis.grads.run import run_study
    from prelnx.analysis.grads.study import GradStudy
    from prelnx.analysis.grads.summary import read_grads_csv

    config, _ = load_config(tiny_config_file())
    layouts = ("post", "pre", "peri", "residual")
    study = GradStudy(config, layouts=layouts, depths=(3,), seeds=(1,), batches=1, workers=1, threads=1)
    outcome = run_study(study, tmp_path, plots=False)
    rows = read_grads_csv(tmp_path / "grads.csv")
    assert {row["layout"] for row in rows} == set(layouts)
    hidden = list(csv.DictReader((tmp_path / "hidden.csv").open()))
    assert len(hidden) == len(layouts) * (3 + 3)
    rms = {(r["layout"], r["side"], int(r["layer"])): float(r["rms"]) for r in hidden}
    assert all(math.isfinite(value) and value > 0 for value in rms.values())
    for layout in ("post", "residual"):
        assert all(abs(rms[(layout, side, layer)] - 1.0) < 1e-3 for side in ("encoder", "decoder") for layer in (1, 2, 3))
    assert rms[("pre", "encoder", 3)] > rms[("pre", "encoder", 1)]
    assert outcome.summary["hidden_rms"]["last_over_first_layer"]["pre 3 encoder"] > 1.0
