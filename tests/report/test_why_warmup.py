"""The "Why warm-up" claims and section on hand-made run dirs (no training): real config.yaml, metrics.jsonl,
status.json and diagnostics.jsonl files in the shapes prelnx writes, read by the report as a sweep's.

The design mirrors configs/sweeps/why_warmup_strata.yaml: stratum A (lr 1e-3, no warm-up) with Post-LN Adam and
Adam without bias correction failing, Post-LN GI-Adam and Pre-LN Adam training; B (lr 7e-4, no warm-up) with Post-LN
Adam failing and Pre-LN Adam training; C (lr 1e-3, 60 warm-up updates) where both train; seeds 1-3."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from scipy.stats import mannwhitneyu

from prelnx.paper import explanations_data
from prelnx.report.arms import layout_names, load_arms
from prelnx.report.predict import Protocol, Unit, predict
from prelnx.report.report import write_report
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import check_explanations, last_ffn_grad, load_study, lr_sharpness, run_quantity
from prelnx.report.why_warmup_section import check_predictions
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


def add_run(sweep: Sweep, layout: str, variant: str, lr: float, warmup: int, seed: int, failing: bool, value) -> None:
    final = (8.5 if failing else 6.5) + seed / 20  # plateau 8.30: failing ends above it, trained ~1.7 bits below
    name = sweep.run(layout, warmup, [9.0, (9.0 + final) / 2, final], seed=seed, lr=lr, nll=[9.0, 8.0, final])
    run = sweep.folder / name
    run = run.rename(run.with_name(f"{name}_{variant}"))
    sweep.points[-1]["name"] = run.name
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["optimizer"].update(VARIANTS[variant])
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    rows = diagnostics_rows(value, lr, warmup)
    (run / "diagnostics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def build(tmp_path, quantity, design=DESIGN, seeds=(1, 2, 3)):
    """`quantity(layout, variant, lr, warmup, seed, fails)` -> value(update, lr_now) for every diagnostic."""
    sweep = Sweep(tmp_path / "why_warmup", write_dictionary(tmp_path / "data") and tmp_path / "data")
    for seed in seeds:
        for layout, variant, lr, warmup, fails in design:
            add_run(sweep, layout, variant, lr, warmup, seed, fails, quantity(layout, variant, lr, warmup, seed, fails))
    return sweep.save()


def _study(sweep_dir):
    spec = explanations_data()
    spec["prediction"] = {**spec["prediction"], "fit_seeds": [1, 2], "test_seeds": [3]}  # the protocol as written
    return load_study(sweep_dir, load_arms(sweep_dir), spec["trained_margin_bits"]), spec


def predictions(sweep_dir):
    study, spec = _study(sweep_dir)
    return {v.claim["id"]: v for v in check_predictions(study, spec)}


def arm_verdicts(sweep_dir):
    study, spec = _study(sweep_dir)
    return {v.claim["id"]: v for v in check_explanations(study, spec, layout_names())}


def test_a_quantity_set_by_the_schedule_alone_never_holds(tmp_path):
    """Every diagnostic a function of the lr being used (identical in failing and trained runs of one schedule):
    pooled over strata the warm-up runs' smaller early lr would 'separate' them; within strata it ties."""
    verdicts = predictions(build(tmp_path, lambda *arm: (lambda update, now: 5.0 * now)))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.DOES_NOT_HOLD and "ties the schedule-only baseline" in p.why, claim
        assert p.auc == 0.5 and p.difference == 0.0 and p.direction == 0
        assert len(p.informative) == 2  # A and B hold both outcomes in seed 3; C trains everywhere


def test_a_quantity_that_separates_failing_from_trained_runs_within_strata_holds(tmp_path):
    def quantity(layout, variant, lr, warmup, seed, fails):
        level = (4.0 if fails else 1.0) * (1 + seed / 20) * (1 + len(variant) / 100)
        return lambda update, now: level

    verdicts = predictions(build(tmp_path, quantity))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.verdict is Verdict.HOLDS, (claim, p)
        assert p.auc == 1.0 and p.fit_auc == 1.0 and p.direction == 1 and p.diff_low > 0 and p.p_value < 0.05
        assert p.pairs == 8 + 1  # seed 3: A's 2 failing x 4 trained, B's 1 x 1; C has no failing run


def test_the_reversed_direction_does_not_hold(tmp_path):
    verdicts = predictions(build(tmp_path, lambda *arm: (lambda u, now, f=arm[-1], s=arm[4]: (0.5 if f else 2.0) + s / 50)))
    p = verdicts["update_size_predicts_failure"].prediction
    assert p.verdict is Verdict.DOES_NOT_HOLD and p.direction == -1 and "other way round" in p.why


