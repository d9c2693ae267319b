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
