"""The "Why warm-up" claims and section on hand-made run dirs (no training): real config.yaml, metrics.jsonl,
status.json and diagnostics.jsonl files in the shapes prelnx writes, read by the report as a sweep's."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from prelnx.paper import explanations_data
from prelnx.report.arms import layout_names, load_arms
from prelnx.report.report import write_report
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import check_explanations, last_ffn_grad, load_study, lr_sharpness, run_quantity
from tests.report.runs import Sweep, write_dictionary

VARIANTS = {"adam": {}, "gi_adam": {"second_moment_init": "gradient"},
            "adam_no_bias_correction": {"bias_correction": False}}  # fmt: skip


def diagnostics_rows(*, grad: float, ratio: float, logit: float, lr_lambda: float, lr: float = 1e-3) -> list[dict]:
    """Rows every 5 updates up to 60 (sharpness every 10), in the plugin's schema."""
    rows = []
    for update in range(5, 65, 5):
        sharp = update % 10 == 0
        rows.append({"num_updates": update, "epoch": 1, "lr": lr,
                     "grad_norm": {"decoder.0.ffn": grad / 10, "decoder.5.ffn": grad, "encoder.5.ffn": grad / 3},
                     "update_ratio": {"decoder.5.ffn": ratio, "decoder.0.ffn": ratio, "encoder.0.ffn": ratio * 2},
                     "attn_logit_max": {"decoder.0.self_attn": logit, "encoder.0.self_attn": logit / 2},
                     "lambda_c": lr_lambda / lr if sharp else None, "eta_c": 2 * lr / lr_lambda if sharp else None,
                     "sharpness_loss": 8.0 if sharp else None, "sharpness_passes": 7 if sharp else None,
                     "sharpness_note": None})  # fmt: skip
    return rows


