"""The README's demo table is the rendering of one demo run's summary (docs/results/demo_summary.csv, written with
docs/results/demo.md by scripts/demo_results.py): neither can be edited alone (issue 21.7)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from prelnx.sweep.spec import expand, load_spec

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("demo_results", ROOT / "scripts" / "demo_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_table_is_the_committed_runs_rendering():
    script = _script()
    assert script.readme_block((ROOT / "README.md").read_text()) == script.render()


def test_the_committed_summary_is_the_demo_sweeps_and_finished():
    names = [point.name for point in expand(load_spec(ROOT / "configs" / "sweeps" / "demo.yaml"))]
    rows = list(csv.DictReader((ROOT / "docs" / "results" / "demo_summary.csv").open(newline="")))
    assert [row["run"] for row in rows] == names == list(_script().ARMS)
    assert {row["status"] for row in rows} == {"finished"}
    assert (ROOT / "docs" / "results" / "demo.md").is_file()


def test_render_refuses_a_summary_of_another_sweep(tmp_path):
    other = tmp_path / "summary.csv"
    other.write_text("run,status,final_valid_loss,best_valid_loss,best_valid_bleu,update,wall_seconds\nx,finished,1,1,,1,1\n")
    with pytest.raises(SystemExit, match="not a demo sweep's summary"):
        _script().render(other)
