"""The norm placements' claims on a language-model sweep (prelnx/report/placements.py, methods.yaml's lm_claims),
decided from real run-dir files (no training): each kind's verdict, the premise of fewer failures, the claims that
valid losses cannot decide, and the section in `prelnx report`."""

from __future__ import annotations

import pytest

from prelnx.paper import methods_data
from prelnx.report.arms import load_arms
from prelnx.report.placements import CHECKS, check_placements
from prelnx.report.report import write_report
from prelnx.report.stats import Verdict
from tests.report.runs import PLATEAU_WORDS, Sweep


def lm_sweep(tmp_path) -> Sweep:
    """Post-LN, Pre-LN, Peri-LN and the reordered norm at lrs 1e-3 and 3e-3, warm-up 50, 3 seeds each."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "dict.txt").write_text("".join(f"w{i} 10\n" for i in range(PLATEAU_WORDS)))  # plateau 8.30 bits
    sweep = Sweep(tmp_path / "placements_lm", data, task="language_model")
    sweep.seeds("post", 50, [6.30, 6.35, 6.40], lr=1e-3)
    sweep.seeds("post", 50, [6.50, 6.55, 6.60], lr=3e-3)
    sweep.seeds("pre", 50, [6.00, 6.05, 6.10], lr=1e-3)
    sweep.seeds("pre", 50, [6.60, 6.70, 6.80], lr=3e-3)  # Pre-LN loses 0.6-0.7 bits at the larger lr
    sweep.seeds("peri", 50, [5.90, 5.92, 5.94], lr=1e-3)  # better than Pre-LN at both lrs ...
    sweep.seeds("peri", 50, [5.95, 5.98, 5.99], lr=3e-3)  # ... and about 0.05 bits apart: less lr-sensitive
    sweep.seeds("reorder", 50, [6.00, 6.10, 6.05], lr=1e-3)
    sweep.seeds("reorder", 50, [6.70, 6.60], lr=3e-3)
    sweep.run("reorder", 50, [9.0], seed=3, lr=3e-3, status="diverged")  # fails where Pre-LN never did
    return sweep


def test_every_lm_claim_has_a_check_its_source_and_what_decides_the_untestable(tmp_path):
    placements = [m for m in methods_data() if m.get("lm_claims")]
    assert {m["layout"] for m in placements} == {"peri", "reorder", "mixln", "residual", "lnscale"}
    for method in placements:
        assert method["claims"] == []  # never checked on translation
        for claim in method["lm_claims"]:
            assert claim["kind"] in CHECKS and claim["claim"] and claim["source"] and claim["paper"]
            if claim["kind"] == "not_testable_here":
                assert claim["decided_by"]
            elif claim["kind"] == "fewer_failures":
                assert isinstance(claim["margin_share"], float)
            else:
                assert isinstance(claim["margin_bits"], float)


def test_each_kind_decides_from_the_lm_runs(tmp_path):
    arms = load_arms(lm_sweep(tmp_path).save())
    assert {a.task for a in arms} == {"language_model"} and arms[0].plateau is not None  # dict.txt's plateau
    outcomes = {cid: o for m in check_placements(arms, methods_data()) for cid, o in m.outcomes.items()}
    assert outcomes["peri_beats_preln"].verdict is Verdict.HOLDS
    assert [c.label for c in outcomes["peri_beats_preln"].cases] == ["adam lr 0.001", "adam lr 0.003"]
    sensitive = outcomes["peri_less_lr_sensitive"]
    assert sensitive.verdict is Verdict.HOLDS and [c.label for c in sensitive.cases] == ["50 warm-up, lr 0.001 vs 0.003"]
    assert sensitive.cases[0].comparison.a.n == 3  # one |gap| per seed present at both lrs
    # the reordered norm failed once, Pre-LN never: "fewer failures than none" is not testable
    fewer = outcomes["reorder_fewer_failures"]
    assert fewer.verdict is Verdict.NOT_TESTABLE and [c.label for c in fewer.cases] == ["50 warm-up, lr 0.001",
                                                                                       "50 warm-up, lr 0.003"]
    assert "Pre-LN failed 0/3; Reordered norm (OLMo 2) adam 1/3" in fewer.cases[1].premise.note  # matched arms only
    untestable = outcomes["peri_variance_near_linear"]
    assert untestable.verdict is Verdict.NOT_MEASURED and "not testable from this sweep" in untestable.missing
    assert "mixln_beats_preln" not in outcomes  # no Mix-LN run in the sweep: not listed


@pytest.mark.slow  # draws the figures
def test_the_report_of_an_lm_sweep_has_the_papers_claims_and_the_placements(tmp_path):
    sweep_dir = lm_sweep(tmp_path).save()
    text = write_report(sweep_dir, tmp_path / "out" / "placements_lm.md").read_text()
    assert "## Norm placements on the language model" in text and "### Ranking by final valid loss" in text
    assert "**Peri-LN**: Peri-LN is less sensitive to the learning rate than Pre-LN." in text
    assert "not testable from this sweep" in text
    assert "Warm-up-free methods" not in text  # the translation benchmark's section stays out


def test_a_run_stalled_just_under_the_plateau_counts_as_a_failure(tmp_path):
    sweep = lm_sweep(tmp_path)
    sweep.run("pre", 50, [8.4, 8.1, 8.0], seed=4, lr=3e-3, nll=[8.4, 8.1, 8.0])  # 0.3 bits under the plateau: stalled
    outcome = {cid: o for m in check_placements(load_arms(sweep.save()), methods_data()) for cid, o in m.outcomes.items()}
    case = outcome["reorder_fewer_failures"].cases[1]
    assert case.premise.state.value == "met"
    assert "Pre-LN failed 1/4; Reordered norm (OLMo 2) adam 1/3" in case.premise.note
