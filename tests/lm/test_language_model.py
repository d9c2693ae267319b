"""The decoder-only language model (task: language_model): fairseq's language_modeling task with transformer_lm,
Post-LN and Pre-LN as a sweep (valid loss per validation in metrics.jsonl and TensorBoard, read by the summary,
plots and report), each placement as the plugin's model, kill and resume, config errors."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from prelnx.config.load import ConfigError, load_config
from prelnx.launch.local import train
from prelnx.plots.curves import plot
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.metrics import read_metrics
from prelnx.report.report import report_after_sweep
from prelnx.sweep.execute import run_sweep
from prelnx.sweep.spec import load_spec
from tests.helpers import logged, scalar_steps, stop_after_an_epoch


def norms(run_dir: Path) -> set[str]:
    state = torch.load(run_dir / "checkpoints" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    return {key.rsplit(".", 1)[0] for key in state["model"] if "norm" in key and key.endswith(".weight")}


@pytest.mark.slow
def test_post_and_pre_train_as_a_sweep_read_by_its_summary_plots_and_report(lm_config_file, tmp_path):
    spec_file = tmp_path / "sweep.yaml"
    spec_file.write_text(yaml.safe_dump({"name": "lm_sweep", "base": str(lm_config_file()),
                                         "grid": {"model.layout": ["post", "pre"]}}))
    sweep_dir = tmp_path / "out"
    with logged() as lines:
        rows = run_sweep(load_spec(spec_file), out=sweep_dir, jobs=2)
        report_after_sweep(sweep_dir)  # what `prelnx sweep` does next
    assert [row["status"] for row in rows] == ["finished", "finished"], lines

    for layout in ("post", "pre"):
        run_dir = sweep_dir / f"layout-{layout}"
        metrics = read_metrics(run_dir)
        assert [row["num_updates"] for row in metrics] == [10, 20, 30]  # one row per validation
        assert all(math.isfinite(row["valid_loss"]) and row["valid_ppl"] > 1 for row in metrics)
        assert metrics[-1]["valid_loss"] < metrics[0]["valid_loss"]  # it learns
        assert scalar_steps(run_dir, "valid/loss") == [10, 20, 30]  # TensorBoard's step is the update
        status = json.loads((run_dir / "status.json").read_text())
        assert status["update"] == 30 and status["validations"] == 3
        assert status["final_valid_loss"] == metrics[-1]["valid_loss"]
        command = (run_dir / "command.txt").read_text()
        assert "--task language_modeling --criterion cross_entropy" in command and "--arch transformer_lm " in command
        # fairseq's transformer_lm at the config's width: embeddings and output projection d 32, not its default 512
        assert "--decoder-input-dim 32 --decoder-output-dim 32" in command
        found = norms(run_dir)
        assert {"decoder.layers.1.self_attn_layer_norm", "decoder.layers.1.final_layer_norm"} <= found
        assert ("decoder.layer_norm" in found) is (layout == "pre")  # Pre-LN's final LayerNorm, none in Post-LN
        assert ("--decoder-normalize-before" in command) is (layout == "pre")

    with open(sweep_dir / "summary.csv") as handle:
        table = {row["run"]: row for row in csv.DictReader(handle)}
    assert {name: float(row["final_valid_loss"]) for name, row in table.items()} == {
        f"layout-{layout}": read_metrics(sweep_dir / f"layout-{layout}")[-1]["valid_loss"] for layout in ("post", "pre")}
    assert {f.name for f in plot(sweep_dir)} == {"loss.png", "loss.svg", "lr.png", "lr.svg"}  # no BLEU to draw
    report = (sweep_dir / "report.md").read_text()
    assert "## Norm placements on the language model" in report and "| Pre-LN adam lr 0.003, no warm-up |" in report


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["peri", "reorder", "mixln", "residual", "lnscale"])
def test_each_placement_trains_as_the_plugins_language_model(lm_config_file, tmp_path, layout):
    # Mix-LN needs floor(0.25 L) >= 1 Post-LN layer: 4 layers
    config, _ = load_config(lm_config_file(model={"layout": layout, "decoder_layers": 4 if layout == "mixln" else 2},
                                           train={"max_update": 10}, eval={"every_updates": 5}))  # fmt: skip
    run_dir = tmp_path / layout
    assert train(config, run_dir=run_dir).status == "finished"
    rows = read_metrics(run_dir)
    assert [row["num_updates"] for row in rows] == [5, 10] and all(math.isfinite(r["valid_loss"]) for r in rows)
    command = (run_dir / "command.txt").read_text()
    assert f"--arch prelnx_transformer_lm --norm-type layernorm --layout-scheme {layout}" in command
    assert ("--decoder-normalize-before" in command) is (layout != "residual")  # ResiDual is built on Post-LN


@pytest.mark.slow
def test_a_killed_run_resumes_and_keeps_one_row_per_validation(lm_config_file, tmp_path):
    # ResiDual (two residual streams, the plugin's model): the resume path of every LM layout, fairseq's or the plugin's
    # a budget far beyond both stops: neither attempt can end before its stop lands, however fast the machine
    config, _ = load_config(lm_config_file(model={"layout": "residual"}, train={"max_update": 100_000}))
    run_dir = tmp_path / "run"
    assert train(config, run_dir=run_dir, on_event=stop_after_an_epoch(past=10)).status == "interrupted"
    saved = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").update
    assert saved >= 10 and saved % 10 == 0
    before = [row["num_updates"] for row in read_metrics(run_dir)]
    assert before == list(range(10, before[-1] + 1, 10)) and before[-1] <= saved

    # stopped at its second validation past the checkpoint: the first one's checkpoint is saved by then
    resumed = train(config, run_dir=run_dir, on_event=stop_after_an_epoch(past=saved + 10))
    assert resumed.status == "interrupted"
    after = [row["num_updates"] for row in read_metrics(run_dir)]
    assert after == list(range(10, after[-1] + 1, 10)) and after[-1] >= saved + 10  # each validation once
    assert scalar_steps(run_dir, "valid/loss") == after


@pytest.mark.parametrize(
    ("section", "key", "words"),
    [
        ({"model": {"arch": "transformer_lm_gpt"}}, "model.arch", "always Pre-LN"),
        ({"model": {"layout": "tfixup"}}, "model.layout", "translation only"),
        ({"model": {"encoder_layers": 2}}, "model.encoder_layers", "decoder-only"),
        ({"data": {"dataset": "multi30k"}}, "data.dataset", "prelnx data prepare text"),
        ({"data": {"tokens_per_sample": 4}}, "data.tokens_per_sample", ">= 8"),
    ],
)
def test_a_bad_language_model_key_is_one_error_naming_it(lm_config_file, section, key, words):
    with pytest.raises(ConfigError) as error:
        load_config(lm_config_file(**section))
    problems = str(error.value).splitlines()[1:]
    assert len(problems) == 1 and f": {key}: " in problems[0] and words in problems[0], str(error.value)
