"""A real, tiny fairseq training through `prelnx train`: the proof that the whole flow works."""

from __future__ import annotations

import json
import math

import pytest

from prelnx.config.load import load_config
from prelnx.records.metrics import read_metrics
from prelnx.launch.errors import RunConflict
from prelnx.launch.local import train
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.machine_record import read_machines
from prelnx.machine import cpu_name
from tests.helpers import FAR_EPOCHS, epochs_recorded, rendered, scalar_steps, stop_after_an_epoch

pytestmark = pytest.mark.slow


def test_two_epochs_write_metrics_tensorboard_and_status(tiny_run, tiny_config_file):
    config_path, run_dir = tiny_run  # the session's one finished tiny training, copied here
    config, _ = load_config(config_path)

    rows = read_metrics(run_dir)
    assert [row["epoch"] for row in rows] == [1, 2]
    for row in rows:
        assert math.isfinite(row["valid_loss"])
        assert 0.0 <= row["valid_bleu"] <= 100.0
        assert row["num_updates"] > 0 and row["wall_seconds"] > 0
    assert rows[1]["num_updates"] > rows[0]["num_updates"]
    assert scalar_steps(run_dir, "valid/loss") == [1, 2]
    assert scalar_steps(run_dir, "valid/bleu") == [1, 2]
    assert scalar_steps(run_dir, "lr") == [1, 2]
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "finished" and status["update"] == rows[-1]["num_updates"]
    command = (run_dir / "command.txt").read_text()
    assert command.startswith("# batch per update: ")  # how the batch is made up, then the plain command
    assert command.splitlines()[1].startswith("MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 fairseq-train ")
    assert "--lr-scheduler warmup_decay" in command and "--user-dir" in command
    assert (run_dir / "checkpoints" / "checkpoint_last.pt").is_file()
    [machine] = read_machines(run_dir)  # the CPU it trained on, for studies that pool seeds across machines
    assert machine.cpu == cpu_name() and machine.device == config.train.device and machine.cores >= 1

    # A finished run is not retrained; a different config on the same run dir is refused.
    again = train(config, run_dir=run_dir)
    assert again.status == "finished" and read_metrics(run_dir) == rows
    changed, _ = load_config(tiny_config_file(optimizer={"lr": 0.001}))
    with pytest.raises(RunConflict, match="optimizer.lr"):
        train(changed, run_dir=run_dir)


def test_interrupted_run_resumes_from_its_checkpoint(tiny_config_file, tmp_path):
    """Stopped after its first epoch with a budget it cannot reach before the stop lands, then resumed and stopped
    again after the epoch it trains next: each attempt's records hold what was trained, and the second continues
    the first (no race: neither attempt can end on its own)."""
    config, _ = load_config(tiny_config_file(train={"max_epoch": FAR_EPOCHS}))
    run_dir = tmp_path / "run"

    first = train(config, run_dir=run_dir, on_event=stop_after_an_epoch())
    assert first.status == "interrupted"
    reached = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt")
    rows = read_metrics(run_dir)
    assert rows and epochs_recorded(run_dir) == list(range(1, len(rows) + 1)) and reached.epoch >= len(rows)
    updates_per_epoch = rows[0]["num_updates"]

    lines: list[str] = []
    second = train(config, run_dir=run_dir, on_event=stop_after_an_epoch(lines, past=reached.epoch))
    assert second.status == "interrupted"
    assert lines[0].startswith("resuming")
    rows = read_metrics(run_dir)
    epochs = epochs_recorded(run_dir)
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) > reached.epoch  # every epoch once, on from the checkpoint
    # Continued, not restarted: update counts keep growing from where the first attempt ended.
    assert rows[-1]["num_updates"] == pytest.approx(len(epochs) * updates_per_epoch, abs=2)
    assert "Loaded checkpoint" in (run_dir / "train.log").read_text()
    assert scalar_steps(run_dir, "valid/loss") == epochs
    assert len(read_machines(run_dir)) == 2  # one machine entry per attempt


def test_absurd_learning_rate_ends_as_diverged(tiny_config_file, tmp_path):
    """One diverging training for what a run that diverged records and what it leaves: status diverged at the real
    update (never 0) with exit code 3, and no checkpoint, so `evaluate` says it has no model instead of failing."""
    from prelnx.evaluate.evaluate import EvaluationError, evaluate

    config, _ = load_config(tiny_config_file(optimizer={"name": "sgd", "lr": 1.0e6}, train={"max_epoch": 2}))
    run_dir = tmp_path / "run"
    result = train(config, run_dir=run_dir)
    status = json.loads((run_dir / "status.json").read_text())
    assert result.status == "diverged" and status["status"] == "diverged", (run_dir / "train.log").read_text()[-2000:]
    assert result.exit_code == 3
    assert "update" in status and status["reason"]
    assert status["update"] >= 1 and "update 0" not in status["reason"], status  # the real update
    # diverged before its first checkpoint: nothing to evaluate, and evaluate says so
    assert not list((run_dir / "checkpoints").glob("checkpoint*.pt"))
    with pytest.raises(EvaluationError, match=rf"the run diverged at update {result.update} \(.*\) before its first "
                                              r"checkpoint: it has no model to evaluate"):  # fmt: skip
        evaluate(run_dir)


def test_a_finished_run_trains_on_when_its_budget_grows(tiny_run, tiny_config_file):
    config_path, run_dir = tiny_run  # a finished run: 2 epochs, constant lr
    config, _ = load_config(config_path)
    before = read_metrics(run_dir)

    longer, _ = load_config(tiny_config_file(train={"max_epoch": 3}))
    said: list[str] = []
    result = train(longer, run_dir=run_dir, on_event=rendered(said.append))

    assert result.status == "finished", said
    rows = read_metrics(run_dir)
    assert [row["epoch"] for row in rows] == [1, 2, 3] and rows[:2] == before  # the trained epochs kept as they were
    assert any("the budget grows (train.max_epoch: 2 -> 3)" in line for line in said), said
    assert "max_epoch: 3" in (run_dir / "config.yaml").read_text()
    assert train(longer, run_dir=run_dir, on_event=lambda event: None).update == result.update  # done now

    with pytest.raises(RunConflict, match=r"A budget may only grow on a trained run \(train.max_epoch cannot go "
                                          r"from 3 to 2\)"):  # fmt: skip
        train(config, run_dir=run_dir, on_event=lambda event: None)


def test_a_longer_budget_is_refused_where_the_schedule_depends_on_it(tiny_config_file, tmp_path):
    linear = {"decay": "linear", "end_lr": 0.0}
    config, _ = load_config(tiny_config_file(schedule=linear, train={"max_epoch": None, "max_update": 6}))
    run_dir = tmp_path / "run"
    assert train(config, run_dir=run_dir, on_event=lambda event: None).status == "finished"
    longer, _ = load_config(tiny_config_file(schedule=linear, train={"max_epoch": None, "max_update": 12}))
    with pytest.raises(RunConflict, match="schedule.decay linear reaches its end lr at train.max_update"):
        train(longer, run_dir=run_dir, on_event=lambda event: None)
