"""A sweep's progress line and summary, from hand-made run dirs."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from prelnx.config.schema import Config, EvalConfig, TrainConfig
from prelnx.records.status import write_status
from prelnx.sweep.execute import summarize
from prelnx.sweep.progress import SweepProgress


# progress.py ------------------------------------------------------------------------------------------------------
def test_sweep_progress_counts_runs_epochs_and_gives_an_eta():
    points = [SimpleNamespace(name=n, config=Config(train=TrainConfig(max_epoch=4))) for n in "ab"]
    progress = SweepProgress(points)
    assert "sweep: 0/2 runs done | 1/8 epochs | ETA after the next row" in progress.row_done("a", 1)
    assert "sweep: 0/2 runs done | 2/8 epochs | ETA " in progress.row_done("a", 2)
    summary = progress.run_done("b", "diverged")  # b will train no more epochs
    assert summary.startswith("sweep: 1/2 runs done | 2/8 epochs") and "1 diverged" in summary


def test_an_interrupted_run_is_not_counted_done():
    points = [SimpleNamespace(name=n, config=Config(train=TrainConfig(max_epoch=4))) for n in "ab"]
    progress = SweepProgress(points)
    progress.run_done("a", "finished")
    summary = progress.run_done("b", "interrupted")  # Ctrl-C: b will be resumed by the next run of the sweep
    assert summary.startswith("sweep: 1/2 runs done") and "1 interrupted" in summary


def test_a_run_found_finished_counts_its_whole_budget():
    """A resumed sweep skips its finished runs (no rows): they still trained their budget (was: '1/2 runs done |
    0/8 epochs', then a resumed run's epochs counted against the whole sweep's budget)."""
    points = [SimpleNamespace(name=n, config=Config(train=TrainConfig(max_epoch=4))) for n in "ab"]
    progress = SweepProgress(points)
    assert progress.run_done("a", "finished").startswith("sweep: 1/2 runs done | 4/8 epochs")
    assert progress.row_done("b", 3).startswith("sweep: 1/2 runs done | 7/8 epochs")  # b resumed from epoch 2


def test_sweep_progress_counts_updates_for_runs_at_the_update_grain():
    config = Config(train=TrainConfig(max_update=300), eval=EvalConfig(every_updates=100))
    progress = SweepProgress([SimpleNamespace(name=n, config=config) for n in "ab"])
    assert "sweep: 0/2 runs done | 100/600 updates | ETA" in progress.row_done("a", 100)
    progress.row_done("a", 200)
    # a run's first row (fairseq's start-up; for a resumed run, everything before it) is not counted in the pace
    progress.row_done("b", 300)
    assert progress.counted == 100


def test_a_budget_in_updates_is_counted_in_updates_at_the_epoch_grain_too():
    """Rows once an epoch, the budget train.max_update alone: the line said only `0/2 runs done`, no steps, no ETA."""
    config = Config(train=TrainConfig(max_epoch=None, max_update=300))
    progress = SweepProgress([SimpleNamespace(name=n, config=config) for n in "ab"])
    assert progress.budget["a"].step({"epoch": 1, "num_updates": 53}) == 53  # the executor reads the row by it
    assert "sweep: 0/2 runs done | 53/600 updates | ETA after the next row" in progress.row_done("a", 53)
    assert "sweep: 0/2 runs done | 106/600 updates | ETA " in progress.row_done("a", 106)
    assert progress.counted == 53  # an epoch's updates counted whole: not capped at a stride of 1


def test_what_a_sweep_line_ends_with_is_rendered_from_the_typed_progress():
    """A reproduction shows its own progress beside a sweep's: it receives the values, not the line's text."""
    from prelnx.sweep.progress import Snapshot

    seen: list[Snapshot] = []

    def beside(snapshot: Snapshot) -> str:
        seen.append(snapshot)
        return f"stage 2/9 ({snapshot.done} of {snapshot.total} runs, {snapshot.remaining} {snapshot.unit} left)"

    points = [SimpleNamespace(name=n, config=Config(train=TrainConfig(max_epoch=4))) for n in "ab"]
    progress = SweepProgress(points, also=beside)
    assert SweepProgress(points).row_done("a", 1).endswith("ETA after the next row")  # made without: nothing beside
    progress.row_done("a", 1)
    line = progress.run_done("b", "diverged")
    assert line.endswith(" || stage 2/9 (1 of 2 runs, 3 epochs left)"), line
    assert seen[-1] == Snapshot(done=1, total=2, trained=1, planned=8, remaining=3, unit="epochs", eta_seconds=None,
                                statuses=(("diverged", 1),))  # fmt: skip


# summary.py -------------------------------------------------------------------------------------------------------
def test_the_summary_lists_every_point_with_its_status(tmp_path):
    (tmp_path / "sweep.json").write_text(
        json.dumps(
            {
                "name": "s",
                "runs": [
                    {"name": "lr-1", "overrides": {"optimizer.lr": 1}},
                    {"name": "lr-2", "overrides": {"optimizer.lr": 2}},
                ],
            }
        )
    )
    (tmp_path / "lr-1").mkdir()
    write_status(tmp_path / "lr-1", "finished", update=8)
    (tmp_path / "lr-1" / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "num_updates": 8, "valid_loss": 3.0,
                                                                 "valid_bleu": 5.0, "wall_seconds": 2.0}) + "\n")  # fmt: skip
    rows, markdown = summarize(tmp_path)
    assert markdown == (tmp_path / "summary.md").read_text()  # what it wrote, for a caller to print or embed
    assert [(r["run"], r["status"]) for r in rows] == [("lr-1", "finished"), ("lr-2", "pending")]
    assert rows[0]["best_valid_loss"] == 3.0 and math.isclose(rows[0]["best_valid_bleu"], 5.0)
    assert (tmp_path / "summary.csv").read_text().startswith("run,optimizer.lr,status")


# executors: core pinning ------------------------------------------------------------------------------------------
def test_a_pinned_child_stays_on_its_slot_of_cores():
    import os
    import subprocess
    import sys

    import pytest

    from prelnx.launch.local import core_slots, pin

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs 2 cores")
    slots = core_slots(2)
    assert slots is not None and len(slots) == 2 and not (slots[0] & slots[1]) and slots[0] | slots[1] <= set(cores)
    assert core_slots(len(cores) + 1) is None  # more jobs than cores: no pinning
    child = subprocess.Popen([sys.executable, "-c", "import os, time; time.sleep(0.5); print(sorted(os.sched_getaffinity(0)))"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert pin(child.pid, slots[1])
    out, _ = child.communicate(timeout=30)
    assert out.strip() == str(sorted(slots[1]))  # what the child itself sees (its later threads inherit it)
