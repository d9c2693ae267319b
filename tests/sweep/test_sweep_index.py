"""sweep.json has one reader (prelnx.records.results.read_index, issue 50): the sweep's name, its points and its
frozen claims come through it, and a file that is not the index is one refusal (exit 2), never a traceback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.exits import Refusal
from prelnx.records.frozen_claims import read_frozen
from prelnx.records.results import read_index


def test_sweep_json_has_one_reader_that_refuses_a_file_that_is_not_the_index(tmp_path):
    assert read_index(tmp_path)["name"] == "" and read_index(tmp_path)["runs"] == [] and read_frozen(tmp_path) is None
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "s", "runs": []}))
    assert read_index(tmp_path)["name"] == "s" and read_frozen(tmp_path) is None
    for bad in ("{broken", "[1]", '{"name": "s"}'):
        (tmp_path / "sweep.json").write_text(bad)
        with pytest.raises(Refusal, match="not the sweep index"):
            read_index(tmp_path)
        assert CliRunner().invoke(app, ["plot", str(tmp_path)]).exit_code == 2


def test_a_folder_that_holds_another_sweep_is_refused_by_the_run_and_the_dry_run(tmp_path, tiny_config_file):
    """Another sweep's folder is not overwritten: its sweep.json (name, runs, the claims frozen when it started) and
    looks.json are that sweep's. Seen: `prelnx sweep -c demo/preln_nowarmup --grid ... --out runs/seq` over a
    sequential sweep took its frozen claims and left its looks.json beside the new run."""
    folder = tmp_path / "seq"
    folder.mkdir()
    index = json.dumps({"name": "seq", "runs": [{"name": "a_seed-1", "overrides": {}}]})
    (folder / "sweep.json").write_text(index)
    argv = ["sweep", "--config", str(tiny_config_file()), "--grid", "optimizer.lr=1e-3", "--out", str(folder)]
    for extra in (["--dry-run"], []):
        done = CliRunner().invoke(app, [*argv, *extra])
        assert done.exit_code == 2 and "holds sweep 'seq', not 'tiny-grid'" in done.output, done.output
    assert (folder / "sweep.json").read_text() == index and sorted(p.name for p in folder.iterdir()) == ["sweep.json"]


def test_a_run_dir_is_no_sweep_folder(tmp_path, tiny_config_file):
    """`--out` at a run dir of `prelnx train` would put the sweep's runs inside that run (and `prelnx status` would show
    the sweep in its place): refused, nothing written."""
    from prelnx.config.load import load_config
    from prelnx.records.run_config import write_run_config

    run_dir = tmp_path / "run"
    write_run_config(run_dir, load_config(tiny_config_file())[0])
    before = sorted(p.name for p in run_dir.iterdir())
    argv = ["sweep", "--config", str(tiny_config_file()), "--grid", "optimizer.lr=1e-3", "--out", str(run_dir)]
    done = CliRunner().invoke(app, [*argv, "--dry-run"])
    assert done.exit_code == 2 and "a run dir" in done.output, done.output
    assert sorted(p.name for p in run_dir.iterdir()) == before
