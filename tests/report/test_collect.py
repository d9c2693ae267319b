"""scripts/rebuild_reports.py --collect keeps a sweep's raw data: collected from a sweep folder (here the demo's
committed raw data, which is laid out as `prelnx sweep` writes one) and rebuilt, the report is the committed one."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("rebuild_reports", ROOT / "scripts" / "rebuild_reports.py")
rebuild_reports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rebuild_reports)


@pytest.mark.slow  # draws the report's figures
def test_collected_raw_data_rebuilds_the_committed_report(tmp_path):
    sweep = rebuild_reports.raw_dir("demo", ROOT)
    dest = rebuild_reports.collect(sweep, "demo", tmp_path)
    assert (dest / "sweep.json").is_file() and (dest / "data").is_dir()
    assert sorted(p.name for p in dest.iterdir()) == sorted(p.name for p in sweep.iterdir())
    out = rebuild_reports.rebuild("demo", tmp_path, tmp_path / "demo.md")
    assert out.read_bytes() == (ROOT / rebuild_reports.STUDIES["demo"].report).read_bytes()


def test_a_user_layout_is_collected_relative_to_the_repository_and_reported_by_its_name(tmp_path):
    """A sweep run in a copy of the repository (`git archive`) names the layout file by the copy's absolute path;
    --strip makes it examples/..., which the rebuild finds in the repository it runs in, so the report names the arm
    as the file does, on any machine."""
    from tests.report.runs import Sweep, write_dictionary

    copy, root = tmp_path / "copy", tmp_path / "repo"
    for folder in (copy, root):
        (folder / "examples").mkdir(parents=True)
        shutil.copy(ROOT / "examples" / "gated_preln.py", folder / "examples" / "gated_preln.py")
    spec = f"{copy / 'examples' / 'gated_preln.py'}:GatedPreLN"
    sweep = Sweep(tmp_path / "sweep", tmp_path / "data")
    write_dictionary(tmp_path / "data")
    sweep.seeds("post", 200, [4.0, 4.1])
    sweep.seeds(spec, 0, [4.0, 4.05])
    shutil.copytree(tmp_path / "data", tmp_path / "sweep" / "data")  # the sweep's copy of the dictionary
    dest = rebuild_reports.collect(sweep.save(), "gated_preln", root, strip=str(copy))
    assert str(copy) not in (dest / "sweep.json").read_text()
    assert all(str(copy) not in p.read_text() for p in dest.glob("*/config.yaml"))
    shutil.rmtree(copy)  # the copy the sweep ran in is gone, as on another machine
    report = rebuild_reports.rebuild("gated_preln", root, tmp_path / "report.md").read_text()
    assert "examples/gated_preln.py:GatedPreLN" in report and "Gated Pre-LN" in report and str(tmp_path) not in report


def test_a_sequential_study_keeps_its_looks_and_its_report_says_how_each_claim_was_decided(tmp_path):
    """looks.json travels with the raw data (collected from study A's committed folder, laid out as `prelnx sweep`
    writes one): without it the rebuilt report had no "How each claim was decided" and a resume had no look."""
    from prelnx.report.sequential import how_decided

    dest = rebuild_reports.collect(rebuild_reports.raw_dir("cpu_multi30k", ROOT), "cpu_multi30k", tmp_path)
    assert (dest / "looks.json").is_file()
    lines = how_decided(dest)
    assert "- postln_adam_needs_warmup: decided at look 2 of 3 (6 seeds per arm): does not hold, on 24 runs" in "\n".join(lines)
    assert any(line.startswith("- preln_converges_faster: undecided at look 3 of 3 (8 seeds per arm)") for line in lines)
    assert "## How each claim was decided" in (ROOT / rebuild_reports.STUDIES["cpu_multi30k"].report).read_text()
