"""A report on a sweep dir whose runs did not finish (hand-made run dirs, no training): every claim it cannot
measure says why, naming how many runs did not finish and up to three of them, not "the sweep has no runs for these
arms" (the runs exist); the runs are listed under "Runs that did not finish"."""

from __future__ import annotations

from prelnx.report.report import write_report
from tests.report.runs import Sweep, write_dictionary


def _sweep(tmp_path, statuses: list[str]):
    sweep = Sweep(tmp_path / "sweep", write_dictionary(tmp_path / "data") and tmp_path / "data")
    names = [sweep.run("post", 0, [], seed=seed, status=status) for seed, status in enumerate(statuses, start=1)]
    return sweep.save(), names


def test_each_claim_not_measured_says_how_many_runs_did_not_finish_and_names_them(tmp_path):
    sweep_dir, names = _sweep(tmp_path, ["failed", "interrupted"])
    report = write_report(sweep_dir, tmp_path / "report.md").read_text()
    why = (f"not measured: 2 run(s) did not finish ({names[0]} failed; {names[1]} interrupted); "
           "see 'Runs that did not finish'")
    rows = [line for line in report.splitlines() if line.startswith("| ") and line.endswith("| not measured |")]
    assert rows and all(f"| {why} |" in row for row in rows)
    assert "the sweep has no runs for these arms" not in report
    assert "## Runs that did not finish" in report
    assert f"| {names[0]} | failed | - |" in report and f"| {names[1]} | interrupted | - |" in report


def test_more_than_three_unfinished_runs_name_the_first_three(tmp_path):
    sweep_dir, names = _sweep(tmp_path, ["failed"] * 4)
    report = write_report(sweep_dir, tmp_path / "report.md").read_text()
    listed = "; ".join(f"{name} failed" for name in names[:3])
    assert f"not measured: 4 run(s) did not finish ({listed}; ...); see 'Runs that did not finish'" in report
    assert f"{names[3]} failed;" not in report and f"| {names[3]} | failed | - |" in report  # listed below only
