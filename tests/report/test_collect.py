"""scripts/rebuild_reports.py --collect keeps a sweep's raw data: collected from a sweep folder (here the demo's
committed raw data, which is laid out as `prelnx sweep` writes one) and rebuilt, the report is the committed one."""

from __future__ import annotations

import importlib.util
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
