"""The verdict engine on hand-made run dirs (no training): every verdict, one seed, a diverged seed, a premise.
The plateau is 8.30 bits (tests/report/runs.py) and nll = loss - 0.3: a seed trained when its loss is <= 7.60."""

from __future__ import annotations


import pytest
from scipy import stats as scipy_stats

from prelnx.report.arms import Arm, load_arms
from prelnx.report.claims import (paper_outcomes, postln_adam_needs_warmup, postln_sgd_needs_warmup,
                                  short_warmup_large_lr, training_arms)
from prelnx.report.outcome import PremiseState
from prelnx.paper import paper_data
from prelnx.report.render import claims_table, verdict_text
from prelnx.report.stats import Sample, Verdict, above, compare
from tests.report.runs import Sweep, write_dictionary

SPECS = {claim["id"]: claim for claim in paper_data()["training"]}


def test_the_interval_is_welchs_t():
    a, b = Sample("a", (8.1, 8.6, 8.3, 8.9)), Sample("b", (6.6, 6.9, 6.7))
    c = compare("loss", a, b, above(0.5))
    expected = scipy_stats.ttest_ind(a.values, b.values, equal_var=False).confidence_interval(0.95)
    assert (c.low, c.high) == pytest.approx((expected.low, expected.high))
    assert c.verdict is Verdict.HOLDS and c.estimate == pytest.approx(a.mean - b.mean)


def test_the_training_claims_read_the_translation_runs_else_the_language_model_runs_never_the_masked_lm_runs():
    translation, lm, mlm = (Arm(name=task, layout="pre", optimizer="adam", warmup=0, lr=1e-3, seed=1, results={},
                                rows=[], task=task) for task in ("translation", "language_model", "masked_lm"))
    assert training_arms([lm, translation, mlm]) == [translation]  # a mixed sweep: its translation runs only
    assert training_arms([mlm, lm]) == [lm]
    assert training_arms([mlm]) == []
    assert paper_outcomes([mlm], paper_data())[0] == paper_data()["bert"]  # a masked-LM sweep: the BERT claim


