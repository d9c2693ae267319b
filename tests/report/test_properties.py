"""The verdict engine against random hand-made sweeps (hypothesis; tests/report/runs.py, no training): dead arms, NaN
losses, finished seeds without a validation row, unequal seeds, losses on a coarse validation grain, no
dictionary. Invariants: the report is always written; no "holds" / "does not hold" from an arm with < 2 trained
seeds unless the failure counts decided it by the exact test (p <= 0.025); the verdicts do not move when an
unrelated arm joins the sweep, nor with the losses a diverged seed logged before it diverged (the values an engine
would impute from); every finished or diverged seed is counted."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prelnx.paper import paper_data
from prelnx.report.arms import load_arms
from prelnx.report.claims import TRAINING_CHECKS
from prelnx.report.report import write_report
from prelnx.report.stats import ALPHA_ONE_SIDED, FISHER, Verdict
from tests.report.runs import Sweep, write_dictionary

CLAIMS = [c for c in paper_data()["training"]
          if c["id"] in ("postln_adam_needs_warmup", "preln_without_warmup_matches", "preln_converges_faster")]  # fmt: skip
ARMS = (("post", 0), ("post", 120), ("pre", 0))
KINDS = ("trained", "failed", "diverged_before", "diverged_after", "nan", "no_validation")
DECIDED = (Verdict.HOLDS, Verdict.DOES_NOT_HOLD)

seed_kind = st.tuples(st.sampled_from(("trained",) * 4 + KINDS), st.sampled_from((6.0, 7.0, 9.0)))  # ties: grain-valued
arm_seeds = st.lists(seed_kind, min_size=1, max_size=4)
sweeps = st.fixed_dictionaries({
    "arms": st.tuples(*(arm_seeds for _ in ARMS)),
    "unrelated": arm_seeds,
    "every": st.sampled_from((10, 46)),
    "dictionary": st.booleans(),
})  # fmt: skip


def _curve(kind: str, value: float, diverged_loss: float) -> tuple[list[float], str]:
    """The validation losses and status of one seed of this kind (runs.py writes nll = loss - 0.3)."""
    trained = min(value, 7.6)  # <= 7.60: nll 1 bit below the 8.30 plateau
    failed = max(value, 7.7)
    return {
        "trained": ([9.0, (9.0 + trained) / 2, trained], "finished"),
        "failed": ([9.0, (9.0 + failed) / 2, failed], "finished"),
        "diverged_before": ([], "diverged"),
        "diverged_after": ([9.0, diverged_loss], "diverged"),
        "nan": ([9.0, float("nan")], "finished"),
        "no_validation": ([], "finished"),
    }[kind]


def _write(folder: Path, spec: dict, unrelated: bool, diverged_loss: float) -> Path:
    data = folder / "data"
    if spec["dictionary"]:
        write_dictionary(data)
    sweep = Sweep(folder / "sweep", data)
    for (layout, warmup), seeds in zip(ARMS, spec["arms"]):
        for seed, (kind, value) in enumerate(seeds, start=1):
            losses, status = _curve(kind, value, diverged_loss)
            sweep.run(layout, warmup, losses, seed=seed, status=status, every=spec["every"])
    if unrelated:  # Post-LN SGD: no claim here compares it
        for seed, (kind, value) in enumerate(spec["unrelated"], start=1):
            losses, status = _curve(kind, value, diverged_loss)
            sweep.run("post", 0, losses, seed=seed, status=status, optimizer="sgd", lr=1e-4, every=spec["every"])
    return sweep.save()


def _outcomes(sweep_dir: Path) -> dict:
    arms = load_arms(sweep_dir)
    return {c["id"]: TRAINING_CHECKS[c["id"]](arms, c) for c in CLAIMS}


def _signature(outcomes: dict) -> dict:
    return {cid: (o.verdict, [(j.verdict, j.case.comparison.a.n, j.case.comparison.b.n) for j in o.judged()])
            for cid, o in outcomes.items()}  # fmt: skip


TIES = {"arms": ([("trained", 6.0)] * 2,) * 3, "unrelated": [("diverged_after", 6.0)], "every": 10,
        "dictionary": True}  # every seed alike: a zero-width interval


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sweeps, diverged_loss=st.sampled_from((9.5, 1.7e8)))
@example(spec=TIES, diverged_loss=1.7e8)
def test_no_verdict_from_non_evidence_and_none_moved_by_what_is_unrelated(spec, diverged_loss):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        plain = _outcomes(_write(root / "plain", spec, False, 9.5))
        extra = _outcomes(_write(root / "extra", spec, True, diverged_loss))
    assert _signature(plain) == _signature(extra)  # an unrelated arm, other pre-divergence losses: nothing moves
    counted = {arm: sum(1 for _ in seeds) for arm, seeds in zip(ARMS, spec["arms"])}
    for outcome in plain.values():
        for judged in outcome.judged():
            c = judged.case.comparison
            for sample in (c.a, c.b):  # every finished or diverged seed is counted
                assert sample.n == sample.measured + sample.failed + sample.missing + sample.unjudged
            if c.verdict in DECIDED:
                if c.test == FISHER:
                    assert c.failures_p is not None and c.failures_p <= ALPHA_ONE_SIDED
                else:
                    assert c.a.measured >= 2 and c.b.measured >= 2, c
                assert c.low is None or c.low < c.high  # a zero-width interval is never a verdict
            if c.a.unjudged or c.b.unjudged:  # no dictionary: a finished seed cannot be judged, nor the claim
                assert c.verdict is Verdict.NOT_TESTABLE and "no unigram plateau" in c.reason
        if outcome.claim_id == "preln_without_warmup_matches" and outcome.cases:
            c = outcome.cases[0].comparison
            assert c.a.n == counted[("pre", 0)]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sweeps)
def test_the_report_is_always_written(spec):
    with tempfile.TemporaryDirectory() as folder:
        sweep_dir = _write(Path(folder), spec, True, 9.5)
        report = write_report(sweep_dir, Path(folder) / "report.md").read_text()
    assert report.count("| **") >= len(CLAIMS)  # every claim row with its verdict
