"""`prelnx status` on real tiny runs: a finished run, a sweep with a diverged run, a run still training."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.exits import Exit
from tests.helpers import FAR_EPOCHS, run_until_it_trains_past

pytestmark = pytest.mark.slow
runner = CliRunner()


def _table(output: str) -> dict[str, list[str]]:
    """run -> its cells (split on two spaces), from the table's lines."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run ") and "  status  " in line)
    rows = {}
    for line in lines[start + 1:]:
        if " run(s): " in line or line.startswith("left: "):
            break
        cells = [cell.strip() for cell in line.split("  ") if cell.strip()]
        rows[cells[0]] = cells[1:]
    return rows


def test_a_finished_run_and_a_sweep_with_a_diverged_run(tiny_config_file, tmp_path):
    base = tiny_config_file(train={"max_epoch": 1})
    spec = tmp_path / "spec.yaml"
    # Adam (the base's) at lr 1e6: NaN at update 1; SGD's first step (torch.optim's) imports torch._dynamo, ~0.9 CPU-s
    spec.write_text(yaml.safe_dump({"name": "two", "base": str(base), "grid": {"optimizer.lr": [0.01, 1.0e6]}}))
    out = tmp_path / "two"
    swept = runner.invoke(app, ["sweep", "--config", str(spec), "--out", str(out), "--jobs", "1"])
    names = [run["name"] for run in json.loads((out / "sweep.json").read_text())["runs"]]
    statuses = {name: json.loads((out / name / "status.json").read_text()) for name in names}
    diverged = next(name for name in names if statuses[name]["status"] == "diverged")
    finished = next(name for name in names if statuses[name]["status"] == "finished")
    assert swept.exit_code == Exit.DIVERGED == 3, swept.output  # the one table: a sweep exits as status does

    result = runner.invoke(app, ["status", str(out)])
    assert result.exit_code == Exit.DIVERGED == 3, result.output  # a diverged run, none failed or left to train
    rows = _table(result.output)
    metrics = [json.loads(line) for line in (out / finished / "metrics.jsonl").read_text().splitlines()]
    assert rows[finished][:3] == ["finished", f"epoch 1/1 (update {statuses[finished]['update']})",
                                  f"{metrics[-1]['valid_loss']:.3f}"]  # fmt: skip
    assert rows[diverged][0] == "diverged" and rows[diverged][-2:] == [str(statuses[diverged]["diverged_at"]), "-"]
    assert "2 run(s): 1 diverged, 1 finished" in result.output and "ETA" not in result.output  # nothing left

    alone = runner.invoke(app, ["status", str(out / finished)])
    assert alone.exit_code == 0 and "1 run(s): 1 finished" in alone.output, alone.output
    nothing = runner.invoke(app, ["status", str(tmp_path)])
    assert nothing.exit_code == 2 and "not a run dir" in nothing.output
    as_json = runner.invoke(app, ["status", str(out), "--json"])  # the same facts, unrendered
    record = json.loads(as_json.stdout)
    assert as_json.exit_code == record["exit_code"] == 3
    assert (record["kind"], record["outcome"]) == ("sweep", "diverged")
    by_name = {run["run"]: run for run in record["runs"]}
    assert by_name[diverged]["diverged_at"] == statuses[diverged]["diverged_at"]
    assert by_name[finished]["status"] == "finished"
    assert by_name[finished]["valid_loss"] == metrics[-1]["valid_loss"] and record["eta_seconds"] is None


def test_a_run_still_training_then_stopped(tiny_config_file, tmp_path):
    config = tiny_config_file(train={"max_epoch": FAR_EPOCHS})
    run_dir = tmp_path / "far"
    seen: dict[str, subprocess.CompletedProcess] = {}

    def read_status_then_stop(process: subprocess.Popen) -> None:
        seen["running"] = subprocess.run([sys.executable, "-m", "prelnx.cli", "status", str(run_dir)],
                                         capture_output=True, text=True, timeout=120)  # fmt: skip
        process.send_signal(signal.SIGINT)

    run_until_it_trains_past([sys.executable, "-m", "prelnx.cli", "train", "--config", str(config), "--run-dir",
                              str(run_dir)], run_dir, 1, tmp_path / "train.log", stop=read_status_then_stop)  # fmt: skip
    running = seen["running"]
    assert running.returncode == Exit.RUNNING == 5, running.stdout + running.stderr  # not 3, a diverged run's
    (row,) = _table(running.stdout).values()
    assert row[0] == "running" and row[1].startswith("epoch ") and row[1].split()[1].endswith(f"/{FAR_EPOCHS}")
    assert "left: " in running.stdout and "ETA " in running.stdout and "ETA unknown" not in running.stdout

    stopped = runner.invoke(app, ["status", str(run_dir)])
    assert stopped.exit_code == Exit.INTERRUPTED and "interrupted" in stopped.output, stopped.output


def test_a_killed_run_is_interrupted_at_once_not_running_while_its_log_is_fresh(tiny_config_file, tmp_path):
    """kill -9 of `prelnx train` (status.json still says running, train.log written a moment ago): the lock's owner
    is a dead pid of this host, so status says interrupted (130) at once, not `running` (5) for minutes."""
    run_dir = tmp_path / "killed"
    run_until_it_trains_past([sys.executable, "-m", "prelnx.cli", "train", "--config",
                              str(tiny_config_file(train={"max_epoch": FAR_EPOCHS})), "--run-dir", str(run_dir)],
                             run_dir, 1, tmp_path / "train.log", stop=lambda process: process.kill())  # fmt: skip
    assert json.loads((run_dir / "status.json").read_text())["status"] == "running"
    result = runner.invoke(app, ["status", str(run_dir)])
    assert result.exit_code == Exit.INTERRUPTED and "interrupted" in result.output, result.output


def test_status_of_a_sweep_killed_mid_run_says_its_summary_is_behind_the_runs(tiny_config_file, tmp_path):
    """kill -9 of `prelnx sweep` while its second run trains: summary.csv, rewritten as each run ends, still says
    that run is pending; `prelnx status` says it is as of its time and older than that run's records."""
    import csv

    out = tmp_path / "sweep"
    run_until_it_trains_past([sys.executable, "-m", "prelnx.cli", "sweep", "--config", str(tiny_config_file()), "--grid",
                              f"train.max_epoch=1,{FAR_EPOCHS}", "--out", str(out)], out / f"max_epoch-{FAR_EPOCHS}",
                             0, tmp_path / "sweep.log", stop=lambda process: process.kill())  # fmt: skip
    summary = {row["run"]: row["status"] for row in csv.DictReader((out / "summary.csv").open())}
    assert summary == {"max_epoch-1": "finished", f"max_epoch-{FAR_EPOCHS}": "pending"}  # what it could not rewrite
    result = runner.invoke(app, ["status", str(out)])
    assert result.exit_code == Exit.INTERRUPTED and _table(result.output)[f"max_epoch-{FAR_EPOCHS}"][0] == "interrupted"
    assert (f"older than the records of 1 run(s) (max_epoch-{FAR_EPOCHS}); the sweep rewrites them as each run ends: "
            f"this table is the runs' own") in result.output.splitlines()[1], result.output
    as_json = json.loads(runner.invoke(app, ["status", str(out), "--json"]).output)
    assert as_json["summary"]["behind"] == [f"max_epoch-{FAR_EPOCHS}"] and as_json["summary"]["written"]
