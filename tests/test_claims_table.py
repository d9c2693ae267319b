"""The table of paper.yaml's claims in README.md and docs/results.md is scripts/claims_table.py's output (issue 48):
decided again from the committed raw data through the report engine, each row checked against its committed report,
every claim listed ("no committed study yet" where none measures it). Real files: the repository's committed studies,
a hand-made sweep (tests/report/runs.py) with the report prelnx writes for it, a real `prelnx theory` output."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from prelnx.analysis.theory import TheorySettings, run_theory
from prelnx.paper import paper_data
from prelnx.report.theory_claims import judge
from tests.report.runs import Sweep, write_dictionary

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("training", "gradients", "theory", "bert")


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table():
    return _script("claims_table")


@pytest.fixture(scope="module")
def committed(table):
    return table.rows(ROOT)


# Deciding every committed study again takes seconds (as tests/test_bench_sequential.py's 64 committed runs): the
# tests reading `committed` run in the slow tier; the hand-made studies below keep the generator in the quick one.
READS_EVERY_STUDY = pytest.mark.slow


@READS_EVERY_STUDY
@pytest.mark.parametrize("target", ["README.md", "docs/results.md"])
def test_the_published_table_is_the_generators_output(table, committed, target):
    assert table.block((ROOT / target).read_text(), target) == table.render(committed, target)


@READS_EVERY_STUDY
def test_every_claim_of_paper_yaml_has_a_row_and_none_has_a_made_up_verdict(table, committed):
    ids = [claim["id"] for kind in KINDS for claim in paper_data()[kind]]
    assert len(ids) == 12
    lines = table.render(committed).splitlines()[2:]
    listed = [line.split("`")[1] for line in lines]
    assert list(dict.fromkeys(listed)) == ids  # every claim, in paper.yaml's order
    measured = {row.claim for row in committed}
    assert len(lines) == len(committed) + len(set(ids) - measured)  # one line per study, or one saying none
    for claim, line in zip(listed, lines):
        assert (f"| {table.NONE_YET} | - | - | - | - |" in line) == (claim not in measured)
    for row in committed:  # each from a committed report, or a committed grads / theory output folder
        assert (ROOT / row.report).exists() and row.verdict != table.NONE_YET


def _study(root: Path, finals_pre: list[float]) -> Path:
    """A hand-made demo-like study (Pre-LN without warm-up against Post-LN with) as committed raw data, with its
    report written by the rebuild script, in a repository-like folder."""
    raw = root / "docs" / "results" / "demo" / "runs"
    write_dictionary(raw / "data")  # the plateau read from the sweep's copy: 8.30 bits
    sweep = Sweep(raw)
    sweep.seeds("post", 200, [4.0, 4.1, 4.2])
    sweep.seeds("pre", 0, finals_pre)
    sweep.save()
    _script("rebuild_reports").rebuild("demo", root=root)
    return root / "docs" / "results" / "demo.md"


def test_a_study_gives_its_verdict_and_a_stale_report_is_refused(table, tmp_path):
    report = _study(tmp_path, [3.9, 4.0, 4.1])
    rows = {row.claim: row for row in table.rows(tmp_path)}
    matches = rows["preln_without_warmup_matches"]
    assert (matches.verdict, matches.report, matches.seeds) == ("holds", "docs/results/demo.md", "3 vs 3")
    assert matches.interval.startswith("-0.10 [95 % CI ")
    assert matches.scale == "synthetic, 6-6 layers, d 512, 30 updates"  # transformer's preset: no dims in the config
    assert "short_warmup_large_lr" not in rows  # no arms for it: "no committed study yet"
    rendered = table.render(list(rows.values()), "docs/results.md")
    assert "| holds | -0.10 [95 % CI " in rendered and "[docs/results/demo.md](results/demo.md)" in rendered
    # the committed report says something else than the engine on the same raw data: refused, naming the report
    report.write_text(report.read_text().replace("| **holds** |", "| **does not hold** |"))
    with pytest.raises(SystemExit, match=r"docs/results/demo.md: its claims table differs"):
        table.rows(tmp_path)
    # raw data without its report is refused too: a verdict is published only beside its report
    report.unlink()
    with pytest.raises(SystemExit, match="demo.md: not committed beside its raw data; rebuild it"):
        table.rows(tmp_path)
    # and no raw data: no row, whatever report is left
    shutil.rmtree(tmp_path / "docs" / "results" / "demo")
    assert table.rows(tmp_path) == []


def test_a_committed_theory_output_decides_lemma_1(table, tmp_path):
    folder = tmp_path / "docs" / "results" / "lemma1"
    run_theory(TheorySettings(d=64, layers=4, seeds=(1, 2, 3), scales=(1.0,)), folder,
               plots=False, judge=judge)  # fmt: skip
    rows = table.rows(tmp_path)
    assert [row.claim for row in rows] == ["postln_hidden_norm_three_halves", "preln_hidden_norm_grows_linearly"]
    assert {row.report for row in rows} == {"docs/results/lemma1/"}
    assert {row.scale for row in rows} == {"d 64, 4 layers"} and {row.seeds for row in rows} == {"3"}
    grows = rows[1]  # 4 layers and the slope: 5 cases, 3 shown
    assert grows.interval.count("<br>") == 3 and grows.interval.endswith("and 2 more cases (in the report)")
    assert rows[0].verdict in ("holds", "does not hold") or rows[0].verdict.startswith("inconclusive")


@READS_EVERY_STUDY
def test_a_premise_sweep_shows_its_premise_not_a_verdict(committed):
    """The committed SGD premise sweep has no arm without warm-up: Figure 2b's claim is "not measured" there, shown
    with the premise it checked (failed at every lr), never left out as if no study had looked."""
    premise = [row for row in committed if row.report == "docs/results/cpu_multi30k_sgd_premise.md"]
    assert [(row.claim, row.verdict, row.seeds) for row in premise] == [
        ("postln_sgd_needs_warmup", "not measured", "1 per arm")]
    assert premise[0].interval == "premise failed at 5 of 5 arms"
