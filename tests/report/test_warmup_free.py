"""The warm-up-free section on hand-made run dirs (no training): the ranking with intervals and updates to the
target, a diverged seed counted, each kind of verdict on the methods' claims (ReZero's "converges faster" as
updates to methods.yaml's fixed target, T-Fixup's RAdam reading against Post-LN with Adam), and the section in
`prelnx report`."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from prelnx.paper import methods_data, paper_data
from prelnx.report.arms import load_arms
from prelnx.report.outcome import ClaimOutcome
from prelnx.report.render import comparison_text, method_claims_table, ranking_table
from prelnx.report.report import write_report
from prelnx.report.stats import FISHER, Verdict
from prelnx.report.warmup_free import CHECKS, check_methods, has_methods, plot_ranking, ranking
from tests.report.runs import Sweep, write_dictionary

POST_WARMUP = [6.00, 6.10, 6.05]  # the target loss at lr 1e-3: their mean, 6.05


def benchmark(tmp_path) -> Sweep:
    """A warm-up-free sweep at one lr (1e-3), warm-up 0 or 80, 3 seeds each; every final loss chosen for a verdict."""
    sweep = Sweep(tmp_path / "warmup_free", tmp_path / "data")
    write_dictionary(tmp_path / "data")  # unigram plateau log2(316) = 8.30 bits: the failure loss
    sweep.seeds("post", 80, POST_WARMUP)
    sweep.seeds("post", 0, [7.90, 8.00, 8.10])
    sweep.seeds("pre", 0, [5.90, 5.95, 6.00])
    sweep.seeds("pre", 80, [5.95, 6.00, 6.05])
    sweep.seeds("tfixup", 0, [6.00, 6.05, 6.10])  # no warm-up needed, matches Post-LN: both hold
    sweep.seeds("tfixup", 80, [6.02, 6.04, 6.06])
    sweep.seeds("rezero", 0, [7.40, 7.50, 7.45])  # trained, but needs warm-up here: does not hold ...
    sweep.run("rezero", 0, [9.0], seed=4, status="diverged")  # ... and a diverged seed is counted, not given a loss
    sweep.seeds("rezero", 80, [6.10, 6.00, 6.20])
    sweep.seeds("admin", 80, [5.90, 6.90, 6.30])  # 0.32 worse than Post-LN with a wide spread: inconclusive
    sweep.seeds("b2t", 80, [5.80, 5.85, 5.82])  # beats Pre-LN with warm-up (6.00): holds
    return sweep


def outcomes(tmp_path) -> dict:
    methods = check_methods(load_arms(benchmark(tmp_path).save()), methods_data())
    return {claim_id: outcome for m in methods for claim_id, outcome in m.outcomes.items()}


def test_every_claim_in_methods_yaml_has_a_check_and_its_source():
    for method in methods_data():
        assert {"layout", "cite", "paper", "code", "claims"} <= set(method)
        assert "name" not in method  # the display name is the layout table's (prelnx.layouts), never repeated
        for claim in method["claims"]:
            assert claim["kind"] in CHECKS and claim["claim"] and claim["source"] and claim["paper"]
            if claim["kind"] == "converges_faster":  # a fixed target stated before the runs, the paper's ratio
                assert isinstance(claim["target_loss_bits"], float) and isinstance(claim["speedup"], float)
                assert claim["margin_factor"] > 1
            else:
                assert claim["kind"] == "trains_deeper" or isinstance(claim["margin_bits"], float)


def test_same_as_takes_the_claim_from_paper_yaml():
    (pre,) = [m for m in methods_data() if m["layout"] == "pre"]
    (matches,) = [c for c in pre["claims"] if c.get("same_as")]
    (original,) = [c for c in paper_data()["training"] if c["id"] == matches["same_as"]]
    assert (matches["claim"], matches["margin_bits"]) == (original["claim"], original["margin_bits"])


def test_the_ranking_has_intervals_a_diverged_seed_and_updates_to_the_target(tmp_path):
    arms = load_arms(benchmark(tmp_path).save())
    rows = ranking(arms)
    means = [r.sample.mean for r in rows]
    assert means[:-1] == sorted(means[:-1]) and len(rows) == 10  # ranked by failure share, then the mean
    assert (rows[0].method, rows[0].warmup) == ("B2T", 80)
    post = next(r for r in rows if (r.layout, r.warmup) == ("post", 80))
    expected = scipy_stats.t.interval(0.95, 2, loc=post.sample.mean, scale=scipy_stats.sem(POST_WARMUP))
    assert (post.low, post.high) == pytest.approx(expected)
    rezero = next(r for r in rows if (r.layout, r.warmup) == ("rezero", 0))
    assert rezero.sample.n == 4 and rezero.sample.failed == 1 and rezero.sample.values == (7.40, 7.50, 7.45)
    assert rezero is rows[-2] and rezero.reached == 0  # a failed seed ranks it behind every arm without one ...
    assert (rows[-1].layout, rows[-1].warmup, rows[-1].sample.failed) == ("post", 0, 3)  # ... but one that all failed
    tfixup = next(r for r in rows if (r.layout, r.warmup) == ("tfixup", 0))
    assert tfixup.target == pytest.approx(6.05) and tfixup.updates_to_target == (30, 30)  # 6.00, 6.05 <= 6.05
    table = ranking_table(rows)
    assert "| 9 | ReZero | adam | none | 0.001 | 7.45 ± 0.05 | [" in table[-2]
    assert table[-2].endswith("| 4 | 4 seeds: 3 trained, 1 diverged (update 10) | 6.05 | 0/4 |")
    assert "| 10 | Post-LN | adam | none | 0.001 | - | - (< 2 trained seeds) | 3 | 3 seeds: 0 trained, 3 failed" in table[-1]
    assert any("| T-Fixup | adam | none | 0.001 | 6.05 ± 0.05 | [" in line and "2/3, after 30 updates" in line
               for line in table)  # fmt: skip


def test_the_claims_hold_do_not_hold_or_are_inconclusive_by_their_intervals(tmp_path):
    found = outcomes(tmp_path)
    assert found["tfixup_no_warmup"].verdict is Verdict.HOLDS
    assert found["tfixup_matches_postln"].verdict is Verdict.HOLDS
    assert found["b2t_beats_preln"].verdict is Verdict.HOLDS
    rezero = found["rezero_no_warmup"]
    assert rezero.verdict is Verdict.DOES_NOT_HOLD and rezero.cases[0].comparison.low > 0.5
    assert rezero.cases[0].comparison.a.failed == 1 and rezero.cases[0].comparison.a.measured == 3
    admin = found["admin_matches_postln"].cases[0].comparison
    assert found["admin_matches_postln"].verdict is Verdict.INCONCLUSIVE and admin.low < 0.5 < admin.high
    assert admin.seeds_needed > 3
    faster = found["rezero_converges_faster"]  # ReZero's seeds never reach 6.5 bits, Post-LN's at update 30
    assert faster.verdict is not Verdict.HOLDS and faster.cases[0].comparison.a.failed == 4
    assert found["b2t_matches_postln"].verdict is Verdict.HOLDS


def test_trains_deeper_is_not_measured_by_a_one_depth_sweep(tmp_path):
    found = outcomes(tmp_path)
    for claim_id in ("admin_trains_deeper", "tfixup_trains_deeper", "rezero_trains_deeper", "b2t_trains_deeper"):
        assert found[claim_id].verdict is Verdict.NOT_MEASURED and "one depth" in found[claim_id].missing


def test_the_claims_table_names_each_method_source_and_verdict(tmp_path):
    methods = check_methods(load_arms(benchmark(tmp_path).save()), methods_data())
    table = method_claims_table(methods)
    (row,) = [line for line in table if line.startswith("| **T-Fixup**: T-Fixup eliminates")]
    assert "Huang et al. 2020, Abstract, Section 4 (github.com/layer6ai-labs/T-Fixup)" in row
    assert ("adam lr 0.001: final valid loss (bits): T-Fixup adam lr 0.001, no warm-up at update 30: 6.05 (3 seeds) "
            "− T-Fixup adam lr 0.001, 80 warm-up") in row
    assert row.endswith("| **holds** |")
    assert any(line.startswith("- B2T, not claimed: no warm-up") for line in table)
    assert "DeepNorm" not in "\n".join(table)  # not in the sweep: no rows


def test_the_report_has_the_section_and_its_figure(tmp_path):
    sweep_dir = benchmark(tmp_path).save()
    report = write_report(sweep_dir, tmp_path / "out" / "wf.md").read_text()
    section = report.split("## Warm-up-free methods")[1].split("## Results")[0]
    assert "### The methods' authors' claims" in section and "### Ranking by final valid loss" in section
    assert "| 1 | B2T | adam | 80 | 0.001 | 5.82 ± 0.03 |" in section
    figure = tmp_path / "out" / "wf_figures" / "warmup_free.png"
    assert "![warmup_free](wf_figures/warmup_free.png)" in section
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000


def test_a_sweep_without_the_methods_has_no_section(tmp_path):
    sweep = Sweep(tmp_path / "paper", tmp_path / "data")
    sweep.seeds("post", 80, POST_WARMUP)
    sweep.seeds("pre", 0, [5.90, 5.95, 6.00])
    arms = load_arms(sweep.save())
    assert not has_methods(arms)
    assert "Warm-up-free" not in write_report(sweep.folder, tmp_path / "paper.md").read_text()


TARGET = next(claim["target_loss_bits"] for method in methods_data() for claim in method["claims"]
              if claim["id"] == "rezero_converges_faster")


def _reaching(at: int, length: int, final: float = 6.4) -> list[float]:
    """A curve of validations 10 updates apart that first reaches the target (6.5 bits) at update `at`."""
    return [7.0] * (at // 10 - 1) + [6.45] + [final] * (length - at // 10)


def _rezero_against_post(tmp_path, rezero: tuple[int, ...], post: tuple[int, ...], finals=(6.4, 5.9)) -> ClaimOutcome:
    """ReZero without warm-up reaching 6.5 bits at `rezero`'s updates, Post-LN with warm-up at `post`'s."""
    sweep = Sweep(tmp_path / "warmup_free", write_dictionary(tmp_path / "data") and tmp_path / "data")
    length = max(rezero + post) // 10 + 1
    for seed, at in enumerate(rezero, start=1):
        sweep.run("rezero", 0, _reaching(at, length, finals[0]), seed=seed)
    for seed, at in enumerate(post, start=1):
        sweep.run("post", 80, _reaching(at, length, finals[1]), seed=seed)
    sweep.seeds("rezero", 80, [6.0, 6.1, 6.2])
    (outcome,) = [m.outcomes["rezero_converges_faster"] for m in check_methods(load_arms(sweep.save()), methods_data())
                  if m.spec["layout"] == "rezero"]  # fmt: skip
    return outcome


def test_converges_faster_is_the_papers_ratio_of_updates_to_the_fixed_target(tmp_path):
    """ReZero's paper: 56 % faster to a fixed loss (1.2 BPB), a ratio of 1/1.56 = 0.64. ReZero reaches methods.yaml's
    target (6.5 bits) at updates 160, 170, 160 and Post-LN with warm-up at 250, 260, 260, although ReZero ends worse
    (6.4 against 5.9): a ratio of 0.64, whose interval (Welch's t on ln updates, widened by the grain's log
    resolution ln(160 / 151)) lies inside [0.64 / 1.25, 0.64 x 1.25]: holds."""
    assert TARGET == 6.5
    outcome = _rezero_against_post(tmp_path, (160, 170, 160), (250, 260, 260))
    (case,) = outcome.cases
    c = case.comparison
    assert c.a.values == pytest.approx(tuple(math.log(u) for u in (160, 170, 160)))
    assert c.b.values == pytest.approx(tuple(math.log(u) for u in (250, 260, 260)))
    assert math.exp(c.estimate) == pytest.approx(
        scipy_stats.gmean([160, 170, 160]) / scipy_stats.gmean([250, 260, 260]))  # fmt: skip
    assert c.region == pytest.approx((math.log(1 / 1.56 / 1.25), math.log(1 / 1.56 * 1.25)))
    se = math.sqrt(statistics.variance(c.a.values) / 3 + statistics.variance(c.b.values) / 3)
    welch = scipy_stats.ttest_ind(c.a.values, c.b.values, equal_var=False).confidence_interval(0.95)
    assert c.grain == pytest.approx(math.log(160 / 151)) and se > 0
    assert (c.low, c.high) == pytest.approx((welch.low - c.grain, welch.high + c.grain))
    assert case.premise.state.value == "met" and outcome.verdict is Verdict.HOLDS
    assert c.metric == "updates to valid loss 6.5 bits, ratio"
    text = comparison_text(c)
    assert (" / Post-LN adam lr 0.001, 80 warm-up at updates 250-260: geometric mean 256.6 (3 seeds) = 0.64 "
            "[95 % CI") in text
    assert "claimed in [0.51, 0.80]" in text and "Welch's t over the seeds that reached it, on ln(updates)" in text
    assert outcome.notes[:1] == ['the paper\'s ratio: 1/1.56 = 0.64 ("56% faster"), claimed within a factor 1.25 of it: '
                             '[0.51, 0.80]']  # fmt: skip


def test_converges_faster_tests_the_number_not_the_sign(tmp_path):
    """ReZero four times faster (60, 70, 60 against 250, 260, 260): faster, which the old claim ("ReZero's updates
    minus Post-LN's below 0") called a hold, but a ratio of 0.24, far outside the paper's 0.64 within its factor:
    does not hold. As fast as Post-LN (a ratio of 1): does not hold either."""
    faster = _rezero_against_post(tmp_path / "faster", (60, 70, 60), (250, 260, 260))
    c = faster.cases[0].comparison
    assert c.high < 0 and math.exp(c.high) < 1 / 1.56 / 1.25  # faster, and beyond the paper's number
    assert faster.verdict is Verdict.DOES_NOT_HOLD
    same = _rezero_against_post(tmp_path / "same", (250, 260, 250), (250, 260, 260))
    assert same.verdict is Verdict.DOES_NOT_HOLD and math.exp(same.cases[0].comparison.low) > 1 / 1.56 * 1.25


def test_converges_faster_with_a_dead_arm_is_decided_by_the_failure_counts_or_not_at_all(tmp_path):
    """One ReZero seed reaches the target (the others never do): < 2 seeds with the quantity, so no interval; the
    failure counts (2/3 vs 0/3) are not significant: inconclusive, never a ratio from one seed."""
    sweep = Sweep(tmp_path / "warmup_free", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.run("rezero", 0, _reaching(160, 27), seed=1)
    for seed in (2, 3):
        sweep.run("rezero", 0, [7.0] * 27, seed=seed)  # finished, trained (7.0 - 0.3 nll below 7.30), never at 6.5
    for seed, at in enumerate((250, 260, 260), start=1):
        sweep.run("post", 80, _reaching(at, 27, 5.9), seed=seed)
    (outcome,) = [m.outcomes["rezero_converges_faster"] for m in check_methods(load_arms(sweep.save()), methods_data())
                  if m.spec["layout"] == "rezero"]  # fmt: skip
    c = outcome.cases[0].comparison
    assert c.a.measured == 1 and c.a.failed == 2 and c.low is None
    assert outcome.verdict is Verdict.INCONCLUSIVE and c.reason == "1 trained seed in ReZero adam lr 0.001, no warm-up"
    assert c.failures_p == pytest.approx(0.2)  # Fisher one-sided, 2/3 vs 0/3

    dead = Sweep(tmp_path / "dead", tmp_path / "data")  # 5 ReZero seeds never reach it, 5 Post-LN seeds do
    for seed in range(1, 6):
        dead.run("rezero", 0, [7.0] * 27, seed=seed)
        dead.run("post", 80, _reaching(250, 27, 5.9), seed=seed)
    (outcome,) = [m.outcomes["rezero_converges_faster"] for m in check_methods(load_arms(dead.save()), methods_data())
                  if m.spec["layout"] == "rezero"]  # fmt: skip
    c = outcome.cases[0].comparison
    assert c.a.values == () and c.low is None and c.failures_p == pytest.approx(1 / 252)  # 5/5 vs 0/5
    assert outcome.verdict is Verdict.DOES_NOT_HOLD and c.test == FISHER  # decided by the counts


def test_converges_faster_is_not_testable_when_post_ln_never_reaches_the_target(tmp_path):
    """The premise: the baseline reaches the fixed target. Post-LN with warm-up stuck above 6.5 bits in every seed
    says nothing about "faster than Post-LN" - not testable, even though ReZero reached the target."""
    sweep = Sweep(tmp_path / "warmup_free", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.seeds("rezero", 0, [6.0, 6.1, 6.2])
    sweep.seeds("post", 80, [6.9, 7.0, 6.8])
    (outcome,) = [m.outcomes["rezero_converges_faster"] for m in check_methods(load_arms(sweep.save()), methods_data())
                  if m.spec["layout"] == "rezero"]  # fmt: skip
    assert outcome.cases[0].premise.state.value == "failed" and outcome.verdict is Verdict.NOT_TESTABLE
    b = outcome.cases[0].comparison.b  # never reached: counted, never given an update count it did not reach
    assert b.values == () and b.failed == 3 and b.failure == "did not reach the target"


def test_tfixups_radam_reading_is_compared_with_post_ln_as_the_authors_trained_it(tmp_path):
    """methods.yaml's postln_optimizer: T-Fixup's RAdam arm (the other reading of the authors' optimizer) matches
    Post-LN with Adam and warm-up; its no-warm-up claim compares RAdam with RAdam."""
    sweep = Sweep(tmp_path / "warmup_free", tmp_path / "data")
    sweep.seeds("post", 80, POST_WARMUP)
    for optimizer in ("adam", "radam"):
        sweep.seeds("tfixup", 0, [6.00, 6.05, 6.10], optimizer=optimizer)
        sweep.seeds("tfixup", 80, [6.02, 6.04, 6.06], optimizer=optimizer)
    methods = check_methods(load_arms(sweep.save()), methods_data())
    (tfixup,) = [m for m in methods if m.spec["layout"] == "tfixup"]
    matches = tfixup.outcomes["tfixup_matches_postln"].cases
    assert [c.label for c in matches] == ["adam lr 0.001", "radam lr 0.001"]
    assert matches[1].comparison.a.label == "T-Fixup radam lr 0.001, no warm-up"
    assert matches[1].comparison.b.label == "Post-LN adam lr 0.001, 80 warm-up"
    no_warmup = tfixup.outcomes["tfixup_no_warmup"].cases
    assert no_warmup[1].comparison.b.label == "T-Fixup radam lr 0.001, 80 warm-up"
    rows = ranking(load_arms(sweep.folder))
    readings = {(r.method, r.optimizer) for r in rows if r.layout == "tfixup"}
    assert readings == {("T-Fixup", "adam"), ("T-Fixup", "radam")}
    figure = plot_ranking(rows, tmp_path / "wf.png")  # one line per reading: "T-Fixup (adam)", "T-Fixup (radam)"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # nine figures drawn; tests/test_layers.py's pyplot guard is the quick check
def test_the_ranking_figure_is_drawn_without_pyplot_and_alike_from_threads(tmp_path):
    """A sweep reports from threads: the figure is matplotlib's object API (no pyplot's shared registry of open
    figures), and four threads drawing at once write the bytes one alone writes."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    folder = benchmark(tmp_path).save()
    code = ("import sys; from pathlib import Path; "
            "from prelnx.report.arms import load_arms; from prelnx.report.warmup_free import ranking; "
            "from prelnx.report.warmup_free import plot_ranking; "
            f"plot_ranking(ranking(load_arms(Path({str(folder)!r}))), "
            f"Path({str(tmp_path / 'alone.png')!r})); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = ranking(load_arms(folder))
    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda i: plot_ranking(rows, tmp_path / f"thread{i}.png"), range(4)))
    alone = (tmp_path / "alone.png").read_bytes()
    assert all(path.read_bytes() == alone for path in paths)


def test_a_grain_wider_than_the_claimed_band_says_no_number_of_seeds_decides_it():
    """The committed benchmark's case: validations 40 updates apart, ReZero at update 120 - known to a factor
    120 / 81 = 1.48, wider than the band's 1.25 either way - so no interval can lie inside it: the verdict says so."""
    from prelnx.report.stats import Sample, compare
    from prelnx.report.warmup_free import log_grain, ratio_band

    (spec,) = [c for m in methods_data() for c in m["claims"] if c["id"] == "rezero_converges_faster"]
    a = Sample("ReZero", tuple(math.log(u) for u in (120, 160, 120)), grain=log_grain(120, 40), log=True)
    b = Sample("Post-LN", tuple(math.log(u) for u in (160, 200, 200)), grain=log_grain(160, 40), log=True)
    c = compare("updates, ratio", a, b, ratio_band(spec))
    assert log_grain(120, 40) == pytest.approx(math.log(120 / 81)) and log_grain(40, 40) == pytest.approx(math.log(40))
    assert c.verdict is Verdict.INCONCLUSIVE and "the grain alone is as wide as the claimed region" in c.reason
