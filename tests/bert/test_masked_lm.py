"""BERT-style pre-training through fairseq's masked_lm task: both layouts, the update grain, kill and resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from prelnx.config.load import ConfigError, load_config
from prelnx.evaluate.evaluate import EvaluationError, plan_evaluation
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.metrics import UpdateRows, read_metrics
from prelnx.plan.launch import fairseq_argv
from prelnx.records.grain import Grain
from prelnx.records.reconcile import reconcile_rows
from prelnx.launch.local import train
from tests.helpers import rendered, scalar_steps

pytestmark = pytest.mark.slow


def layer_norms(run_dir: Path) -> set[str]:
    state = torch.load(run_dir / "checkpoints" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    return {key.rsplit(".", 1)[0] for key in state["model"] if "norm" in key and key.endswith(".weight")}


@pytest.mark.parametrize("layout", ["post", "pre"])
def test_each_layout_trains_with_validation_rows_at_the_update_grain(mlm_config_file, tmp_path, layout):
    config, _ = load_config(mlm_config_file(model={"layout": layout}))
    run_dir = tmp_path / layout
    result = train(config, run_dir=run_dir)

    assert result.status == "finished", (run_dir / "train.log").read_text()[-3000:]
    rows = read_metrics(run_dir)
    assert [row["num_updates"] for row in rows] == [10, 20, 30]  # one row per validation, every 10 updates
    assert all(row["epoch"] >= 1 and math.isfinite(row["valid_loss"]) for row in rows)
    assert rows[-1]["valid_loss"] < rows[0]["valid_loss"]  # it learns
    assert scalar_steps(run_dir, "valid/loss") == [10, 20, 30]  # TensorBoard's step is the update
    status = json.loads((run_dir / "status.json").read_text())
    assert status["update"] == 30 and status["validations"] == 3
    command = (run_dir / "command.txt").read_text()
    assert "--task masked_lm" in command and "--validate-interval-updates 10" in command

    norms = layer_norms(run_dir)
    layer = "encoder.sentence_encoder.layers.0"
    if layout == "post":  # fairseq's roberta: embedding LayerNorm, LayerNorm after each residual add, no final one
        assert "encoder.sentence_encoder.layernorm_embedding" in norms
        assert "encoder.sentence_encoder.layer_norm" not in norms
        assert "--arch roberta " in command
    else:  # roberta_prenorm: no embedding LayerNorm, a final LayerNorm after the last layer
        assert "encoder.sentence_encoder.layernorm_embedding" not in norms
        assert "encoder.sentence_encoder.layer_norm" in norms
        assert "--arch roberta_prenorm" in command
    assert {f"{layer}.self_attn_layer_norm", f"{layer}.final_layer_norm"} <= norms
    saved = torch.load(run_dir / "checkpoints" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert saved["cfg"]["model"].encoder_normalize_before is (layout == "pre")
    with pytest.raises(EvaluationError, match="a masked_lm run; prelnx evaluate scores translations"):
        plan_evaluation(run_dir, "test", "best", None, None, None, None)


def test_a_stopped_run_resumes_and_keeps_one_row_per_validation(mlm_config_file, tmp_path):
    # a budget far beyond both stops: neither attempt can end before its stop lands, however fast the machine
    config, _ = load_config(mlm_config_file(train={"max_update": 100_000}))
    run_dir = tmp_path / "run"

    def stop_after_second_validation(line: str) -> None:
        if line.startswith("update 20 done"):
            raise KeyboardInterrupt

    first = train(config, run_dir=run_dir, on_event=rendered(stop_after_second_validation))
    assert first.status == "interrupted"
    # fairseq validates, then saves: stopped in between, update 20 is past the checkpoint and its row is dropped
    saved = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").update
    assert saved >= 10 and saved % 10 == 0
    recorded = [row["num_updates"] for row in read_metrics(run_dir)]
    assert recorded == list(range(10, recorded[-1] + 1, 10)) and recorded[-1] <= saved
    def stop_past_the_checkpoint(line: str) -> None:  # a resume may first validate the checkpoint's own update again
        # the second validation past it: the first one's checkpoint is saved by then (a stop at the first can land
        # between its validation and its save, whose row is then dropped, as in the first attempt)
        if line.startswith("update ") and line.split()[2] == "done" and int(line.split()[1]) > saved + 10:
            raise KeyboardInterrupt

    resumed = train(config, run_dir=run_dir, on_event=rendered(stop_past_the_checkpoint))
    assert resumed.status == "interrupted"
    recorded = [row["num_updates"] for row in read_metrics(run_dir)]
    assert recorded == list(range(10, recorded[-1] + 1, 10)) and recorded[-1] > saved  # one row per validation


def test_update_rows_carry_accuracy_and_average_only_the_current_attempt():
    rows = UpdateRows()
    rows.add("train_inner", {"num_updates": 5.0, "loss": 9.0, "lr": 1e-3}, 5)
    rows.add("train_inner", {"num_updates": 8.0, "loss": 7.0, "lr": 1e-3}, 8)  # killed here: update 10 never saved
    rows.add("train_inner", {"num_updates": 5.0, "loss": 8.0, "lr": 1e-3}, 5)  # the resumed attempt, from update 0
    row = rows.add("valid", {"epoch": 1, "valid_num_updates": 10.0, "valid_loss": 6.0, "valid_accuracy": 75.0}, 10)
    assert row["train_loss"] == 8.0 and row["valid_accuracy"] == 75.0 and row["num_updates"] == 10


def test_training_to_max_epoch_at_the_update_grain_validates_and_saves_the_last_epoch(mlm_config_file):
    config, _ = load_config(mlm_config_file(train={"max_update": None, "max_epoch": 3}))
    argv = fairseq_argv(config, Path("data"), Path("save"), cuda=False)
    assert argv[argv.index("--validate-interval") + 1] == "3" and argv[argv.index("--save-interval") + 1] == "3"


def test_reconcile_at_the_update_grain_keeps_rows_up_to_the_checkpoint():
    def row(update: int) -> dict:
        return {"epoch": 1, "num_updates": update, "valid_loss": 5.0}

    result = reconcile_rows(saved=[row(10), row(30)], logged=[row(10), row(20), row(30)], grain=Grain.UPDATE,
                            checkpoint_update=20, every=10)  # fmt: skip
    assert [r["num_updates"] for r in result.rows] == [10, 20]
    assert result.recovered == [20] and result.dropped == [30] and result.lost == []
    lost = reconcile_rows(saved=[row(10)], logged=[], grain=Grain.UPDATE, checkpoint_update=30, every=10)
    assert lost.lost == [20, 30] and "validations at updates 20, 30" in " ".join(lost.describe())


def test_masked_lm_configs_are_checked_before_anything_runs(mlm_config_file):
    with pytest.raises(ConfigError, match="eval.every_updates"):
        load_config(mlm_config_file(eval={"every_updates": None}))
    with pytest.raises(ConfigError, match="model.arch"):
        load_config(mlm_config_file(model={"arch": "transformer_iwslt_de_en"}))
    with pytest.raises(ConfigError, match="model.norm"):
        load_config(mlm_config_file(model={"norm": "rmsnorm"}))


def test_rows_validated_more_often_than_logged_carry_no_stale_lr(mlm_config_file, tmp_path):
    """eval.every_updates 5 < train.log_interval 10, a linear decay: a row's lr is the lr at its own update, and a
    row whose update fairseq logged no progress for has no lr and no train loss (absent, not an earlier value)."""
    config, _ = load_config(mlm_config_file(train={"max_update": 20, "log_interval": 10}, eval={"every_updates": 5},
                                            schedule={"decay": "linear", "end_lr": 0.0}))  # fmt: skip
    run_dir = tmp_path / "run"
    said: list[str] = []
    assert train(config, run_dir=run_dir, on_event=rendered(said.append)).status == "finished"
    rows = {row["num_updates"]: row for row in read_metrics(run_dir)}
    assert sorted(rows) == [5, 10, 15, 20]
    for update in (5, 15):  # no progress record at these updates
        assert rows[update]["lr"] is None and rows[update]["train_loss"] is None, rows[update]
    for update in (10, 20):  # the schedule's lr at the row's update: 0.003 * (1 - t / 20)
        assert rows[update]["lr"] == pytest.approx(0.003 * (1 - update / 20), abs=1e-9), rows[update]
    assert scalar_steps(run_dir, "lr") == [10, 20]  # TensorBoard shows only the lrs prelnx knows
    assert not any("None" in line for line in said if " done | " in line), said
