"""The "Why warm-up" claims and section on hand-made run dirs (no training): real config.yaml, metrics.jsonl,
status.json and diagnostics.jsonl files in the shapes prelnx writes, read by the report as a sweep's.

The design mirrors configs/sweeps/why_warmup_strata.yaml: stratum A (lr 1e-3, no warm-up) with Post-LN Adam and
Adam without bias correction failing, Post-LN GI-Adam and Pre-LN Adam training; B (lr 7e-4, no warm-up) with Post-LN
Adam failing and Pre-LN Adam training; C (lr 1e-3, 60 warm-up updates) where both train; seeds 1-3."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prelnx.paper import explanations_data
from prelnx.report.arms import load_arms
from prelnx.report.predict import Protocol, Unit, predict
import prelnx.report.report as report_module
from prelnx.report.report import write_report
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import (
    QUANTITY_NAMES,
    last_ffn_grad,
    load_study,
    lr_sharpness,
    run_quantity,
)
from prelnx.report.why_warmup_section import cells_table, check_explanations, excluded_lines, protocol
from tests.report.runs import Sweep, write_dictionary

VARIANTS = {"adam": {}, "gi_adam": {"second_moment_init": "gradient"},
            "adam_no_bias_correction": {"bias_correction": False}}  # fmt: skip
# (layout, optimizer, lr, warm-up, fails)
DESIGN = [("post", "adam", 1e-3, 0, True), ("post", "adam_no_bias_correction", 1e-3, 0, True),
          ("post", "gi_adam", 1e-3, 0, False), ("pre", "adam", 1e-3, 0, False), ("pre", "gi_adam", 1e-3, 0, False),
          ("pre", "adam_no_bias_correction", 1e-3, 0, False),
          ("post", "adam", 7e-4, 0, True), ("pre", "adam", 7e-4, 0, False),
          ("post", "adam", 1e-3, 60, False), ("pre", "adam", 1e-3, 60, False)]  # fmt: skip
PREDICTIVE = ("gradient_scale_predicts_failure", "sharpness_predicts_failure", "update_size_predicts_failure",
              "attention_logits_predict_failure")  # fmt: skip


def schedule_lr(lr: float, warmup: int, update: int) -> float:
    return lr * min(1.0, update / warmup) if warmup else lr


def diagnostics_rows(value, lr: float, warmup: int) -> list[dict]:
    """Rows every 5 updates up to 80 (sharpness every 10), in the plugin's schema; `value(update, lr_now)` gives the
    run's quantity at an update, used for every diagnostic (grad norm, update ratio, attention logit, lr x lambda_c)."""
    rows = []
    for update in range(5, 85, 5):
        now = schedule_lr(lr, warmup, update)
        v = value(update, now)
        sharp = update % 10 == 0
        rows.append({"num_updates": update, "epoch": 1, "lr": now,
                     "grad_norm": {"decoder.0.ffn": v / 10, "decoder.5.ffn": v, "encoder.5.ffn": v / 3},
                     "update_ratio": {"decoder.5.ffn": v, "decoder.0.ffn": v, "encoder.0.ffn": v * 2},
                     "attn_logit_max": {"decoder.0.self_attn": v, "encoder.0.self_attn": v / 2},
                     "lambda_c": v / now if sharp else None, "eta_c": 2 * now / v if sharp else None,
                     "sharpness_loss": 8.0 if sharp else None, "sharpness_passes": 7 if sharp else None,
                     "sharpness_note": None})  # fmt: skip
    return rows


