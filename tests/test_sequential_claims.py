"""The claims at a look (prelnx/report/sequential.py): the engine's verdicts made stricter by the plan's nominal
levels, Holm with group-sequential boundaries, futility, and the decider on hand-made run dirs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from prelnx.report.outcome import Case, ClaimOutcome
from prelnx.report.sequential import at_level, case_verdicts, claim_state, decide_look
from prelnx.report.stats import Sample, Verdict, above, below, compare
from prelnx.sequential import ClaimState, SeedPlan
from tests.report.runs import Sweep, write_dictionary

PLAN = SeedPlan((4, 6, 8))


def spread(mean: float, sd: float, n: int, seed: int = 0) -> tuple[float, ...]:
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(n)]
    centre = sum(values) / n
    scale = (sum((v - centre) ** 2 for v in values) / (n - 1)) ** 0.5
    return tuple(mean + sd * (v - centre) / scale for v in values)  # exactly this mean and sd


def test_a_fixed_level_verdict_is_not_a_first_look_verdict():
    """t = 3.2 on 6 df: holds at the fixed design's 0.025 (t_.975 = 2.45), not at the first OBF look (p_1 = 0.0015):
    re-testing the fixed interval at each look is exactly what inflates the error."""
    a, b = Sample("a", spread(1.5, 0.44, 4)), Sample("b", spread(0.0, 0.44, 4, 1))
    c = compare("loss", a, b, above(0.5))
    assert c.verdict is Verdict.HOLDS
    assert at_level(c, PLAN.nominal(0)) is Verdict.INCONCLUSIVE
    assert at_level(c, PLAN.nominal(2)) is Verdict.HOLDS  # the last look's level is close to 0.025
    far = compare("loss", Sample("a", spread(3.0, 0.1, 4)), Sample("b", spread(0.0, 0.1, 4, 1)), above(0.5))
    assert at_level(far, PLAN.nominal(0)) is Verdict.HOLDS


def test_failure_counts_need_the_looks_level():
    """4 of 4 failed against 0 of 4: Fisher's one-sided p = 1/70 = 0.014 decides a fixed design, not look 1."""
    failed, trained = Sample("a", (), failed=4), Sample("b", spread(4.0, 0.1, 4))
    c = compare("loss", failed, trained, above(0.5))
    assert c.verdict is Verdict.HOLDS and c.failures_p == pytest.approx(1 / 70)
    assert at_level(c, PLAN.nominal(0)) is Verdict.INCONCLUSIVE
    eight = compare("loss", Sample("a", (), failed=8), Sample("b", spread(4.0, 0.1, 8)), above(0.5))
    assert at_level(eight, PLAN.nominal(2)) is Verdict.HOLDS  # 1/12870 at the last look


def test_holm_step_down_uses_boundaries_at_reduced_alpha():
    """Two cases that each "do not hold" at the look's own level: Holm keeps the first only if it clears alpha / 2's
    boundary; a case kept at the full level alone is inconclusive once a second case shares the family."""
    b = Sample("b", spread(0.0, 0.3, 8, 2))
    strong = Case("lr 1", compare("loss", Sample("a", spread(0.14, 0.3, 8)), b, above(0.5)))
    c = strong.comparison
    one_sided = c.p_outside / 2
    assert c.verdict is Verdict.DOES_NOT_HOLD and one_sided <= PLAN.nominal(2)
    alone = case_verdicts(ClaimOutcome("x", [strong]), PLAN, 2)
    assert alone == [Verdict.DOES_NOT_HOLD]
    assert PLAN.nominal(2, 0.025 / 2) < one_sided  # between the two levels: Holm must demote both
    assert case_verdicts(ClaimOutcome("x", [strong, strong]), PLAN, 2) == [Verdict.INCONCLUSIVE] * 2
    far = Case("lr 2", compare("loss", Sample("a", spread(-0.9, 0.3, 8)), b, above(0.5)))
    # the far case clears alpha / 2's boundary, then the step-down tests the other at the full level: both stand
    assert case_verdicts(ClaimOutcome("x", [strong, far]), PLAN, 2) == [Verdict.DOES_NOT_HOLD] * 2


def test_futility_at_the_margin_and_not_when_close():
    at_margin = compare("loss", Sample("a", spread(0.5, 0.3, 4)), Sample("b", spread(0.0, 0.3, 4, 1)), below(0.5))
    state, verdict = claim_state(ClaimOutcome("x", [Case("c", at_margin)]), PLAN, 0)
    assert (state, verdict) == (ClaimState.FUTILE, Verdict.INCONCLUSIVE)
    leaning = compare("loss", Sample("a", spread(0.2, 0.3, 4)), Sample("b", spread(0.0, 0.3, 4, 1)), below(0.5))
    assert claim_state(ClaimOutcome("x", [Case("c", leaning)]), PLAN, 0)[0] is ClaimState.OPEN
    assert claim_state(ClaimOutcome("x", [Case("c", at_margin)]), SeedPlan((4, 6, 8), futility=0), 0)[0] \
        is ClaimState.OPEN


