"""The verdict engine's rules that issue 30 found missing: two dead arms decide nothing, "seeds needed" means 80 %
power, and a claim tested at several lrs corrects its "does not hold" (Holm's step-down), not its "holds"."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from prelnx.paper import paper_data
from prelnx.report.arms import load_arms
from prelnx.report.claims import postln_adam_needs_warmup, preln_without_warmup_matches
from prelnx.report.render import claims_table, verdict_text
from prelnx.report.report import CLAIMS_INTRO, write_report
from prelnx.report.stats import Sample, Verdict, above, compare, holm
from tests.helpers import logged
from tests.report.runs import Sweep, write_dictionary

SPECS = {claim["id"]: claim for claim in paper_data()["training"]}
MATCHES = SPECS["preln_without_warmup_matches"]


def _sweep(tmp_path) -> Sweep:
    write_dictionary(tmp_path / "data")  # unigram plateau 8.30 bits
    return Sweep(tmp_path / "sweep", tmp_path / "data")


def test_two_arms_that_all_diverged_are_not_testable_never_holds(tmp_path):
    sweep = _sweep(tmp_path)
    for seed in (1, 2, 3):  # every seed of both arms diverged before its first validation
        sweep.run("pre", 0, [], seed=seed, status="diverged")
        sweep.run("post", 120, [], seed=seed, status="diverged")
    outcome = preln_without_warmup_matches(load_arms(sweep.save()), MATCHES)
    assert outcome.verdict is Verdict.NOT_TESTABLE  # was "holds": failure minus failure, a zero-width interval
    comparison = outcome.cases[0].comparison
    assert comparison.a.dead and comparison.b.dead and comparison.low is None
    assert verdict_text(outcome).startswith("not testable at this scale (neither arm trained")
    row = claims_table([MATCHES], {outcome.claim_id: outcome})[-1]
    assert ("Pre-LN adam lr 0.001, no warm-up: - (3 seeds: 0 trained, 3 diverged (updates 5, 5, 5)) − Post-LN adam "
            "lr 0.001, 120 warm-up: - (3 seeds: 0 trained, 3 diverged (updates 5, 5, 5))") in row


def test_two_arms_stuck_at_the_unigram_plateau_are_not_testable(tmp_path):
    sweep = _sweep(tmp_path)
    sweep.seeds("pre", 0, [8.71, 8.72, 8.70], nll=[8.9, 8.5, 8.40])  # finished, final nll 8.40 >= 8.30
    sweep.seeds("post", 120, [8.70, 8.71, 8.69], nll=[8.9, 8.5, 8.35])
    outcome = preln_without_warmup_matches(load_arms(sweep.save()), MATCHES)
    comparison = outcome.cases[0].comparison
    assert comparison.a.failed == 3 and comparison.a.diverged == 0 and outcome.verdict is Verdict.NOT_TESTABLE


@pytest.mark.parametrize("seeds, verdict", [(3, Verdict.INCONCLUSIVE), (4, Verdict.DOES_NOT_HOLD)])
def test_one_dead_arm_decides_only_by_its_failure_count(tmp_path, seeds, verdict):
    sweep = _sweep(tmp_path)
    for seed in range(1, seeds + 1):
        sweep.run("pre", 0, [], seed=seed, status="diverged")
    sweep.seeds("post", 120, [6.80, 6.70, 6.90, 6.75][:seeds])  # trained
    outcome = preln_without_warmup_matches(load_arms(sweep.save()), MATCHES)
    comparison = outcome.cases[0].comparison
    p = scipy_stats.fisher_exact([[seeds, 0], [0, seeds]], alternative="greater").pvalue  # 0.05 at 3, 0.014 at 4
    assert comparison.failures_p == pytest.approx(p) and outcome.verdict is verdict
    assert "Fisher" in comparison.test and comparison.quality is None  # no trained Pre-LN seed: no quality


def test_a_report_on_runs_that_all_diverged_before_validating(tmp_path):
    sweep = _sweep(tmp_path)
    for seed in (1, 2, 3):
        sweep.run("pre", 0, [], seed=seed, status="diverged")
        sweep.run("post", 120, [], seed=seed, status="diverged")
    with logged() as printed:
        report = write_report(sweep.save(), tmp_path / "report.md", say_claims=True).read_text()
    assert "| Pre-LN without warm-up reaches the quality of Post-LN with warm-up." in report
    assert printed.count("  verdict: not testable at this scale (neither arm trained: no seed of either has the "
                         "quantity)") == 2  # matches, converges faster


def _decided_share(a: Sample, b: Sample, margin: float, n: int) -> float:
    """Independent of prelnx: n seeds per arm drawn normal at the observed means and sds, scipy's Welch interval,
    the share of replications whose 95 % interval lies on one side of the margin."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(a.mean, a.sd, (4000, n)), rng.normal(b.mean, b.sd, (4000, n))
    interval = scipy_stats.ttest_ind(x, y, axis=1, equal_var=False).confidence_interval(0.95)
    return float(np.mean((interval.low > margin) | (interval.high <= margin)))