def add_run(sweep: Sweep, layout: str, variant: str, lr: float, warmup: int, seed: int, failing: bool, value,
            diverged_at: int | None = None) -> None:  # fmt: skip
    final = (8.5 if failing else 6.5) + seed / 20  # plateau 8.30: failing ends above it, trained ~1.7 bits below
    losses = [9.0, (9.0 + final) / 2, final] if diverged_at is None else []
    status = "finished" if diverged_at is None else "diverged"
    name = sweep.run(layout, warmup, losses, seed=seed, lr=lr, nll=[9.0, 8.0, final], status=status)
    run = sweep.folder / name
    run = run.rename(run.with_name(f"{name}_{variant}"))
    sweep.points[-1]["name"] = run.name
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["optimizer"].update(VARIANTS[variant])
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    if diverged_at is not None:
        (run / "status.json").write_text(json.dumps({"status": "diverged", "update": diverged_at,
                                                     "diverged_at": diverged_at, "reason": ""}))  # fmt: skip
    rows = [r for r in diagnostics_rows(value, lr, warmup) if diverged_at is None or r["num_updates"] < diverged_at]
    (run / "diagnostics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def fails_in(fails, seed: int) -> bool:
    """A design row's outcome: True / False for every seed, or the set of seeds that fail."""
    return seed in fails if isinstance(fails, (set, frozenset)) else bool(fails)


def build(tmp_path, quantity, design=DESIGN, seeds=(1, 2, 3), diverged: dict | None = None, order=None):
    """`quantity(layout, variant, lr, warmup, seed, fails)` -> value(update, lr_now) for every diagnostic;
    `diverged`: {(design row index, seed): update}; `order`: a permutation of the runs as sweep.json lists them."""
    sweep = Sweep(tmp_path / "why_warmup", write_dictionary(tmp_path / "data") and tmp_path / "data")
    for seed in seeds:
        for index, (layout, variant, lr, warmup, fails) in enumerate(design):
            failing = fails_in(fails, seed)
            add_run(sweep, layout, variant, lr, warmup, seed, failing,
                    quantity(layout, variant, lr, warmup, seed, failing), (diverged or {}).get((index, seed)))
    if order is not None:
        sweep.points = [sweep.points[i] for i in order(len(sweep.points))]
    return sweep.save()


def _study(sweep_dir, fit=(1, 2), test=(3,)):
    spec = explanations_data()
    spec["prediction"] = {**spec["prediction"], "fit_seeds": list(fit), "test_seeds": list(test)}
    study = load_study(sweep_dir, load_arms(sweep_dir), spec["trained_margin_bits"])
    return study, spec, protocol(spec)


def predictions(sweep_dir, fit=(1, 2), test=(3,)):
    study, spec, rules = _study(sweep_dir, fit, test)
    return {v.claim["id"]: v for v in check_explanations(study, spec, rules)[0]}


def arm_verdicts(sweep_dir):
    study, spec, rules = _study(sweep_dir)
    return {v.claim["id"]: v for v in check_explanations(study, spec, rules)[1]}


# Round three's shape (configs/sweeps/why_warmup_edge.yaml): Post-LN cells near its edge whose seeds split, a Pre-LN
# cell that trains; fit seeds 1-4, held-out seeds 5-8. Held out: 3 informative cells of 2 failing x 2 trained runs.
EDGE = [("post", "adam", 5e-4, 0, {2, 3, 6, 7}), ("post", "adam", 7e-4, 0, {1, 2, 3, 5, 6}),
        ("post", "adam", 1e-3, 30, {1, 4, 5, 8}), ("pre", "adam", 1e-3, 0, False)]  # fmt: skip
EDGE_SEEDS = tuple(range(1, 9))
FIT, TEST = (1, 2, 3, 4), (5, 6, 7, 8)


def edge(tmp_path, quantity, **kwargs):
    return predictions(build(tmp_path, quantity, EDGE, EDGE_SEEDS, **kwargs), FIT, TEST)


def test_the_old_design_where_the_layout_sets_the_outcome_is_not_testable_with_this_design(tmp_path):
    """Issue 46 finding 3: every quantity a per-layout constant, Post-LN failing and Pre-LN training in every seed of
    5 strata (0999619 printed 'holds (p = 0.030)'). No cell holds both outcomes: not testable, and why."""
    design = [(layout, "adam", lr, 0, layout == "post") for lr in (4e-4, 5e-4, 6e-4, 7e-4, 1e-3)
              for layout in ("post", "pre")]  # fmt: skip
    verdicts = predictions(build(tmp_path, lambda layout, *rest: (lambda u, now: 4.0 if layout == "post" else 1.0),
                                 design, seeds=(1, 2, 3, 4)), (1, 2), (3, 4))  # fmt: skip
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.NOT_TESTABLE and p.pairs == 0 and not p.informative, claim
        assert "with this design" in p.why and "set by the cell (model.layout)" in p.why, p.why


def test_a_per_layout_constant_ties_the_design_baseline_where_cells_hold_both_outcomes(tmp_path):
    verdicts = edge(tmp_path, lambda layout, *rest: (lambda u, now: 4.0 if layout == "post" else 1.0))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.DOES_NOT_HOLD and "ties the design baseline" in p.why, claim
        assert p.auc == 0.5 and p.baseline_auc == 0.5 and p.difference == 0.0 and len(p.informative) == 3


def test_a_quantity_set_by_the_schedule_alone_never_holds(tmp_path):
    verdicts = edge(tmp_path, lambda *arm: (lambda update, now: 5.0 * now))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.DOES_NOT_HOLD and p.auc == 0.5 and p.direction == 0, claim


def separating(layout, variant, lr, warmup, seed, fails):
    level = (4.0 if fails else 1.0) * (1 + seed / 50)
    return lambda update, now: level


def test_a_quantity_that_predicts_failure_within_cells_holds_with_its_exact_permutation_p(tmp_path):
    verdicts = edge(tmp_path, separating)
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.HOLDS, (claim, p)
        assert p.auc == 1.0 and p.fit_auc == 1.0 and p.direction == 1 and p.diff_low > 0 and p.pairs == 12
        assert p.fit_pairs == 4 + 3 + 4  # seeds 1-4: cells of 2x2, 3x1 and 2x2 failing x trained runs
        assert p.exact and p.p_value == pytest.approx(1 / 6**3)  # each cell: 1 of C(4, 2) assignments reaches it
        assert p.continuous == 1.0 and p.runs == 32


def test_the_reversed_direction_does_not_hold(tmp_path):
    verdicts = edge(tmp_path, lambda *arm: (lambda u, now, f=arm[-1], s=arm[4]: (0.5 if f else 2.0) + s / 50))
    p = verdicts["update_size_predicts_failure"].prediction
    assert p.verdict is Verdict.DOES_NOT_HOLD and p.direction == -1 and "other way round" in p.why


def test_a_quantity_that_separates_only_the_fit_seeds_does_not_hold_on_the_held_out_seeds(tmp_path):
    def quantity(layout, variant, lr, warmup, seed, fails):
        level = (4.0 if fails else 1.0) if seed <= 4 else {5: 2.0, 6: 1.0, 7: 3.0, 8: 0.5}[seed]
        return lambda update, now: level

    for claim in PREDICTIVE:
        p = edge(tmp_path / claim, quantity)[claim].prediction
        assert p.fit_auc == 1.0 and p.direction == 1 and p.verdict is not Verdict.HOLDS, (claim, p)


def test_exact_permutation_p_is_the_share_of_within_cell_assignments_reaching_the_auc():
    """Checked against a brute force over every joint assignment (failure counts per cell kept)."""
    cells = {("c", "1"): [3.0, 1.0, 2.0, 0.5, 2.5], ("c", "2"): [1.0, 1.0, 4.0, 2.0]}
    failing = {("c", "1"): {0, 2}, ("c", "2"): {2}}
    units = [Unit(cell, "s", 11 + i, i in failing[cell], v) for cell, values in cells.items()
             for i, v in enumerate(values)]  # fmt: skip
    units += [Unit(u.cell, u.stratum, u.seed - 10, u.failed, u.value) for u in units]  # fit seeds 1-5: the same
    p = predict(units, Protocol(frozenset(range(1, 6)), frozenset(range(11, 16)), min_cells=1, resamples=200))

    def concordance(values, bad):
        return sum((values[i] > values[j]) + 0.5 * (values[i] == values[j]) for i in bad for j in range(len(values))
                   if j not in bad)  # fmt: skip

    observed = sum(concordance(cells[c], failing[c]) for c in cells)
    draws = [sum(concordance(cells[c], set(b)) for c, b in zip(cells, joint)) for joint in
             itertools.product(*(itertools.combinations(range(len(cells[c])), len(failing[c])) for c in cells))]
    assert p.exact and p.p_value == pytest.approx(sum(d >= observed for d in draws) / len(draws))
    assert p.auc == pytest.approx(observed / (2 * 3 + 1 * 3))
    monte_carlo = predict(units, Protocol(frozenset(range(1, 6)), frozenset(range(11, 16)), min_cells=1,
                                          resamples=4000, exact_limit=1))  # fmt: skip
    assert not monte_carlo.exact and monte_carlo.p_value == pytest.approx(p.p_value, abs=0.03)


@st.composite
def designs(draw):
    """Units of 2-4 cells x 6 seeds, outcomes drawn, values drawn (or a function of the cell)."""
    cells = draw(st.integers(2, 4))
    per_cell = draw(st.booleans())
    units = []
    for c in range(cells):
        level = draw(st.floats(-3, 3))
        for seed in range(1, 7):
            value = level if per_cell else draw(st.sampled_from([0.0, 1.0, 2.0, 3.0]))
            units.append(Unit((("model.layout", f"l{c % 2}"), ("optimizer.lr", str(c))), f"lr {c}", seed,
                              draw(st.booleans()), value))  # fmt: skip
    return units, per_cell


RULES = Protocol(frozenset({1, 2, 3}), frozenset({4, 5, 6}), min_cells=1, resamples=300)


@settings(max_examples=40, deadline=None)
@given(designs(), st.randoms(use_true_random=False), st.booleans())
def test_run_order_changes_no_number_and_a_per_cell_constant_never_holds(design, rng, monte_carlo):
    units, per_cell = design
    rules = Protocol(RULES.fit_seeds, RULES.test_seeds, 1, 300, exact_limit=1 if monte_carlo else 100_000)
    first = predict(units, rules)
    shuffled = list(units)
    rng.shuffle(shuffled)
    assert repr(predict(shuffled, rules)) == repr(first)  # every field, NaN included
    if per_cell:
        assert first.verdict is not Verdict.HOLDS and first.auc in (None, 0.5)


@settings(max_examples=30, deadline=None)
@given(designs(), st.lists(st.floats(-5, 5), min_size=6, max_size=6), st.booleans())
def test_a_cell_that_holds_no_pair_moves_no_number(design, values, failing):
    """A cell whose runs all fail, or all train (an unrelated arm added to the sweep), changes no verdict, AUC,
    interval or p: it is in no pair and in no bootstrap draw."""
    units, _ = design
    extra = [Unit((("model.layout", "other"), ("optimizer.lr", "9")), "lr 9", seed, failing, v)
             for seed, v in zip(range(1, 7), values)]  # fmt: skip
    before, after = predict(units, RULES), predict(units + extra, RULES)
    keep = ("fit_auc", "direction", "auc", "low", "high", "difference", "diff_low", "diff_high", "informative",
            "pairs", "p_value", "verdict", "why")  # fmt: skip
    assert repr([getattr(before, k) for k in keep]) == repr([getattr(after, k) for k in keep])


def test_shuffling_sweep_json_changes_no_printed_number(tmp_path, monkeypatch):
    """Issue 46 finding 3: the same runs listed in another order printed p = 0.046 ... 0.064 at 0999619."""
    import prelnx.report.why_warmup_section as section

    spec = explanations_data()
    spec["prediction"]["studies"] = {"why_warmup": {"fit_seeds": list(FIT), "test_seeds": list(TEST)}}
    monkeypatch.setattr(section, "explanations_data", lambda: spec)  # the study's entry, as methods.yaml would hold it
    # The section's text is compared, not pixels: the curves (another section) are not drawn, nor the early window's
    # PNGs (their lines are still written; the figures are drawn and checked in
    # test_the_report_ranks_the_predictors_and_draws_the_early_window)
    monkeypatch.setattr(report_module, "plot", lambda *args: [])
    monkeypatch.setattr(section, "early_window_figure", lambda panels, quantity, out, window, edge=None: out)

    def noisy(layout, variant, lr, warmup, seed, fails):
        level = (2.0 if fails else 1.0) + ((seed * 7 + len(variant) + int(lr * 1e4)) % 5) / 4
        return lambda update, now: level

    texts = []
    for index, order in enumerate([None, lambda n: list(range(n))[::-1], lambda n: [(i * 7) % n for i in range(n)]]):
        sweep = build(tmp_path / str(index), noisy, EDGE, EDGE_SEEDS, order=order)
        text = write_report(sweep, tmp_path / f"r{index}.md").read_text()
        texts.append(text[text.index("## Why warm-up"):text.index("### Withdrawn")])
    assert texts[0] == texts[1] == texts[2]
    assert "| 3 / 12 |" in texts[0] and "(exact) |" in texts[0]  # the edge design's cells, decided with a p


def test_runs_that_diverge_early_are_counted_or_listed_never_dropped(tmp_path):
    """Issue 46 finding 3: runs that diverged before update 5 vanished from the strata table and the AUC. Seeds 5
    and 6 of the 7e-4 cell diverge at update 3 (before any measurement) and 25 (inside the window)."""
    sweep = build(tmp_path, separating, EDGE, EDGE_SEEDS, diverged={(1, 5): 3, (1, 6): 25})
    study, spec, rules = _study(sweep, FIT, TEST)
    verdicts = check_explanations(study, spec, rules)[0]
    early = next(a for a in study.arms if a.diverged_at == 3)
    for v in verdicts:
        assert v.excluded == ((early.name, f"diverged at update 3, no {QUANTITY_NAMES[v.claim['quantity']]} measured "
                               f"in updates 1-40"),)  # fmt: skip
        assert v.prediction.runs == 31  # the one diverged at 25 read up to its divergence
    assert f"- {early.name}: diverged at update 3" in "\n".join(excluded_lines(verdicts))
    cells = "\n".join(cells_table(study, rules))
    assert "s5*: **diverged at 3**, s6*: **diverged at 25**" in cells
    assert study.worse(early) > study.worse(next(a for a in study.arms if a.diverged_at == 25)) > (0, 9.0)


def test_arm_claims_keep_their_premise(tmp_path):
    def quantity(layout, variant, lr, warmup, seed, fails):
        return lambda update, now: (4.0 if layout == "post" else 1.0) * (1 + seed / 20)

    # 4 seeds: a claim that one arm trains where another fails rests on failure counts (3 of 3 is no verdict)
    verdicts = arm_verdicts(build(tmp_path, quantity, seeds=(1, 2, 3, 4)))
    grads = verdicts["postln_last_layer_gradients_larger"]  # the warm-up arms of stratum C
    assert grads.verdict is Verdict.HOLDS
    assert grads.outcome.cases[0].comparison.estimate == pytest.approx(math.log10(4.0), abs=1e-6)
    gi = verdicts["gi_adam_trains_without_warmup"]
    assert gi.verdict is Verdict.HOLDS and gi.outcome.cases[0].premise.state.value == "met"
    no_bc = verdicts["no_bias_correction_trains_without_warmup"]
    assert no_bc.verdict is Verdict.DOES_NOT_HOLD and "failed in every seed too" in no_bc.override[1]


def test_the_premise_failing_makes_the_arm_claims_not_testable(tmp_path):
    design = [("post", "adam", 1e-3, 0, False), ("post", "gi_adam", 1e-3, 0, False)]  # Adam trains: no premise
    gi = arm_verdicts(build(tmp_path, lambda *arm: (lambda u, now: 1.0), design))["gi_adam_trains_without_warmup"]
    assert gi.verdict is Verdict.NOT_TESTABLE and gi.outcome.cases[0].premise.state.value == "failed"


def test_row_reductions():
    row = diagnostics_rows(lambda u, now: 2.0, 1e-3, 0)[1]
    assert last_ffn_grad(row) == 2.0  # decoder.5.ffn, the last decoder layer, not decoder.0 or the encoder's
    assert lr_sharpness(row) == pytest.approx(2.0)
    assert lr_sharpness({"lambda_c": None, "lr": 1e-3,
                         "sharpness_note": "the loss rises at every step down to lr * 2^-20: not a descent direction here"}) == math.inf  # fmt: skip
    rows = diagnostics_rows(lambda u, now: u / 10, 1e-3, 60)
    assert run_quantity("lr_sharpness_max", rows, [1, 40]) == pytest.approx(4.0)  # the window only
    assert run_quantity("attn_logit_max", rows, [1, 40]) == pytest.approx(4.0)
    assert run_quantity("early_lr", rows, [1, 40]) == pytest.approx(1e-3 * 22.5 / 60)
    with pytest.raises(ValueError, match="unknown quantity"):
        run_quantity("sharpness", rows, None)


def test_the_report_ranks_the_predictors_and_draws_the_early_window(tmp_path, monkeypatch):
    monkeypatch.setattr(report_module, "plot", lambda *args: [])  # the curves: not this section's

    def quantity(layout, variant, lr, warmup, seed, fails):
        return lambda update, now: (4.0 if fails else 1.0) * (1 + seed / 20)

    out = write_report(build(tmp_path, quantity), tmp_path / "out" / "why.md")
    section = out.read_text()[out.read_text().index("## Why warm-up"):]
    assert "### Each explanation as a predictor of failure within cells, ranked" in section
    assert "bootstrap over **cells**" in section and "with this design" in section  # one held-out seed per cell
    assert "`failing_runs_overshoot_first` (issue 31" in section and "withdrawn" in section
    assert ("| lr 0.001, 60 warm-up updates, decay constant | layout post, bias_correction True, lr 0.001, "
            "second_moment_init zero, warmup_updates 60 | 0 / 3 | s1: 6.55, s2: 6.60, s3*: 6.65 | no |") in section
    figures = sorted((tmp_path / "out" / "why_figures").glob("why_warmup_*.png"))
    assert len(figures) == 4 and all(f.stat().st_size > 10_000 for f in figures)
    assert all(f"({f.parent.name}/{f.name})" in section for f in figures)


def test_a_sweep_without_diagnostics_has_no_why_warmup_section(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.seeds("post", 0, [8.5, 8.6])
    sweep.seeds("post", 120, [6.5, 6.6])
    text = write_report(sweep.save(), tmp_path / "r.md").read_text()
    assert "## Why warm-up" not in text and not list(tmp_path.glob("r_figures/why_warmup_*"))


def test_the_figures_dash_the_sweeps_own_held_out_seeds(tmp_path, monkeypatch):
    """The figures marked methods.yaml's global held-out seed (3) where the sweep's own entry holds out 5-8."""
    import prelnx.report.why_warmup_section as section

    spec = explanations_data()
    spec["prediction"]["studies"] = {"why_warmup": {"fit_seeds": list(FIT), "test_seeds": list(TEST)}}
    assert set(TEST) != set(explanations_data()["prediction"]["test_seeds"])  # the global split differs
    sweep = build(tmp_path, separating, EDGE, EDGE_SEEDS)
    study = load_study(sweep, load_arms(sweep), spec["trained_margin_bits"])
    drawn = []
    monkeypatch.setattr(section, "early_window_figure", lambda panels, *a: drawn.extend(panels) or tmp_path / "f.png")
    section.figures(study, spec, tmp_path, tmp_path)
    runs = [r for panel in drawn for r in panel.runs]  # each labelled "<arm>, seed N"
    assert runs and all(r.held_out == (int(r.label.rsplit("seed ", 1)[1]) in TEST) for r in runs)
    assert {r.held_out for r in runs} == {True, False}