def test_futility_reads_the_failure_counts_as_a_route_too():
    """Study A's short warm-up at look 1: 2 of 4 seeds failed at the larger lr, none at the smaller (Fisher p = 0.21),
    and the trained seeds sit at the margin, where they alone cannot reach either side by the last look. The counts
    can (5 of 8 failed against 0 of 8 decides there): the claim stays open. Without the failures it is futile."""
    trained = Sample("b", spread(6.96, 0.3, 4, 1))
    at_margin = compare("loss", Sample("a", spread(7.46, 0.3, 4, 2)), trained, above(0.5))
    assert claim_state(ClaimOutcome("x", [Case("c", at_margin)]), PLAN, 0)[0] is ClaimState.FUTILE
    split = compare("loss", Sample("a", spread(7.46, 0.3, 2, 2), failed=2), trained, above(0.5))
    assert split.failures_p == pytest.approx(3 / 14) and split.se  # both routes are there
    assert claim_state(ClaimOutcome("x", [Case("c", split)]), PLAN, 0)[0] is ClaimState.OPEN


def hand_made(tmp_path, pre_minus_post: float):
    data = tmp_path / "data"
    write_dictionary(data)  # plateau 8.30 bits: a final nll below 7.30 trained
    sweep = Sweep(tmp_path / "sweep", data)
    groups: dict[str, tuple[str, ...]] = {}
    for arm, layout, warmup, finals in (("post_w0", "post", 0, spread(6.5, 0.05, 4)),
                                        ("post_w4000", "post", 4000, spread(4.0, 0.3, 4, 1)),
                                        ("pre_w0", "pre", 0, spread(4.0 + pre_minus_post, 0.3, 4, 2))):
        groups[arm] = tuple(sweep.run(layout, warmup, [9.0, (9.0 + f) / 2, f], seed=s + 1)
                            for s, f in enumerate(finals))  # fmt: skip
    return sweep.save(), groups


def test_the_decider_settles_one_claim_and_keeps_one_open(tmp_path):
    folder, groups = hand_made(tmp_path, 0.2)
    claims = {c.claim: c for c in decide_look(folder, groups, PLAN, 0)}
    needs = claims["postln_adam_needs_warmup"]
    assert (needs.state, needs.verdict) == (ClaimState.DECIDED, "holds")
    assert set(needs.arms) == {"post_w0", "post_w4000"} and needs.runs == 8
    matches = claims["preln_without_warmup_matches"]
    assert (matches.state, matches.verdict) == (ClaimState.OPEN, "inconclusive")
    assert set(matches.arms) == {"pre_w0", "post_w4000"}  # the comparator: Post-LN with warm-up, not without
    assert claims["layout_matters_more_than_optimizer"].state is ClaimState.NOT_MEASURED  # no RAdam arm


def test_the_decider_reads_only_the_runs_of_its_look(tmp_path):
    folder, groups = hand_made(tmp_path, 0.2)
    fewer = {arm: runs[:2] for arm, runs in groups.items()}
    claims = {c.claim: c for c in decide_look(folder, fewer, PLAN, 0)}
    assert claims["postln_adam_needs_warmup"].runs == 4



def test_a_claim_reads_the_arm_its_premise_reads(tmp_path):
    """Study A's first look (its committed raw data, seeds 1-4): short_warmup_large_lr's premise reads Post-LN with
    its longest warm-up (120) at the larger lr, an arm its comparison never uses; removing that arm leaves the
    verdict inconclusive but changes the premise, so the claim reads it (it got no seeds while the claim was open
    when the map compared verdicts only - issue 47's study simulation found it)."""
    import importlib.util
    import json

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("rebuild_reports", root / "scripts" / "rebuild_reports.py")
    rebuild_reports = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rebuild_reports)
    folder = rebuild_reports._unpacked(rebuild_reports.raw_dir("cpu_multi30k", root), tmp_path / "study_a")
    groups: dict[str, list[str]] = {}
    for point in json.loads((folder / "sweep.json").read_text())["runs"]:
        arm, _, seed = point["name"].rpartition("_seed-")
        if int(seed) <= 4:
            groups.setdefault(arm, []).append(point["name"])
    claims = {c.claim: c for c in decide_look(folder, {k: tuple(v) for k, v in groups.items()}, PLAN, 0)}
    assert set(claims["short_warmup_large_lr"].arms) == {"layout-post_opt-adam_warmup-30_lr-0.0005",
                                                         "layout-post_opt-adam_warmup-30_lr-0.001",
                                                         "layout-post_opt-adam_warmup-120_lr-0.001"}