def test_seeds_needed_decide_the_claim_with_80_percent_power():
    a, b = Sample("a", (7.0, 7.3, 7.6)), Sample("b", (6.3, 6.6, 6.9))  # +0.70 [-0.08, +1.48] against > +0.10
    comparison = compare("loss", a, b, above(0.1))
    assert comparison.verdict is Verdict.INCONCLUSIVE
    n = comparison.seeds_needed  # 6; the n whose half-width is the gap (0.6) was 4: about 60 % power
    assert _decided_share(a, b, 0.1, n) >= 0.8
    assert _decided_share(a, b, 0.1, n - 1) < 0.8


def test_holm_adjusts_the_smallest_p_value_most():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])  # 3 x 0.01; max(2 x 0.03, 0.04)
    assert holm([0.2]) == [0.2]


def _two_lrs(tmp_path, without: list[float], with_: list[float]):
    """Post-LN without warm-up far worse at lr 1e-3 (all trained), and (`without`, `with_`) at lr 5e-4."""
    sweep = _sweep(tmp_path)
    sweep.seeds("post", 0, [7.55, 7.60, 7.50], lr=1e-3)
    sweep.seeds("post", 120, [6.50, 6.40, 6.60], lr=1e-3)
    sweep.seeds("post", 0, without, lr=5e-4)
    sweep.seeds("post", 120, with_, lr=5e-4)
    return postln_adam_needs_warmup(load_arms(sweep.save()), SPECS["postln_adam_needs_warmup"])


def test_failing_at_some_lr_needs_holms_step_down(tmp_path):
    # lr 5e-4: +0.25 [+0.02, +0.48] at 95 %, below the margin (+0.50): p = 0.04; Holm over 2 cases: 0.08 > 0.05
    outcome = _two_lrs(tmp_path, [7.15, 7.25, 7.35], [6.90, 7.00, 7.10])
    assert outcome.verdict is Verdict.INCONCLUSIVE  # was "does not hold": the 95 % interval alone
    lr_5e4 = outcome.cases[0].comparison  # cases in lr order
    assert lr_5e4.verdict is Verdict.DOES_NOT_HOLD and lr_5e4.high < 0.5
    assert verdict_text(outcome) == ("inconclusive (does not hold at 95 % in 1 case(s), not after Holm's step-down "
                                     "over 2)")
    adjusted = holm([c.comparison.p_outside for c in outcome.cases])[0]
    assert 0.05 < adjusted == pytest.approx(2 * lr_5e4.p_outside)
    row = claims_table([SPECS["postln_adam_needs_warmup"]], {outcome.claim_id: outcome})[-1]
    assert f"; Holm step-down adjusted p = {adjusted:.3g} (> 0.05: not kept) → inconclusive" in row
    # the same lr alone is one test: no correction
    alone = postln_adam_needs_warmup([a for a in load_arms(tmp_path / "sweep") if a.lr == 5e-4],
                                     SPECS["postln_adam_needs_warmup"])  # fmt: skip
    assert alone.verdict is Verdict.DOES_NOT_HOLD


def test_a_clear_failure_at_one_lr_survives_holm_and_holding_everywhere_needs_no_correction(tmp_path):
    failing = _two_lrs(tmp_path / "a", [7.10, 7.00, 7.05], [7.00, 7.05, 6.95])
    assert failing.verdict is Verdict.DOES_NOT_HOLD
    row = claims_table([SPECS["postln_adam_needs_warmup"]], {failing.claim_id: failing})[-1]
    assert "(≤ 0.05: kept) → does not hold" in row
    # holds at both lrs, each only just at 95 % (an intersection-union test keeps 95 % per case)
    holding = _two_lrs(tmp_path / "b", [7.55, 7.60, 7.50], [6.88, 6.92, 6.96])
    assert [j.verdict for j in holding.judged()] == [Verdict.HOLDS, Verdict.HOLDS]
    assert holding.cases[0].comparison.interval(0.975)[0] < 0.5 < holding.cases[0].comparison.low
    assert holding.verdict is Verdict.HOLDS


def test_the_legend_states_the_power_and_the_multi_lr_rule():
    legend = " ".join(CLAIMS_INTRO)
    assert "80 % power" in legend and "intersection-union test, no correction" in legend
    assert "Holm's step-down" in legend and "adjusted p" in legend
