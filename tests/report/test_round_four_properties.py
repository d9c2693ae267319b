"""Issue 46's invariants against random hand-made sweeps (hypothesis; tests/report/runs.py, no training): adding runs
that differ from every arm of a claim in a key outside its factors changes none of its verdicts; permuting the order
the runs are listed in changes no printed number; a seed's reached / not reached equals its own curve. (A per-layout
constant never holding as a mechanism is the prediction engine's, issue 46 finding 3: tests/report/test_why_warmup*.)"""

from __future__ import annotations

import math
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from prelnx.report.arms import Arm, differing_keys, first_update_at, load_arms
from prelnx.report.render import claims_table
from prelnx.report.warmup_free import log_updates_sample
from tests.report.runs import Sweep, write_dictionary
from tests.report.test_properties import ARMS, CLAIMS, _curve, _outcomes, _signature, sweeps

# keys outside every claim's factors, each with a value no arm of the generated sweeps has
OTHER_KEYS = st.sampled_from(({"model.encoder_layers": 12}, {"model.dropout": 0.3}, {"train.max_update": 999},
                              {"data.dataset": "multi30k"}, {"train.precision": "bf16"}))  # fmt: skip


def _write(folder: Path, spec: dict, extra: dict | None = None, order: int | None = None) -> Path:
    write_dictionary(folder / "data")
    sweep = Sweep(folder / "sweep", folder / "data")
    runs = [(layout, warmup, seed, kind, value) for (layout, warmup), seeds in zip(ARMS, spec["arms"])
            for seed, (kind, value) in enumerate(seeds, start=1)]  # fmt: skip
    if order is not None:
        random.Random(order).shuffle(runs)
    for layout, warmup, seed, kind, value in runs:
        losses, status = _curve(kind, value, 9.5)
        sweep.run(layout, warmup, losses, seed=seed, status=status, every=spec["every"])
    if extra:  # the same arms again, each differing from every arm above in one key outside the claims' factors
        for (layout, warmup), seeds in zip(ARMS, spec["arms"]):
            for seed, (kind, value) in enumerate(seeds, start=1):
                losses, status = _curve(kind, 9.0 - value + 6.0, 9.5)  # other losses, so pooling would show
                sweep.run(layout, warmup, losses, seed=seed, status=status, every=spec["every"], extra=extra)
    return sweep.save()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sweeps, extra=OTHER_KEYS)
@example(spec={"arms": ([("trained", 7.0)] * 3, [("trained", 6.0)] * 2 + [("failed", 9.0)], [("trained", 6.0)] * 3),
               "unrelated": [], "every": 10, "dictionary": True}, extra={"model.encoder_layers": 12})  # cases in both
def test_runs_differing_from_every_arm_in_another_key_change_no_verdict(spec, extra):
    """Each case of the sweep's arms keeps its verdict, seeds and Holm p (Holm runs within a context); the new runs
    are cases of their own context, labelled by it, or none."""
    with tempfile.TemporaryDirectory() as folder:
        plain = _outcomes(_write(Path(folder) / "plain", spec))
        more = _outcomes(_write(Path(folder) / "more", spec, extra))
    ((key, value),) = extra.items()
    for cid, outcome in plain.items():
        kept = [(j.case.label, j.verdict, j.holm_p, j.case.comparison.a.n, j.case.comparison.b.n)
                for j in outcome.judged()]  # fmt: skip
        theirs = [(j.case.label.split(": ", 1)[1], j.verdict, j.holm_p, j.case.comparison.a.n, j.case.comparison.b.n)
                  for j in more[cid].judged() if f"{key} {value}" not in j.case.family]  # fmt: skip
        assert kept == theirs, cid
        assert all(f"{key} {value}" in j.case.label for j in more[cid].judged() if f"{key} {value}" in j.case.family)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=sweeps, order=st.integers(0, 10**6))
def test_permuting_the_order_the_runs_are_listed_in_changes_no_printed_number(spec, order):
    with tempfile.TemporaryDirectory() as folder:
        first = _outcomes(_write(Path(folder) / "a", spec))
        second = _outcomes(_write(Path(folder) / "b", spec, order=order))
    assert claims_table(CLAIMS, first) == claims_table(CLAIMS, second)
    assert _signature(first) == _signature(second)


curves = st.lists(st.one_of(st.floats(5.0, 9.0), st.just(math.nan), st.just(math.inf)), min_size=0, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(losses=curves, status=st.sampled_from(("finished", "diverged")), target=st.sampled_from((6.0, 6.5, 7.0)))
def test_a_seeds_reached_or_not_is_its_own_curve_whatever_its_class(losses, status, target):
    with tempfile.TemporaryDirectory() as folder:
        write_dictionary(Path(folder) / "data")
        sweep = Sweep(Path(folder) / "sweep", Path(folder) / "data")
        sweep.run("rezero", 0, losses, status=status)
        (arm,) = load_arms(sweep.save())
        sample = log_updates_sample("x", [arm], target, 10)
    reached = [10 * (i + 1) for i, v in enumerate(losses) if math.isfinite(v) and v <= target]
    if reached:
        assert sample.values == (math.log(reached[0]),) and first_update_at(arm, target) == reached[0]
    else:
        assert sample.values == () and sample.failed + sample.missing == 1


CONTEXT = st.dictionaries(st.sampled_from(["model.a", "model.b", "train.c"]), st.sampled_from(['"1"', '"2"']))


@settings(max_examples=50, deadline=None)
@given(st.lists(CONTEXT, min_size=1, max_size=5))
def test_runs_differ_in_each_key_one_has_with_a_value_another_has_not(contexts):
    """differing_keys by its definition: a key some run's context has, and another run's has otherwise or lacks."""
    arms = [Arm(f"r{i}", "post", "adam", 0, 1e-3, 1, {}, [], context=tuple(c.items())) for i, c in enumerate(contexts)]
    expected = sorted({k for c in contexts for k, v in c.items() if any(d.get(k) != v for d in contexts)})
    assert differing_keys(arms) == expected
