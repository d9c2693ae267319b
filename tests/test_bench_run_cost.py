"""scripts/bench_run_cost.py (issue 48): `records` splits a run dir's wall time with the right arithmetic, on a
hand-made run dir with known wall_seconds and clocks and on one committed Study A run; `log_split` reads fairseq's
own train.log words; `measure --help` works. No training, no timing."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prelnx import child_report

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs/results/cpu_multi30k/runs/layout-post_opt-adam_warmup-0_lr-0.0005_seed-1"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_run_cost", ROOT / "scripts" / "bench_run_cost.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def make_run(path: Path, walls: list[tuple[int, int, float]], start: str, end: str, attempts: int = 1) -> Path:
    """A finished run dir: one metrics row per (epoch, update, wall_seconds), one machine.json attempt per
    `attempts` (each at `start`), status.json ending at `end`."""
    path.mkdir(parents=True)
    rows = [{"epoch": e, "num_updates": u, "valid_loss": 5.0, "wall_seconds": w} for e, u, w in walls]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    machine = {"cpu": "Test CPU", "bf16": [], "cores": 2, "device": "cpu", "time": start}
    (path / "machine.json").write_text(json.dumps({"attempts": [machine] * attempts}))
    (path / "status.json").write_text(json.dumps({"status": "finished", "update": walls[-1][1], "time": end}))
    return path


def test_records_arithmetic_on_hand_made_runs(bench, tmp_path):
    # seed 1: start-up 10 s beyond a 20 s interval; epoch 1 -> 2 costs 5 s more; 4 s tail; 100 s by the clock
    make_run(tmp_path / "arm_seed-1", [(1, 10, 30.0), (1, 20, 50.0), (2, 30, 75.0), (2, 40, 96.0)],
             "2026-12-05T10:00:00", "2026-12-05T10:01:40")  # fmt: skip
    # seed 2: resumed (two attempts): the clock of the last attempt does not time the run; its wall_seconds does
    make_run(tmp_path / "arm_seed-2", [(1, 10, 40.0), (1, 20, 60.0), (1, 30, 82.0)],
             "2026-12-05T11:00:00", "2026-12-05T11:00:30", attempts=2)  # fmt: skip
    one, two = bench.records(tmp_path)
    assert (one.seed, one.validations, one.updates, one.wall, one.first) == (1, 4, 40, 96.0, 30.0)
    assert one.intervals == (20.0, 21.0) and one.crossings == (25.0,)
    assert one.clock == 100.0 and one.tail == pytest.approx(4.0) and one.total == 100.0
    assert one.cpu == "Test CPU (no native bf16)"
    assert two.clock is None and two.tail is None and two.total == 82.0 and two.intervals == (20.0, 22.0)

    summary = bench.summarise([one, two])
    assert summary["runs"] == 2
    assert summary["minutes_mean"] == pytest.approx((100 + 82) / 2 / 60)
    assert summary["minutes_median"] == pytest.approx((100 + 82) / 2 / 60)
    assert summary["minutes_total"] == pytest.approx(182 / 60)
    assert summary["by_seed"] == {1: (1, pytest.approx(100 / 60)), 2: (1, pytest.approx(82 / 60))}
    assert summary["interval_median"] == 20.5  # of 20, 21, 20, 22
    assert summary["crossing_extra_median"] == pytest.approx(4.5)
    assert summary["startup_median"] == pytest.approx((9.5 + 19.5) / 2)
    assert summary["tail_median"] == pytest.approx(4.0)
    assert summary["cpus"] == ["Test CPU (no native bf16)"]


def test_records_reads_a_committed_study_run(bench):
    cost = bench.run_cost(COMMITTED)
    assert (cost.seed, cost.validations, cost.updates, cost.wall, cost.first) == (1, 12, 276, 450.3, 34.9)
    assert len(cost.intervals) == 8 and len(cost.crossings) == 3  # 4 epochs of 3 validations
    assert cost.clock == 453.0  # 18:04:49 -> 18:12:22
    assert cost.cpu.startswith("AMD EPYC")


def test_records_prints_what_it_cannot_split(bench, tmp_path, capsys):
    make_run(tmp_path / "r_seed-3", [(1, 10, 30.0), (1, 20, 50.0)], "2026-12-05T10:00:00", "2026-12-05T10:01:00")
    bench.print_records(tmp_path)
    out = capsys.readouterr().out
    assert "run-minutes per seed: mean 1.00, median 1.00" in out and "not split from these records" in out
    assert "RUN_FILES" in out


def test_log_split_reads_fairseq_clock_and_the_childs_train_record(bench):
    log = "\n".join([
        '2026-12-05 07:45:07 | INFO | train_inner | {"epoch": 1, "num_updates": "20", "train_wall": "22"}',
        '2026-12-05 07:45:10 | INFO | fairseq_cli.train | begin validation on "valid" subset',
        '2026-12-05 07:45:13 | INFO | valid | {"epoch": 1, "valid_loss": "8.921", "valid_num_updates": "23"}',
        "2026-12-05 07:45:14 | INFO | fairseq.checkpoint_utils | Saved checkpoint c.pt (epoch 1 @ 23 updates, "
        "score 8.9) (writing took 0.75 seconds)",
        '2026-12-05 07:45:34 | INFO | fairseq_cli.train | begin validation on "valid" subset',
        '2026-12-05 07:45:39 | INFO | valid | {"epoch": 1, "valid_loss": "8.758", "valid_num_updates": "46"}',
        "2026-12-05 07:45:40 | INFO | fairseq.checkpoint_utils | Saved checkpoint c.pt (epoch 1 @ 46 updates, "
        "score 8.7) (writing took 0.25 seconds)",
        '2026-12-05 07:45:40 | INFO | train | {"epoch": 1, "train_loss": "9.356", "train_num_updates": "46", '
        '"train_train_wall": "40", "train_wall": "55"}',
        child_report.line(child_report.Stats("train", {"epoch": 1, "train_loss": "9.356", "train_num_updates": "46",
                                                          "train_train_wall": "40", "train_wall": "55"}, 46)),
    ])  # fmt: skip
    split = bench.log_split(log)
    assert split == bench.LogSplit(updates_s=40.0, saves_s=1.0, validation_s=8.0, fairseq_s=55.0, updates=46)
    measured = bench.Measured("A", 70.0, split, {23: 8.921, 46: 8.758})
    assert measured.per_update == pytest.approx(40 / 46)
    assert measured.other_s == 6.0 and measured.outside_s == 15.0


def test_measure_help():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "scripts/bench_run_cost.py"), "measure", "--help"], env=env,
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--updates" in done.stdout and "--repeats" in done.stdout and "--set" in done.stdout