def _needs_warmup(tmp_path, without: list[float], with_: list[float], **kwargs):
    sweep = Sweep(tmp_path / "sweep", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.seeds("post", 0, without, **kwargs)
    sweep.seeds("post", 120, with_, **kwargs)
    return postln_adam_needs_warmup(load_arms(sweep.save()), SPECS["postln_adam_needs_warmup"])


def test_holds_when_the_interval_clears_the_margin(tmp_path):
    outcome = _needs_warmup(tmp_path, [7.55, 7.60, 7.50], [6.80, 6.70, 6.90])  # all trained, 0.75 bit apart
    assert outcome.verdict is Verdict.HOLDS
    (case,) = outcome.cases
    assert case.comparison.a.n == 3 and case.comparison.low > 0.5 and case.premise.state is PremiseState.MET
    row = claims_table([SPECS["postln_adam_needs_warmup"]], {outcome.claim_id: outcome})[-1]
    assert ("final valid loss (bits): Post-LN adam lr 0.001, no warm-up at update 30: 7.55 (3 seeds) − "
            "Post-LN adam lr 0.001, 120 warm-up at update 30: 6.80 (3 seeds) = +0.75 [95 % CI") in row
    assert "test: Welch's t over the trained seeds" in row
    assert "**met**" in row and row.endswith("| **holds** |")


def test_does_not_hold_when_the_interval_is_below_the_margin(tmp_path):
    outcome = _needs_warmup(tmp_path, [7.05, 7.10, 7.00], [7.00, 6.95, 7.05])
    assert outcome.verdict is Verdict.DOES_NOT_HOLD and outcome.cases[0].comparison.high < 0.5


def test_inconclusive_says_how_many_seeds_the_spread_would_need(tmp_path):
    outcome = _needs_warmup(tmp_path, [7.6, 7.2, 7.55], [6.9, 6.5, 6.7])
    comparison = outcome.cases[0].comparison
    assert outcome.verdict is Verdict.INCONCLUSIVE and comparison.low < 0.5 < comparison.high
    assert comparison.seeds_needed > 3
    assert verdict_text(outcome) == f"inconclusive (~{comparison.seeds_needed} seeds per arm for 80 % power)"


def test_one_seed_is_inconclusive_never_a_verdict(tmp_path):
    outcome = _needs_warmup(tmp_path, [7.5], [5.0])  # 2.5 bits apart, but one seed each
    assert outcome.verdict is Verdict.INCONCLUSIVE and verdict_text(outcome) == "inconclusive (1 seed)"
    assert outcome.cases[0].comparison.low is None


def test_a_diverged_seed_counts_as_a_failure_never_at_a_loss(tmp_path):
    sweep = Sweep(tmp_path / "sweep", tmp_path / "data")
    write_dictionary(tmp_path / "data")
    sweep.run("post", 0, [9.0, 7.4], seed=1)  # trained (nll 7.1)
    sweep.run("post", 0, [9.0], seed=2, status="diverged")  # stopped after one validation
    sweep.run("post", 0, [], seed=3, status="diverged")  # before any validation
    sweep.seeds("post", 120, [6.8, 6.7, 6.9])
    outcome = postln_adam_needs_warmup(load_arms(sweep.save()), SPECS["postln_adam_needs_warmup"])
    a = outcome.cases[0].comparison.a
    assert a.n == 3 and a.failed == 2 and a.diverged == 2 and a.values == (7.4,)  # no loss for the diverged seeds
    assert outcome.verdict is Verdict.INCONCLUSIVE  # 2/3 vs 0/3 failures: Fisher p = 0.2; 1 trained seed
    row = claims_table([SPECS["postln_adam_needs_warmup"]], {outcome.claim_id: outcome})[-1]
    assert "at update 20: 7.40 (3 seeds: 1 trained, 2 diverged (updates 5, 10))" in row and "failures 2/3 vs 0/3" in row


def test_a_failed_premise_makes_the_claim_not_testable(tmp_path):
    sweep = Sweep(tmp_path / "sweep", tmp_path / "data")
    plateau = write_dictionary(tmp_path / "data")
    sweep.seeds("post", 0, [8.30, 8.25, 8.28], optimizer="sgd", lr=0.1)  # SGD barely trains, with or without warm-up
    sweep.seeds("post", 120, [8.35, 8.32, 8.38], optimizer="sgd", lr=0.1)
    outcome = postln_sgd_needs_warmup(load_arms(sweep.save()), SPECS["postln_sgd_needs_warmup"])
    premise = outcome.cases[0].premise
    assert outcome.verdict is Verdict.NOT_TESTABLE and premise.state is PremiseState.FAILED
    assert f"final valid nll minus the plateau {8.05 - plateau:+.2f} (mean of 3)" in premise.note  # nll = loss - 0.3
    row = claims_table([SPECS["postln_sgd_needs_warmup"]], {outcome.claim_id: outcome})[-1]
    assert "SGD with warm-up trains" in row and "**failed**" in row and "3 failed to train" in row
    assert "unigram plateau, 8.30 bits from dict.en.txt" in row
    assert row.endswith("| **not testable at this scale (neither arm trained: no seed of either has the quantity)** |")


def test_a_premise_sweep_reports_the_premise_per_lr_without_a_verdict(tmp_path):
    sweep = Sweep(tmp_path / "sweep", tmp_path / "data")
    plateau = write_dictionary(tmp_path / "data")
    sweep.run("post", 120, [9.0, 7.5, 6.8], optimizer="sgd", lr=0.3)  # trains: nll 6.5, 1.8 bits below the plateau
    sweep.run("post", 120, [9.0, 8.4, 8.1], optimizer="sgd", lr=0.5)  # nll 7.8: only 0.5 below
    sweep.run("post", 120, [9.0], optimizer="sgd", lr=3.0, status="diverged")
    outcome = postln_sgd_needs_warmup(load_arms(sweep.save()), SPECS["postln_sgd_needs_warmup"])
    assert outcome.verdict is Verdict.NOT_MEASURED and not outcome.cases
    assert [p.state for p in outcome.premises] == [PremiseState.MET, PremiseState.FAILED, PremiseState.FAILED]
    assert "1 trained" in outcome.premises[0].note and "1 failed to train" in outcome.premises[1].note
    assert "1 diverged" in outcome.premises[2].note
    row = claims_table([SPECS["postln_sgd_needs_warmup"]], {outcome.claim_id: outcome})[-1]
    assert "without warm-up at these lrs: only the premise is checked" in row
    assert row.count("**met**") == 1 and row.count("**failed**") == 2 and row.endswith("| not measured |")


def test_without_a_plateau_the_claim_is_not_testable_never_skipped(tmp_path):
    sweep = Sweep(tmp_path / "sweep", tmp_path / "nowhere")  # no dictionary, no binarized data: no unigram plateau
    sweep.seeds("post", 0, [7.05, 7.10, 7.00], optimizer="sgd", lr=0.1)
    sweep.seeds("post", 120, [7.00, 6.95, 7.05], optimizer="sgd", lr=0.1)
    outcome = postln_sgd_needs_warmup(load_arms(sweep.save()), SPECS["postln_sgd_needs_warmup"])
    assert outcome.cases[0].premise.state is PremiseState.UNCHECKED and outcome.verdict is Verdict.NOT_TESTABLE
    assert verdict_text(outcome).startswith("not testable at this scale (no unigram plateau")


def test_missing_arms_are_not_measured(tmp_path):
    sweep = Sweep(tmp_path / "sweep")
    sweep.seeds("post", 0, [8.4, 8.5])
    outcome = short_warmup_large_lr(load_arms(sweep.save()), SPECS["short_warmup_large_lr"])
    assert outcome.verdict is Verdict.NOT_MEASURED and not outcome.cases
