"""Issue 46 (the verdict engine, round four), each finding on hand-made run dirs (tests/report/runs.py, no
training); each failed on the engine at 0999619 and passes now. Finding 3 (the prediction engine) is another
engineer's (tests/report/test_why_warmup*.py). Plateau 8.30 bits (a uniform 316-word dictionary); runs.py writes
nll = loss - 0.3 unless given, so a seed trained when its final nll is <= 7.30 (paper.yaml's trained_margin_bits)."""

from __future__ import annotations

import math

import pytest

from prelnx.paper import methods_data
from prelnx.report.arms import load_arms
from prelnx.report.render import method_claims_table
from prelnx.report.stats import Verdict
from prelnx.report.warmup_free import check_methods
from tests.report.runs import Sweep, write_dictionary


def _sweep(tmp_path, name: str = "sweep") -> Sweep:
    write_dictionary(tmp_path / "data")
    return Sweep(tmp_path / name, tmp_path / "data")


def _reaching(at: int, length: int, final: float, every: int = 10) -> list[float]:
    """Validations `every` updates apart: 7.0 until `at`, where the curve first reaches 6.5 bits (6.45), then
    `final`."""
    return [7.0] * (at // every - 1) + [6.45] + [final] * (length - at // every)


def _method(sweep: Sweep, layout: str, claim: str):
    methods = check_methods(load_arms(sweep.save()), methods_data())
    (found,) = [m for m in methods if m.spec["layout"] == layout]
    return found, found.outcomes[claim]


def test_finding_1_a_seed_that_reached_the_target_reached_it_whatever_its_final_loss(tmp_path):
    """ReZero reaches 6.5 bits at update 60 (65) in 4/4 seeds, Post-LN with warm-up at 100 (105): ratio ~0.6, inside
    the claimed [0.51, 0.80]; ReZero then ends at 7.9 bits (nll 7.6, above the 7.30 trained threshold): "failed to
    train" is its class, a separate column; it still reached the target, so the claim holds (was: 0 reached it,
    failures 4/4 vs 0/4, Fisher p = 0.0143, does not hold)."""
    sweep = _sweep(tmp_path)
    for seed, (mine, post) in enumerate(((60, 100), (60, 100), (65, 105), (60, 100)), start=1):
        sweep.run("rezero", 0, _reaching(mine, 48, 7.9, 5), seed=seed, every=5)
        sweep.run("post", 80, _reaching(post, 48, 5.9, 5), seed=seed, every=5)
    method, outcome = _method(sweep, "rezero", "rezero_converges_faster")
    (case,) = outcome.cases
    a, b = case.comparison.a, case.comparison.b
    assert a.values == pytest.approx(tuple(math.log(u) for u in (60, 60, 65, 60))) and a.failed == 0
    assert b.measured == 4 and case.premise.state.value == "met"
    assert outcome.verdict is Verdict.HOLDS
    assert any("ReZero adam lr 0.001, no warm-up: 4 failed to train" in note for note in outcome.notes)
    table = "\n".join(method_claims_table([method]))
    assert "(4 seeds)" in table and "4 failed to train" in table  # the reading and the class, apart


def test_finding_1_a_seed_that_never_reached_the_target_did_not_whatever_its_class(tmp_path):
    """The converse: a trained seed whose curve never goes below the target did not reach it; a diverged seed that
    reached it before diverging did."""
    sweep = _sweep(tmp_path)
    sweep.run("rezero", 0, [7.0] * 24, seed=1)  # trained (nll 6.7), never at 6.5
    sweep.run("rezero", 0, _reaching(60, 8, 6.2), seed=2, status="diverged")  # reached it at 60, then diverged
    sweep.run("rezero", 0, _reaching(70, 24, 6.2), seed=3)
    for seed in (1, 2, 3):
        sweep.run("post", 80, _reaching(100, 24, 5.9), seed=seed)
    _, outcome = _method(sweep, "rezero", "rezero_converges_faster")
    a = outcome.cases[0].comparison.a
    assert a.values == pytest.approx((math.log(60), math.log(70))) and a.failed == 1 and a.diverged == 0