def test_a_quantity_that_separates_only_the_fit_seeds_does_not_hold_on_the_held_out_seed(tmp_path):
    """Seeds 1-2: failing runs 4x larger. Seed 3: values unrelated to the outcome (held-out AUC 4/9)."""
    noise = {("post", "adam", 1e-3): 0.2, ("post", "adam_no_bias_correction", 1e-3): 0.9,
             ("post", "gi_adam", 1e-3): 0.5, ("pre", "adam", 1e-3): 0.6, ("pre", "gi_adam", 1e-3): 0.1,
             ("pre", "adam_no_bias_correction", 1e-3): 0.95, ("post", "adam", 7e-4): 0.4,
             ("pre", "adam", 7e-4): 0.7}  # fmt: skip

    def quantity(layout, variant, lr, warmup, seed, fails):
        level = noise.get((layout, variant, lr), 0.5) if seed == 3 and not warmup else (4.0 if fails else 1.0)
        return lambda update, now: level * (1 + seed / 20)

    verdicts = predictions(build(tmp_path, quantity))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.fit_auc == 1.0 and p.direction == 1
        assert p.auc == pytest.approx(4 / 9) and p.verdict is not Verdict.HOLDS, (claim, p)


def test_two_held_out_pairs_never_hold_however_well_ordered(tmp_path):
    """Strata A and B with one failing and one trained arm each: 2 held-out pairs, both ordered right, the bootstrap
    over 2 arms degenerate; the permutation p (1/4) keeps it from holding."""
    design = [("post", "adam", 1e-3, 0, True), ("pre", "adam", 1e-3, 0, False), ("post", "adam", 7e-4, 0, True),
              ("pre", "adam", 7e-4, 0, False)]  # fmt: skip
    verdicts = predictions(build(tmp_path, lambda *arm: (lambda u, now, f=arm[-1], s=arm[4]: (4.0 if f else 1.0) + s / 50),
                                 design))  # fmt: skip
    p = verdicts["update_size_predicts_failure"].prediction
    assert p.auc == 1.0 and p.pairs == 2 and p.diff_low > 0
    assert p.p_value == pytest.approx(0.25, abs=0.03) and p.verdict is Verdict.INCONCLUSIVE


def test_too_few_informative_strata_is_not_testable_never_holds(tmp_path):
    """Only stratum A holds both outcomes (B's Post-LN trains too): a perfect separator is still no verdict."""
    design = [d if d[2] != 7e-4 else (*d[:4], False) for d in DESIGN]
    verdicts = predictions(build(tmp_path, lambda *arm: (lambda u, now, f=arm[-1]: 4.0 if f else 1.0), design))
    for claim in PREDICTIVE:
        p = verdicts[claim].prediction
        assert p.auc == 1.0 and p.verdict is Verdict.NOT_TESTABLE and "1 informative" in p.why, claim


def test_held_out_auc_is_mann_whitney_u_over_pairs_of_one_stratum_and_seed():
    values = {"f1": 3.0, "f2": 1.5, "t1": 2.0, "t2": 1.0, "t3": 1.5}
    units = [Unit("s", k, 3, k.startswith("f"), v) for k, v in values.items()]
    units += [Unit("s", k, 1, k.startswith("f"), v + (5 if k.startswith("f") else 0)) for k, v in values.items()]
    baseline = [Unit(u.stratum, u.arm, u.seed, u.failed, 1.0) for u in units]
    p = predict(units, baseline, Protocol(frozenset({1}), frozenset({3}), min_strata=1, resamples=200))
    u = mannwhitneyu([3.0, 1.5], [2.0, 1.0, 1.5]).statistic
    assert p.auc == pytest.approx(u / 6) and p.pairs == 6 and p.baseline_auc == 0.5


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


def test_the_report_ranks_the_predictors_and_draws_the_early_window(tmp_path):
    def quantity(layout, variant, lr, warmup, seed, fails):
        return lambda update, now: (4.0 if fails else 1.0) * (1 + seed / 20)

    out = write_report(build(tmp_path, quantity), tmp_path / "out" / "why.md")
    section = out.read_text()[out.read_text().index("## Why warm-up"):]
    assert "### Each explanation as a predictor of failure, ranked" in section
    assert "| baseline: the schedule alone |" in section and "bootstrap over **arms**" in section
    assert "`failing_runs_overshoot_first` (issue 31" in section and "withdrawn" in section
    assert "| lr 0.001, 60 warm-up updates, decay constant | Post-LN Adam, Pre-LN Adam | 6 | 0 / 6 | no |" in section
    figures = sorted((tmp_path / "out" / "why_figures").glob("why_warmup_*.png"))
    assert len(figures) == 4 and all(f.stat().st_size > 10_000 for f in figures)
    assert all(f"({f.parent.name}/{f.name})" in section for f in figures)


def test_a_sweep_without_diagnostics_has_no_why_warmup_section(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.seeds("post", 0, [8.5, 8.6])
    sweep.seeds("post", 120, [6.5, 6.6])
    text = write_report(sweep.save(), tmp_path / "r.md").read_text()
    assert "## Why warm-up" not in text and not list(tmp_path.glob("r_figures/why_warmup_*"))
