"""Outcomes are values: no recorded status or update depends on how a message is worded, and a checkpoint that
already holds the whole budget is recorded finished without fairseq training one update more."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prelnx import child_report
from prelnx.config.load import load_config
from prelnx.launch.local import train
from prelnx.records import outcome as outcome_module
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import Divergence, Failure, Outcome, Signal
from prelnx.records.status import write_status
from tests.helpers import rendered
from tests.run.test_faults import small_disk  # noqa: F401 - the fixture (a small tmpfs)

pytestmark = pytest.mark.slow
KEPT = ("status", "update", "failure", "diverged_at", "divergence")


def status_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def ended(config, run_dir: Path) -> dict:
    train(config, run_dir=run_dir, on_event=lambda event: None)
    return status_of(run_dir)


def last_logged_update(run_dir: Path) -> int:
    """The last update the child's records in its log (train.log) report."""
    events = map(child_report.parse, (run_dir / "train.log").read_text().splitlines())
    return max((event.step or 0 for event in events if isinstance(event, child_report.Stats)), default=0)


def test_rewording_the_disk_full_and_divergence_messages_changes_no_recorded_status(tiny_config_file, tmp_path,
                                                                                      small_disk, monkeypatch):  # fmt: skip
    # Adam at lr 1e6: NaN at update 1, as SGD's; SGD's first step (torch.optim's) imports torch._dynamo, ~0.9 CPU-s
    diverging, _ = load_config(tiny_config_file(optimizer={"name": "adam", "lr": 1.0e6}))
    tiny, _ = load_config(tiny_config_file())
    disk = small_disk("600k")  # room for the logs and records, not for a checkpoint of the tiny model
    as_said = {"diverged": ended(diverging, tmp_path / "a"), "full": ended(tiny, disk / "a")}
    logged = {"as_said": last_logged_update(disk / "a")}
    shutil.rmtree(disk / "a")  # the disk as empty as it was
    monkeypatch.setattr(Outcome, "reason", lambda outcome: "REWORDED")
    monkeypatch.setattr(outcome_module, "io_reason", lambda error, near=None: "REWORDED")
    reworded = {"diverged": ended(diverging, tmp_path / "b"), "full": ended(tiny, disk / "b")}
    logged["reworded"] = last_logged_update(disk / "b")

    assert as_said["diverged"]["status"] == "diverged" and as_said["diverged"]["diverged_at"] >= 1
    assert as_said["full"]["status"] == "failed" and as_said["full"]["failure"] == "disk_full"
    assert as_said["full"]["reason"].startswith("no space left on device: ")
    for case in ("diverged", "full"):
        assert reworded[case]["reason"] == "REWORDED"
        # Where a full disk stops a run is a race between fairseq's checkpoint write and prelnx's own row writes
        # (both fill the same small disk): the update it was recorded at is timing, not wording, so it is checked
        # against that run's own log instead; every other recorded value must not move.
        kept = KEPT if case == "diverged" else tuple(k for k in KEPT if k != "update")
        assert {k: reworded[case].get(k) for k in kept} == {k: as_said[case].get(k) for k in kept}, case
    for said, last in ((as_said["full"], logged["as_said"]), (reworded["full"], logged["reworded"])):
        assert 1 <= said["update"] <= last, (said, last)  # an update fairseq trained, never beyond


def test_reasons_are_rendered_from_the_values():
    valid = Outcome("diverged", 150, divergence=Divergence(Signal.VALID_LOSS, 150, float("nan"), epoch=3))
    assert valid.reason() == "valid loss nan at epoch 3 (after update 150)"
    assert valid.record() == {"reason": valid.reason(), "diverged_at": 150, "divergence": "valid loss"}
    nan = Outcome("diverged", 37, divergence=Divergence(Signal.FAIRSEQ_NAN, 37))
    assert nan.reason() == "fairseq stopped on NaN/Inf after update 37"
    stopped = Outcome("interrupted", 5, Failure.STOPPED)
    assert stopped.record()["failure"] == "stopped" and "run the same command again" in stopped.reason()
    said = {failure: Outcome("failed", 5, failure, detail="X {0}").reason() for failure in (*Failure, None)}
    assert said == {Failure.STOPPED: "stopped by the user; run the same command again to resume",
                    Failure.UNREADABLE_CHECKPOINT: "the last checkpoint cannot be read (X {0}); run again",
                    Failure.FINISHED_THEN_CRASHED: "fairseq finished training, then exited with X {0}",
                    Failure.OUT_OF_MEMORY: "out of memory (X {0}): fewer tokens per batch (data.max_tokens) or fewer "
                                           "jobs at a time",
                    Failure.DISK_FULL: "X {0}", Failure.IO: "X {0}", Failure.CRASH: "X {0}", None: "X {0}"}  # fmt: skip


@pytest.mark.parametrize("budget", [{"max_update": 7, "max_epoch": None}, {"max_epoch": 2}])
def test_a_checkpoint_that_holds_the_whole_budget_is_finished_without_training_more(tiny_config_file, tmp_path,
                                                                                    budget, request):  # fmt: skip
    if budget == {"max_epoch": 2}:  # the tiny config as it is: a copy of the session's finished run
        config_path, run_dir = request.getfixturevalue("tiny_run")
        config, _ = load_config(config_path)
    else:
        config, _ = load_config(tiny_config_file(train=budget))
        run_dir = tmp_path / "run"
        assert train(config, run_dir=run_dir, on_event=lambda event: None).status == "finished"
    trained = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt")
    rows = read_metrics(run_dir)
    # prelnx killed after fairseq saved its last checkpoint, before `finished` was recorded
    write_status(run_dir, "running", update=trained.update)
    log_before = (run_dir / "train.log").read_text()

    said: list[str] = []
    again = train(config, run_dir=run_dir, on_event=rendered(said.append))

    assert again.status == "finished" and again.update == trained.update, said
    assert checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").update == trained.update
    assert (run_dir / "train.log").read_text() == log_before  # fairseq was not started again
    assert read_metrics(run_dir) == rows and status_of(run_dir)["status"] == "finished"
    assert any("already holds the whole budget" in line for line in said), said
