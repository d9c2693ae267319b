"""`prelnx status` of a sweep whose runs have not all started: a pending run shows its budget, from its config (the
sweep's spec and its grid point), never "?"; an epoch budget gets its size in updates once a run of the same batches
has trained an epoch."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.sweep.execute import plan_sweep, save_spec
from prelnx.sweep.progress import SweepProgress
from prelnx.sweep.spec import resolve_spec
from prelnx.sweep.status import sweep_states, table

runner = CliRunner()


def _sweep(base: Path, folder: Path, grid: list[str], fixed: list[str] = ()) -> dict[str, Path]:
    """A sweep as `prelnx sweep` leaves it before its runs start (sweep.yaml, sweep.json); run name -> run dir."""
    spec = resolve_spec(base, grid, list(fixed), "s")
    sweep_dir, points = plan_sweep(spec, folder)
    save_spec(sweep_dir, spec, points)
    return {point.name: sweep_dir / point.name for point in points}


def _progress(folder: Path) -> dict[str, str]:
    """run -> its progress cell, from the table's lines (cells apart by two spaces)."""
    lines = table(sweep_states(folder))[1:len(sweep_states(folder)) + 1]
    cells = [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in lines]
    return {row[0]: row[2] for row in cells}


def test_a_pending_runs_budget_is_its_configs(tiny_config_file, tmp_path):
    runs = _sweep(tiny_config_file(), tmp_path / "s", ["optimizer.lr=0.001,0.002"], ["train.max_epoch=8"])
    assert set(_progress(tmp_path / "s").values()) == {"epoch 0/8"}
    states = sweep_states(tmp_path / "s")
    assert [(s.planned, s.unit, s.step) for s in states] == [(8, "epoch", 0)] * len(runs)
    assert "left: 16 epochs of the runs' budgets" in "\n".join(table(states))

    updates = _sweep(tiny_config_file(), tmp_path / "u", ["optimizer.lr=0.001,0.002"], ["train.max_update=40"])
    assert set(_progress(tmp_path / "u").values()) == {"update 0/40"} and len(updates) == 2
    result = runner.invoke(app, ["status", str(tmp_path / "u")])
    assert result.exit_code == 130 and "?" not in result.output and "update 0/40" in result.output, result.output
    both = table(states + sweep_states(tmp_path / "u"))  # 2 x 8 epochs and 2 x 40 updates
    assert "left: 96 epochs/updates of the runs' budgets" in "\n".join(both)


def test_a_sweeps_progress_counts_its_runs_grain(tiny_config_file, tmp_path):
    points = []
    for folder, fixed in (("e", "train.max_epoch=8"), ("u", "eval.every_updates=10")):
        points += plan_sweep(resolve_spec(tiny_config_file(), ["optimizer.lr=0.001"], [fixed], "s"), tmp_path / folder)[1]
    assert [SweepProgress(p).unit for p in (points[:1], points[1:], points)] == ["epochs", "updates", "epochs/updates"]


def test_a_sweep_whose_base_moved_still_shows_its_runs(tiny_config_file, tmp_path):
    base = tiny_config_file()
    _sweep(base, tmp_path / "s", ["optimizer.lr=0.001,0.002"])
    base.unlink()  # its pending runs' budgets are unknown now; the table is still drawn
    states = sweep_states(tmp_path / "s")
    assert [(s.status, s.planned) for s in states] == [("pending", 0)] * 2
    assert all("epoch 0/?" in line for line in table(states)[1:3])


@pytest.mark.slow
def test_a_pending_epoch_budget_is_sized_in_updates_by_a_run_of_the_same_batches(finished_tiny_run, tiny_config_file,
                                                                                  tmp_path):  # fmt: skip
    from prelnx.records.metrics import read_metrics

    runs = _sweep(tiny_config_file(), tmp_path / "s", ["optimizer.lr=0.003,0.001"])  # the tiny run's lr is 0.003
    trained, pending = runs["lr-0.003"], runs["lr-0.001"]
    shutil.copytree(finished_tiny_run, trained)
    per_epoch = read_metrics(trained)[-1]["num_updates"] // 2
    assert _progress(tmp_path / "s")[pending.name] == f"epoch 0/2 (~{2 * per_epoch} updates)"

    other = _sweep(tiny_config_file(), tmp_path / "b", ["train.max_tokens=512,256"])  # other batches: no size
    shutil.copytree(finished_tiny_run, other["max_tokens-512"])
    assert _progress(tmp_path / "b")["max_tokens-256"] == "epoch 0/2"


def test_status_json_of_a_sequential_sweep_carries_its_looks(tiny_config_file, tmp_path):
    """The text shows the look and each claim's state above the table; --json, "the same facts", carried only the runs."""
    import json

    from prelnx.sweep.looks import LOOKS_FILE

    _sweep(tiny_config_file(), tmp_path / "s", ["optimizer.lr=0.001,0.002"])
    looks = {"look": 0, "looks": [2, 3], "method": "obrien-fleming", "running": {}, "done": False, "claims": {
        "c": {"claim": "c", "state": "open", "verdict": "inconclusive", "arms": ["a", "b"], "runs": 4, "look": 0}}}
    (tmp_path / "s" / LOOKS_FILE).write_text(json.dumps(looks))
    shown = runner.invoke(app, ["status", str(tmp_path / "s")])
    assert "claim c: open at look 1" in shown.output, shown.output
    record = json.loads(runner.invoke(app, ["status", str(tmp_path / "s"), "--json"]).output)
    assert record["looks"] == looks and record["kind"] == "sweep"


def test_a_run_whose_status_json_cannot_be_read_says_so(tiny_run):
    """status.json is written atomically, so only something outside prelnx damages it: the run is then shown as it
    reads (pending, nothing recorded), with why its status is not known, never a plain `pending`."""
    run_dir = tiny_run[1]
    (run_dir / "status.json").write_text('{"status": "fini')
    result = runner.invoke(app, ["status", str(run_dir)])
    assert "status.json unreadable: its status is not known" in result.output, result.output


def test_no_eta_when_no_run_trains(tmp_path):
    """A sweep whose runs are all interrupted (each with a pace: seconds at its last row) is not getting closer to its
    end: `left: ...` without an ETA, and status --json's eta_seconds is null."""
    import json

    from tests.report.runs import Sweep

    sweep = Sweep(tmp_path / "s")
    for seed in (1, 2):
        run = sweep.folder / sweep.run("pre", 0, [5.0, 4.0], seed=seed, status="interrupted")
        rows = [{**json.loads(line), "wall_seconds": 10.0 * n} for n, line in
                enumerate((run / "metrics.jsonl").read_text().splitlines(), 1)]  # fmt: skip
        (run / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    sweep.save()
    shown = runner.invoke(app, ["status", str(sweep.folder)])
    assert shown.exit_code == 130 and "left: 196 epochs of the runs' budgets; no ETA: no run is training" in shown.output
    assert json.loads(runner.invoke(app, ["status", str(sweep.folder), "--json"]).stdout)["eta_seconds"] is None
