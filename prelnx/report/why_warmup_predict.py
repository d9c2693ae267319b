"""Each explanation of warm-up as a predictor of which runs fail (issue 38; configs/sweeps/why_warmup_strata.yaml).

methods.yaml's `why_warmup.prediction` fixes the early window, the fit and test seeds, the informative strata a
verdict needs and the bootstrap; each `predicts_failure` claim names its quantity (prelnx.report.why_warmup's
run_quantity, read over the window only). A run's stratum is its whole lr schedule (why_warmup.schedule_key); its
cluster is its arm (layout x optimizer). The baseline is the schedule alone: the mean lr over the window, one value
per stratum by construction, so within strata it ties every pair. prelnx.report.predict decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from prelnx.report.arms import layout_names
from prelnx.report.predict import Prediction, Protocol, Unit, predict
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import OPTIMIZER_NAMES, QUANTITY_NAMES, Study, run_quantity, stratum_label

BASELINE = "early_lr"


@dataclass(frozen=True)
class PredictiveVerdict:
    explanation: dict[str, Any]
    claim: dict[str, Any]
    prediction: Prediction | None  # None: no run has the quantity in the window

    @property
    def verdict(self) -> Verdict:
        return self.prediction.verdict if self.prediction else Verdict.NOT_MEASURED


def protocol(spec: dict[str, Any]) -> Protocol:
    p = spec["prediction"]
    return Protocol(frozenset(p["fit_seeds"]), frozenset(p["test_seeds"]), int(p["min_strata"]),
                    int(p["resamples"]), int(p.get("rng_seed", 0)))  # fmt: skip


def arm_name(study: Study, name: str) -> str:
    arm = next(a for a in study.arms if a.name == name)
    return f"{layout_names().get(arm.layout, arm.layout)} {OPTIMIZER_NAMES.get(arm.optimizer, arm.optimizer)}"


def units(study: Study, quantity: str, window: list[int]) -> list[Unit]:
    """One Unit per finished (or diverged) run that has a stratum and the quantity in the window."""
    found = []
    for arm in study.arms:
        if not arm.status.done or arm.name not in study.schedules:
            continue
        value = run_quantity(quantity, study.rows.get(arm.name, []), window)
        if value is None or math.isnan(value):
            continue
        found.append(Unit(study.schedules[arm.name], arm_name(study, arm.name), arm.seed, study.failed(arm), value))
    return found


def check_predictions(study: Study, spec: dict[str, Any]) -> list[PredictiveVerdict]:
    """Every `predicts_failure` claim, decided on the held-out seeds against the schedule-only baseline; the
    baseline's units are the quantity's runs with the early lr as their value (the same runs, paired)."""
    window = list(spec["prediction"]["window"])
    rules = protocol(spec)
    lr_of = {(u.stratum, u.arm, u.seed): u.value for u in units(study, BASELINE, window)}
    verdicts = []
    for explanation in spec["explanations"]:
        for claim in explanation["claims"]:
            if claim["kind"] != "predicts_failure":
                continue
            runs = [u for u in units(study, claim["quantity"], window) if (u.stratum, u.arm, u.seed) in lr_of]
            baseline = [Unit(u.stratum, u.arm, u.seed, u.failed, lr_of[(u.stratum, u.arm, u.seed)]) for u in runs]
            verdicts.append(PredictiveVerdict(explanation, claim, predict(runs, baseline, rules) if runs else None))
    return verdicts


def baseline_prediction(study: Study, spec: dict[str, Any]) -> Prediction | None:
    """The schedule-only predictor scored as an explanation would be (its own row of the ranking)."""
    runs = units(study, BASELINE, list(spec["prediction"]["window"]))
    return predict(runs, runs, protocol(spec)) if runs else None


def ranked(verdicts: list[PredictiveVerdict]) -> list[PredictiveVerdict]:
    """By held-out AUC, best first (not measured / no AUC last)."""
    return sorted(verdicts, key=lambda v: -(v.prediction.auc if v.prediction and v.prediction.auc is not None
                                            else -1.0))  # fmt: skip


def strata_table(study: Study, spec: dict[str, Any]) -> list[str]:
    """Per stratum: its arms' runs, how many failed per seed, and whether its held-out seed is informative."""
    runs = units(study, BASELINE, list(spec["prediction"]["window"]))
    test = set(spec["prediction"]["test_seeds"])
    lines = ["| stratum (lr schedule) | arms | runs | failed / trained | held-out seed informative |",
             "|---|---|---|---|---|"]  # fmt: skip
    for stratum in dict.fromkeys(u.stratum for u in runs):
        group = [u for u in runs if u.stratum == stratum]
        arms = list(dict.fromkeys(u.arm for u in group))
        failed = sum(u.failed for u in group)
        held = {u.failed for u in group if u.seed in test}
        lines.append(f"| {stratum_label(stratum)} | {', '.join(arms)} | {len(group)} | {failed} / "
                     f"{len(group) - failed} | {'yes' if held == {True, False} else 'no'} |")  # fmt: skip
    return lines


def quantity_name(quantity: str) -> str:
    return QUANTITY_NAMES.get(quantity, quantity)