def add_run(sweep: Sweep, layout: str, warmup: int, variant: str, finals: list[float], failing: bool) -> None:
    for seed, final in enumerate(finals, start=1):
        name = sweep.run(layout, warmup, [9.0, (9.0 + final) / 2, final], seed=seed, optimizer="adam",
                         nll=[9.0, (9.0 + final) / 2, final])  # fmt: skip
        run = sweep.folder / name
        run.rename(run.with_name(f"{name}_{variant}"))
        run = run.with_name(f"{name}_{variant}")
        sweep.points[-1]["name"] = run.name
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["optimizer"].update(VARIANTS[variant])
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        scale = 1 + seed / 20
        rows = diagnostics_rows(grad=(4.0 if layout == "post" else 1.0) * scale,
                                ratio=(0.05 if failing else 0.005) * scale, logit=(30 if failing else 8) * scale,
                                lr_lambda=(5.0 if failing else 0.5) * scale)  # fmt: skip
        (run / "diagnostics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def study_sweep(tmp_path):
    """Plateau 8.30 bits: Post-LN Adam fails without warm-up and trains with it; GI-Adam trains without warm-up;
    Adam without bias correction fails without warm-up too; Pre-LN trains everywhere."""
    sweep = Sweep(tmp_path / "why_warmup", write_dictionary(tmp_path / "data") and tmp_path / "data")
    add_run(sweep, "post", 0, "adam", [8.5, 8.6, 8.4], failing=True)
    add_run(sweep, "post", 120, "adam", [6.5, 6.6, 6.4], failing=False)
    add_run(sweep, "post", 0, "gi_adam", [6.7, 6.8, 6.6], failing=False)
    add_run(sweep, "post", 0, "adam_no_bias_correction", [8.5, 8.45, 8.55], failing=True)
    add_run(sweep, "pre", 0, "adam", [6.1, 6.2, 6.0], failing=False)
    add_run(sweep, "pre", 120, "adam", [6.2, 6.3, 6.1], failing=False)
    return sweep.save()


def _verdicts(sweep_dir):
    spec = explanations_data()
    return {v.claim["id"]: v for v in check_explanations(load_study(sweep_dir, load_arms(sweep_dir),
                                                                    spec["trained_margin_bits"]), spec, layout_names())}


def test_optimizer_variants_are_arms_of_their_own(study_sweep):
    arms = load_arms(study_sweep)
    assert {a.optimizer for a in arms} == {"adam", "gi_adam", "adam_no_bias_correction"}
    assert sum(a.optimizer == "adam" and a.layout == "post" and a.warmup == 0 for a in arms) == 3


def test_each_explanation_is_decided_with_its_interval_and_premise(study_sweep):
    verdicts = _verdicts(study_sweep)
    grads = verdicts["postln_last_layer_gradients_larger"]
    assert grads.verdict is Verdict.HOLDS  # log10 4 - log10 1 = +0.60, tight over seeds
    (case,) = grads.outcome.cases
    assert case.comparison.estimate == pytest.approx(math.log10(4.0), abs=0.02) and case.comparison.low > 0
    gi = verdicts["gi_adam_trains_without_warmup"]
    assert gi.verdict is Verdict.HOLDS and gi.outcome.cases[0].premise.state.value == "met"
    # both Post-LN arms without warm-up never trained: two dead arms, but the claim is that one of them trains
    no_bc = verdicts["no_bias_correction_trains_without_warmup"]
    assert no_bc.verdict is Verdict.DOES_NOT_HOLD and "failed in every seed too" in no_bc.override[1]
    for claim in ("failing_runs_overshoot_first", "failing_runs_larger_early_updates",
                  "failing_runs_larger_attention_logits"):  # fmt: skip
        outcome = verdicts[claim].outcome
        assert verdicts[claim].verdict is Verdict.HOLDS, claim
        assert outcome.cases[0].comparison.a.n == 6 and outcome.cases[0].comparison.b.n == 12


def test_with_no_failing_run_the_outcome_claims_are_not_testable_and_say_what_would_decide(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    add_run(sweep, "post", 0, "adam", [6.5, 6.6, 6.4], failing=False)
    add_run(sweep, "post", 120, "adam", [6.5, 6.6, 6.4], failing=False)
    verdicts = _verdicts(sweep.save())
    overshoot = verdicts["failing_runs_overshoot_first"]
    assert overshoot.verdict is Verdict.NOT_TESTABLE and "0 failing and 6 trained" in overshoot.override[1]
    gi = verdicts["gi_adam_trains_without_warmup"]
    assert gi.verdict is Verdict.NOT_MEASURED  # no GI-Adam runs


def test_the_premise_failing_makes_the_arm_claims_not_testable(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    add_run(sweep, "post", 0, "adam", [6.5, 6.6, 6.4], failing=False)  # Adam trains without warm-up: no premise
    add_run(sweep, "post", 120, "adam", [6.5, 6.6, 6.4], failing=False)
    add_run(sweep, "post", 0, "gi_adam", [6.5, 6.6, 6.4], failing=False)
    gi = _verdicts(sweep.save())["gi_adam_trains_without_warmup"]
    assert gi.verdict is Verdict.NOT_TESTABLE and gi.outcome.cases[0].premise.state.value == "failed"


def test_row_reductions():
    row = diagnostics_rows(grad=2.0, ratio=0.01, logit=5.0, lr_lambda=3.0)[1]
    assert last_ffn_grad(row) == 2.0  # decoder.5.ffn, the last decoder layer, not decoder.0 or the encoder's
    assert lr_sharpness(row) == pytest.approx(3.0)
    assert lr_sharpness({"lambda_c": None, "lr": 1e-3,
                         "sharpness_note": "the loss rises at every step down to lr * 2^-20: not a descent direction here"}) == math.inf  # fmt: skip
    rows = diagnostics_rows(grad=2.0, ratio=0.01, logit=5.0, lr_lambda=3.0)
    assert run_quantity("overshoot_share", rows, [1, 60]) == 1.0
    assert run_quantity("attn_logit_max", rows, [1, 60]) == 5.0
    assert run_quantity("update_ratio_log10", rows, [5, 20]) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="unknown quantity"):
        run_quantity("sharpness", rows, None)


def test_the_report_has_a_why_warmup_section_with_one_figure_per_quantity(study_sweep, tmp_path):
    out = write_report(study_sweep, tmp_path / "out" / "why.md")
    text = out.read_text()
    section = text[text.index("## Why warm-up"):]
    assert "| Gradient scale at initialisation (Xiong et al. 2020) |" in section and "95 % CI" in section
    assert "**does not hold (at lr 0.001 Post-LN Adam without bias correction" in section
    figures = sorted((tmp_path / "out" / "why_figures").glob("why_warmup_*.png"))
    assert len(figures) == 4 and all(f.stat().st_size > 10_000 for f in figures)
    assert all(f"({f.parent.name}/{f.name})" in section for f in figures)
    # the paper's claims read plain Adam only: GI-Adam's Post-LN runs without warm-up are not pooled with Adam's
    assert "Post-LN adam lr 0.001, no warm-up 8.50 (3 seeds)" in text


def test_a_sweep_without_diagnostics_has_no_why_warmup_section(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    sweep.seeds("post", 0, [8.5, 8.6])
    sweep.seeds("post", 120, [6.5, 6.6])
    text = write_report(sweep.save(), tmp_path / "r.md").read_text()
    assert "## Why warm-up" not in text and not list(tmp_path.glob("r_figures/why_warmup_*"))


def test_one_seed_of_the_arm_claimed_to_train_is_never_a_verdict(tmp_path):
    sweep = Sweep(tmp_path / "s", write_dictionary(tmp_path / "data") and tmp_path / "data")
    add_run(sweep, "post", 0, "adam", [8.5, 8.6, 8.4], failing=True)
    add_run(sweep, "post", 120, "adam", [6.5, 6.6, 6.4], failing=False)
    add_run(sweep, "post", 0, "adam_no_bias_correction", [8.5], failing=True)
    no_bc = _verdicts(sweep.save())["no_bias_correction_trains_without_warmup"]
    # one seed: no override; the engine's own rule for two arms that never trained stands
    assert no_bc.override is None and no_bc.verdict is Verdict.NOT_TESTABLE
