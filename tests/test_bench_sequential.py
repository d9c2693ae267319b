"""scripts/bench_sequential.py's study scenario (part 3), its plumbing only: study A's committed runs read into arms
and claims, the look-by-look rule (an arm gets seeds only while a claim reading it is open), and the fixed design's
accounting (an arm shared by claims paid once, at the most any of them needs). A few sweeps: no rate is asserted
(the 20,000-sweep numbers are in docs/sequential.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from prelnx.report import stats
from prelnx.sequential import ClaimState

ROOT = Path(__file__).resolve().parent.parent
POST_WARMUP = "layout-post_opt-adam_warmup-120_lr-0.001"  # A6: the premise or comparator of several claims
pytestmark = pytest.mark.slow  # reads 64 committed runs and simulates: seconds


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("bench_sequential_study", ROOT / "scripts/bench_sequential_study.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    sys.path.remove(str(ROOT / "scripts"))
    return module


@pytest.fixture(scope="module")
def study(bench):
    return bench.load_study()


@pytest.fixture(autouse=True)
def no_advice(monkeypatch):
    monkeypatch.setattr(stats, "seeds_needed", lambda *_, **__: None)  # as the script does: advice only


def test_the_study_is_read_from_its_committed_runs(study):
    assert len(study.arms) == 10 and study.plan.looks == (4, 6, 8)
    assert set(study.reads) == {"postln_adam_needs_warmup", "short_warmup_large_lr", "postln_sgd_needs_warmup",
                                "preln_without_warmup_matches", "preln_converges_faster",
                                "layout_matters_more_than_optimizer"}  # fmt: skip
    assert sum(POST_WARMUP in arms for arms in study.reads.values()) >= 3  # shared between claims
    assert study.arms["layout-post_opt-sgd_warmup-0_lr-0.03"].share == 1.0  # 8 of 8 failed to train
    assert study.arms["layout-post_opt-adam_warmup-0_lr-0.001"].share == pytest.approx(5 / 6)
    assert sum(arm.seeds for arm in study.arms.values()) == 64


def test_an_arm_gets_seeds_only_while_a_claim_reading_it_is_open(bench, study):
    rng = np.random.default_rng(3)
    looks, stopped_early = study.plan.looks, 0
    for _ in range(6):
        have, claims = bench.sweep(study, rng)
        assert set(claims) == set(study.reads)
        assert all(c.state in (ClaimState.DECIDED, ClaimState.FUTILE, ClaimState.LAST) for c in claims.values())
        for arm, seeds in have.items():
            last = max(claims[c].look for c, arms in study.reads.items() if arm in arms)
            assert seeds == looks[last], arm  # the look after its last open claim stopped: no more seeds
        stopped_early += sum(seeds < looks[-1] for seeds in have.values())
    assert stopped_early  # some arm stopped before the last look (else the check above is idle)


def test_the_fixed_design_pays_a_shared_arm_once_at_its_largest_need(bench, study):
    result = bench.simulate_study(study, sweeps=2, seed=0, reps=4)
    assert result.expected["preln_converges_faster"] is None  # its two reads disagree: no power to match
    assert result.fixed_n["preln_converges_faster"] == study.plan.looks[-1]
    for arm, seeds in result.fixed_arm_seeds.items():
        assert seeds == max(n for c, n in result.fixed_n.items() if arm in study.reads[c])
    assert result.fixed_runs == sum(result.fixed_arm_seeds.values())
    assert result.ratio == pytest.approx(result.plan_runs / result.fixed_runs)
    assert result.plan_runs == pytest.approx(sum(result.arm_seeds.values()))
