"""Issue 46 (the verdict engine, round four): raw data keeps its meaning - every reader reads every committed run-dir
format, and a run dir of a format newer than this prelnx is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from prelnx.report.arms import load_arms
from tests.report.runs import Sweep, write_dictionary


def _sweep(tmp_path, name: str = "sweep") -> Sweep:
    write_dictionary(tmp_path / "data")
    return Sweep(tmp_path / name, tmp_path / "data")


# Raw data keeps its meaning: every reader reads every committed run-dir format.

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
COMMITTED = sorted(p.parent for p in RESULTS.glob("*/runs/sweep.json"))


def _study(raw: Path):
    """A study of over 50 runs takes seconds to read (placements_lm's 219: ~20 CPU-seconds), so it runs in the slow
    tier; the smaller studies keep every reader on committed raw data in the quick one."""
    return pytest.param(raw, id=raw.parent.name, marks=pytest.mark.slow if len(list(raw.iterdir())) > 50 else ())


@pytest.mark.parametrize("raw", [_study(raw) for raw in COMMITTED])
def test_every_reader_reads_every_committed_run_dir_format(raw, tmp_path):
    """Each committed study's runs (format 1: status.json without `format`) read by the arms, the per-run rows and
    the outcome the report judges them by; a run dir stamped with today's format reads the same."""
    import gzip
    import json
    import shutil

    from prelnx.records.results import sweep_rows
    from prelnx.records.status import FORMAT_VERSION, format_version, read_status

    sweep = shutil.copytree(raw, tmp_path / raw.parent.name)
    for packed in sweep.rglob("*.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
    versions = {format_version(read_status(d)) for d in sweep.iterdir() if (d / "status.json").is_file()}
    assert versions and versions <= set(range(1, FORMAT_VERSION + 1))
    before = [(a.name, a.key, a.outcome()) for a in load_arms(sweep)]
    rows = sweep_rows(sweep)
    assert len(rows) == len(json.loads((sweep / "sweep.json").read_text())["runs"])
    for run in (d for d in sweep.iterdir() if (d / "status.json").is_file()):
        record = json.loads((run / "status.json").read_text())
        (run / "status.json").write_text(json.dumps({**record, "format": FORMAT_VERSION}))
    assert [(a.name, a.key, a.outcome()) for a in load_arms(sweep)] == before


def test_a_run_dir_of_a_newer_format_is_refused_by_name(tmp_path):
    import json

    from prelnx.exits import Refusal

    sweep = _sweep(tmp_path)
    run = sweep.folder / sweep.run("pre", 0, [7.0, 6.0])
    (run / "status.json").write_text(json.dumps({"status": "finished", "update": 20, "format": 99}))
    with pytest.raises(Refusal, match="run-dir format 99, newer than this prelnx reads"):
        load_arms(sweep.save())
