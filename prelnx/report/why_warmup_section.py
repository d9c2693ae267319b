"""The report's "Why warm-up" section (issue 38): each explanation as a predictor of which runs fail within strata
(a run's stratum: its whole lr schedule; methods.yaml's `why_warmup.prediction` fixes the window, seeds and bootstrap;
prelnx.report.predict decides), ranked against the schedule-only baseline (the window's mean lr); the arm claims
(prelnx.report.why_warmup); the strata, runs and early-window figures. Only for runs that recorded diagnostics."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.paper import explanations_data
from prelnx.plots.why_warmup import INFINITE_AS, Panel, RunSeries, early_window_figure
from prelnx.report.arms import Arm, final_nll, layout_names, seed_groups, trained_margin
from prelnx.report.predict import Prediction, Protocol, Unit, predict
from prelnx.report.render import _case_lines, _premise_lines, verdict_text
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import (
    OPTIMIZER_NAMES,
    QUANTITY_NAMES,
    REDUCED,
    SERIES,
    ExplanationVerdict,
    Study,
    arm_name,
    check_explanations,
    load_study,
    run_quantity,
    stratum_label,
)

BASELINE = "early_lr"


@dataclass(frozen=True)
class PredictiveVerdict:
    explanation: dict[str, Any]
    claim: dict[str, Any]
    prediction: Prediction | None  # None: no run has the quantity in the window


def protocol(spec: dict[str, Any]) -> Protocol:
    p = spec["prediction"]
    return Protocol(frozenset(p["fit_seeds"]), frozenset(p["test_seeds"]), int(p["min_strata"]),
                    int(p["resamples"]), int(p.get("rng_seed", 0)))  # fmt: skip


def units(study: Study, quantity: str, window: list[int]) -> list[Unit]:
    """One Unit per finished (or diverged) run that has a stratum and the quantity in the window."""
    found = []
    for arm in study.arms:
        if not arm.status.done or arm.name not in study.schedules:
            continue
        value = run_quantity(quantity, study.rows.get(arm.name, []), window)
        if value is None or math.isnan(value):
            continue
        found.append(Unit(study.schedules[arm.name], arm_name(arm.layout, arm.optimizer), arm.seed, study.failed(arm),
                          value))  # fmt: skip
    return found


def check_predictions(study: Study, spec: dict[str, Any]) -> list[PredictiveVerdict]:
    """Every `predicts_failure` claim against the baseline on the same runs (their early lr as the value)."""
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


INTRO = [
    "Each explanation of why Post-LN needs warm-up names a quantity that should be large early in the runs that go",
    "on to fail (prelnx/methods.yaml, `why_warmup`, written before the runs; docs/why_warmup.md). A run *failed* when",
    "it diverged or its final valid nll is not {margin:g} bit below the unigram plateau ({plateau}). Each quantity is",
    "read only in the early window, updates {w0}-{w1}, and decided as a predictor of failure *within strata*: runs",
    "that share the whole lr schedule (peak lr, warm-up, decay), so that a quantity that merely tracks the schedule",
    "predicts nothing. Pairs (failing run, trained run) never cross a stratum or a seed. The direction is fitted on",
    "seeds {fit}; the held-out AUC is scored on seed(s) {test} (1 = every held-out pair ordered right, 0.5 = chance).",
    "The interval is a 95 % bootstrap over **arms** within strata (an arm, layout x optimizer, carries all its seeds:",
    "the unit is the arm, not the run). The baseline is the schedule alone (the window's mean lr, 0.5 within a stratum",
    "by construction). holds: the interval of AUC minus baseline lies above 0, in the claimed direction; does not",
    "hold: at or below 0 (or above it the other way round); inconclusive: it straddles 0; not testable: fewer than",
    "{need} informative strata (held-out runs of both outcomes in one schedule).",
]


def _verdict(v: ExplanationVerdict) -> str:
    return f"{v.override[0].value} ({v.override[1]})" if v.override is not None else verdict_text(v.outcome)


def claims_table(verdicts: list[ExplanationVerdict]) -> list[str]:
    lines = [("| explanation | claim | measured: mean per arm over seeds, difference [95 % CI], claimed side | premise | "
             "verdict |"), "|---|---|---|---|---|"]  # fmt: skip
    for v in verdicts:
        measured = "<br>".join(_case_lines(v.outcome)).replace("|", "/")
        premise = "<br>".join(_premise_lines(v.outcome)).replace("|", "/") or "-"
        who = f"{v.explanation['name']} ({v.explanation['cite']})"
        lines.append(f"| {who} | {v.claim['claim']} | {measured} | {premise} | **{_verdict(v)}** |")
    return lines


def _auc(p: Prediction) -> str:
    return "-" if p.auc is None else f"{p.auc:.2f} [{p.low:.2f}, {p.high:.2f}]"


def _fit(p: Prediction) -> str:
    direction = {1: "larger fails", -1: "smaller fails", 0: "none"}[p.direction]
    return "-" if p.fit_auc is None else f"{p.fit_auc:.2f} ({direction})"


def _prediction_text(v: PredictiveVerdict) -> str:
    p = v.prediction
    return "not measured (no run has it in the window)" if p is None else f"{p.verdict.value} ({p.why})"


def predictions_table(verdicts: list[PredictiveVerdict], baseline: Prediction | None) -> list[str]:
    lines = [("| rank | explanation | claim | quantity (early window) | fit AUC, seeds 1-2 (direction) | held-out AUC "
             "[95 % CI] | minus baseline [95 % CI] | informative strata / pairs | verdict |"),
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for rank, v in enumerate(ranked(verdicts), start=1):
        p, quantity = v.prediction, QUANTITY_NAMES.get(v.claim["quantity"], v.claim["quantity"])
        head = f"| {rank} | {v.explanation['name']} ({v.explanation['cite']}) | {v.claim['claim']} | {quantity} |"
        if p is None:
            lines.append(f"{head} - | - | - | - | **not measured** |")
            continue
        diff = "-" if p.difference is None else f"{p.difference:+.2f} [{p.diff_low:+.2f}, {p.diff_high:+.2f}]"
        lines.append(f"{head} {_fit(p)} | {_auc(p)} | {diff} | {len(p.informative)} / {p.pairs} | "
                     f"**{_prediction_text(v)}** |")  # fmt: skip
    if baseline is not None:
        lines.append(f"| - | baseline: the schedule alone | - | {QUANTITY_NAMES['early_lr']} | {_fit(baseline)} | "
                     f"{_auc(baseline)} | - | {len(baseline.informative)} / {baseline.pairs} | - |")  # fmt: skip
    return lines


def separation_lines(verdicts: list[PredictiveVerdict]) -> list[str]:
    """Which explanations this study tells apart: two are separated when their held-out AUC intervals are disjoint."""
    scored = [v for v in verdicts if v.prediction is not None and v.prediction.auc is not None
              and v.prediction.verdict is not Verdict.NOT_TESTABLE]  # fmt: skip
    if len(scored) < 2:
        return ["Fewer than two explanations could be scored: the study separates none of them."]
    apart, together = [], []
    for i, a in enumerate(scored):
        for b in scored[i + 1:]:
            pa, pb = a.prediction, b.prediction
            names = f"{a.explanation['name']} / {b.explanation['name']}"
            (apart if pa.low > pb.high or pb.low > pa.high else together).append(names)
    return [f"- told apart (held-out AUC intervals disjoint): {'; '.join(apart) if apart else 'none'}",
            f"- not told apart at this scale (intervals overlap): {'; '.join(together) if together else 'none'}"]


def _panel_runs(study: Study, stratum: str, quantity: str, last: int, test: set[int]) -> tuple[RunSeries, ...]:
    value, runs = REDUCED[quantity][0], []
    for arm in study.arms:
        if study.schedules.get(arm.name) != stratum or not arm.status.done:
            continue
        points = [(r["num_updates"], v) for r in study.rows.get(arm.name, [])
                  if r["num_updates"] <= last and (v := value(r)) is not None]  # fmt: skip
        label = f"{arm_name(arm.layout, arm.optimizer)}, seed {arm.seed}"
        runs.append(RunSeries(label, tuple(u for u, _ in points), tuple(v for _, v in points),
                              study.failed(arm), arm.seed in test))  # fmt: skip
    return tuple(runs)


def figures(study: Study, spec: dict[str, Any], figures_dir: Path, report_dir: Path) -> list[str]:
    window = tuple(spec["prediction"]["window"])
    test = set(spec["prediction"]["test_seeds"])
    strata = [s for s in dict.fromkeys(study.schedules[a.name] for a in study.arms if a.name in study.schedules)
              if len({study.failed(a) for a in study.arms if study.schedules.get(a.name) == s
                      and a.status.done}) == 2]  # fmt: skip
    lines = [(f"Strata holding both outcomes only; lr x lambda_c is infinite where the loss rose at every step down "
             f"the update, drawn at {INFINITE_AS:g}. Updates up to {2 * window[1]} are drawn."), ""]  # fmt: skip
    for index, (quantity, series) in enumerate(SERIES.items()):
        panels = [Panel(stratum_label(s), _panel_runs(study, s, quantity, 2 * window[1], test)) for s in strata]
        panels = [p for p in panels if any(r.updates for r in p.runs)]
        if panels:
            edge = 2.0 if quantity == "lr_sharpness_max" else None
            path = early_window_figure(panels, series, figures_dir / f"why_warmup_{index}.png", window, edge)
            lines += [f"![{series}]({path.relative_to(report_dir).as_posix()})", ""]
    return lines if len(lines) > 2 else []


def outcomes_table(study: Study) -> list[str]:
    lines = ["| arm | seeds | failed | final valid nll per seed |", "|---|---|---|---|"]
    for group in seed_groups(study.arms).values():
        done = [a for a in group if a.status.done]
        finals = ", ".join("diverged" if a.diverged else f"{nll:.2f}" if (nll := final_nll(a)) is not None else "-"
                           for a in done)  # fmt: skip
        first: Arm = group[0]
        warmup = f"{first.warmup} warm-up" if first.warmup else "no warm-up"
        name = f"{layout_names().get(first.layout, first.layout)}, {OPTIMIZER_NAMES.get(first.optimizer, first.optimizer)}"
        lines.append(f"| {name}, lr {first.lr:g}, {warmup} | {len(done)} | {sum(study.failed(a) for a in done)} | "
                     f"{finals} |")  # fmt: skip
    return lines


def why_warmup_section(sweep_dir: Path, arms: list[Arm], figures_dir: Path, report_dir: Path,
                       echo: Any = None) -> list[str]:  # fmt: skip
    spec = explanations_data()
    study = load_study(sweep_dir, arms, trained_margin())
    if not any(study.rows.values()):  # no run recorded diagnostics
        return []
    predictions, runs = check_predictions(study, spec), units(study, BASELINE, list(spec["prediction"]["window"]))
    baseline = predict(runs, runs, protocol(spec)) if runs else None  # the schedule alone, its own ranking row
    verdicts = check_explanations(study, spec, layout_names())
    if echo is not None:
        for v in ranked(predictions):
            echo(f"{v.claim['claim']} ({v.explanation['cite']}): {_prediction_text(v)}")
        for v in verdicts:
            echo(f"{v.claim['claim']} ({v.explanation['cite']}): {_verdict(v)}")
    p = spec["prediction"]
    plateau = f"{study.plateau:.2f} bits" if study.plateau is not None else "unknown: the dictionary is not here"
    words = {"margin": study.margin, "plateau": plateau, "w0": p["window"][0], "w1": p["window"][1],
             "fit": ", ".join(map(str, p["fit_seeds"])), "test": ", ".join(map(str, p["test_seeds"])),
             "need": p["min_strata"]}  # fmt: skip
    lines = ["## Why warm-up", "", *[line.format(**words) for line in INTRO], "", "### Strata", "",
             *strata_table(study, spec), "", "### Each explanation as a predictor of failure, ranked", "",
             *predictions_table(predictions, baseline), "", "What this study can and cannot separate:", "",
             *separation_lines(predictions), "", "### Arm claims (arms of one schedule, over seeds)", "",
             *claims_table(verdicts), ""]  # fmt: skip
    if withdrawn := [f"- `{claim['replaces']}` (issue 31: failing minus trained runs pooled over the sweep, confounded "
                     f"by warm-up) is withdrawn; re-decided above as `{claim['id']}`." for explanation in
                     spec["explanations"] for claim in explanation["claims"] if claim.get("replaces")]:  # fmt: skip
        lines += ["### Withdrawn claims", "", *withdrawn, ""]
    lines += ["### Runs by outcome", "", *outcomes_table(study), ""]
    if shown := figures(study, spec, figures_dir, report_dir):
        lines += ["### The quantities in the early window, failing and trained runs of one stratum", "", *shown]
    return lines
