"""A study outlives its machine (issue 48): a sweep whose done runs exist only as committed raw data (config,
metrics, status, machine; no checkpoints), resumed in a fresh folder with --raw-data, trains none of them and only
what is missing; a run the raw data holds unfinished is trained again, never restored."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.records.metrics import read_metrics
from prelnx.records.raw_data import keep_run

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_a_sweep_resumed_from_committed_raw_data_trains_only_what_is_missing(tiny_config_file, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "study", "base": str(tiny_config_file(train={"max_epoch": 1})),
                                    "grid": {"optimizer.lr": [1.0e-3, 2.0e-3, 3.0e-3]}}))  # fmt: skip
    first = tmp_path / "machine-a"
    done = runner.invoke(app, ["sweep", "--config", str(spec), "--out", str(first), "--jobs", "1"])
    assert done.exit_code == 0, done.output
    names = [run["name"] for run in json.loads((first / "sweep.json").read_text())["runs"]]

    # The raw data as a study commits it: two done runs; the third looks as if its session ended mid-run.
    raw = tmp_path / "docs" / "runs"
    for name in names:
        assert keep_run(first / name, raw / name)
    assert not any((raw / name / "checkpoints").exists() or (raw / name / "train.log").exists() for name in names)
    unfinished = names[2]
    (raw / unfinished / "status.json").write_text(json.dumps({"status": "running", "update": 3}))
    kept = {name: read_metrics(raw / name) for name in names[:2]}
    shutil.rmtree(first)  # the machine is gone

    fresh = tmp_path / "machine-b"
    resumed = runner.invoke(app, ["sweep", "--config", str(spec), "--out", str(fresh), "--jobs", "1",
                                  "--raw-data", str(raw)])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert "2 done run(s) put back" in resumed.output
    for name in names[:2]:  # restored, not trained: no log, no checkpoint, the committed rows unchanged
        assert not (fresh / name / "train.log").exists() and not (fresh / name / "checkpoints").exists()
        assert read_metrics(fresh / name) == kept[name]
    assert (fresh / unfinished / "train.log").is_file()  # the unfinished one trained from the start
    assert json.loads((fresh / unfinished / "status.json").read_text())["status"] == "finished"

    missing = runner.invoke(app, ["sweep", "--config", str(spec), "--out", str(tmp_path / "c"),
                                  "--raw-data", str(tmp_path / "nowhere")])  # fmt: skip
    assert missing.exit_code == 2 and "--raw-data" in missing.output and "no such folder" in missing.output
