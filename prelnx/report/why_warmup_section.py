"""The report's "Why warm-up" section (issues 38, 46, 49): each explanation as a predictor of which runs fail among
runs of one cell (every factor fixed per run but the seed: the design's baseline; methods.yaml's
`why_warmup.prediction` fixes the window, seeds and bootstrap, a sweep's own split under `studies`;
prelnx.report.predict decides), ranked by held-out AUC; the runs it could not read, with why; the interventions and
arm claims (prelnx.report.why_warmup); the cells with each seed's continuous outcome, and the early-window figures.
Only for runs that recorded diagnostics."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.console import results
from prelnx.paper import explanations_data
from prelnx.plots.why_warmup import INFINITE_AS, Panel, RunSeries, early_window_figure
from prelnx.report.arms import Arm, final_nll, trained_margin
from prelnx.report.predict import Prediction, Protocol, Unit, predict
from prelnx.report.render import claims_table
from prelnx.report.stats import Verdict
from prelnx.report.why_warmup import (
    QUANTITY_NAMES,
    REDUCED,
    SERIES,
    ExplanationVerdict,
    Study,
    arm_difference,
    arm_name,
    load_study,
    run_quantity,
    stratum_label,
)


@dataclass(frozen=True)
class PredictiveVerdict:
    explanation: dict[str, Any]
    claim: dict[str, Any]
    prediction: Prediction | None  # None: no run has the quantity in the window
    excluded: tuple[tuple[str, str], ...] = ()  # (run, why) of the runs the prediction could not read

    @property
    def text(self) -> str:
        p = self.prediction
        return "not measured (no run has it in the window)" if p is None else f"{p.verdict.value} ({p.why})"


def protocol(spec: dict[str, Any], sweep: str = "") -> Protocol:
    """methods.yaml's `why_warmup.prediction`, with the sweep's own entry under `studies` where it has one."""
    p = {**spec["prediction"], **(spec["prediction"].get("studies") or {}).get(sweep, {})}
    return Protocol(frozenset(p["fit_seeds"]), frozenset(p["test_seeds"]), int(p["min_cells"]),
                    int(p["resamples"]), int(p.get("rng_seed", 0)))  # fmt: skip


def units(study: Study, quantity: str, window: list[int]) -> tuple[list[Unit], list[tuple[str, str]]]:
    """One Unit per finished or diverged run with a cell and the quantity in the window (a run that diverged inside
    the window is read up to its divergence); every other run that ended, with why it could not be read."""
    found, excluded = [], []
    for arm in study.arms:
        if not arm.status.done:
            continue
        value = run_quantity(quantity, study.rows.get(arm.name, []), window)
        if arm.name not in study.cells:
            excluded.append((arm.name, "no config.yaml: no cell"))
        elif value is None or math.isnan(value):
            when = f"diverged at update {arm.diverged_at}, " if arm.diverged else ""
            what = "no" if value is None else "a NaN"
            excluded.append((arm.name, f"{when}{what} {QUANTITY_NAMES.get(quantity, quantity)} measured in updates "
                                       f"{window[0]}-{window[1]}"))  # fmt: skip
        else:
            found.append(Unit(study.cells[arm.name], study.schedules[arm.name], arm.seed, study.failed(arm), value,
                              study.worse(arm)))  # fmt: skip
    return found, excluded


def check_explanations(
    study: Study, spec: dict[str, Any], rules: Protocol
) -> tuple[list[PredictiveVerdict], list[ExplanationVerdict]]:
    """Every claim of every explanation in methods.yaml's why_warmup, decided on the study's runs: each
    `predicts_failure` within cells against the design baseline, each `arm_difference` on two arms over seeds."""
    window = list(spec["prediction"]["window"])
    predictions, verdicts = [], []
    for explanation in spec["explanations"]:
        for claim in explanation["claims"]:
            if claim["kind"] == "predicts_failure":
                runs, excluded = units(study, claim["quantity"], window)
                prediction = predict(runs, rules) if runs else None
                predictions.append(PredictiveVerdict(explanation, claim, prediction, tuple(excluded)))
            elif claim["kind"] == "arm_difference":
                verdicts.append(arm_difference(study, spec, claim, explanation))
            else:
                raise ValueError(f"methods.yaml why_warmup claim {claim['id']}: unknown kind {claim['kind']!r} "
                                 "(valid: arm_difference, predicts_failure)")  # fmt: skip
    return predictions, verdicts


def ranked(verdicts: list[PredictiveVerdict]) -> list[PredictiveVerdict]:
    """By held-out AUC, best first (not measured / no AUC last; ties by claim id, never by run order)."""
    return sorted(verdicts, key=lambda v: (-(v.prediction.auc if v.prediction and v.prediction.auc is not None
                                             else -1.0), v.claim["id"]))  # fmt: skip


def _seed_outcome(study: Study, arm: Arm, test: frozenset[int]) -> str:
    nll = final_nll(arm)
    text = (f"diverged at {arm.diverged_at}" if arm.diverged else f"{nll:.2f}" if nll is not None else "no nll")
    mark = "**" if study.failed(arm) else ""
    return f"s{arm.seed}{'*' if arm.seed in test else ''}: {mark}{text}{mark}"


def cells_table(study: Study, rules: Protocol) -> list[str]:
    """Per cell (every factor but the seed): each seed's continuous outcome, failures, and whether its held-out
    seeds hold both outcomes (a within-cell held-out pair)."""
    lines = ["| stratum (lr schedule) | cell (the keys that vary) | failed / trained | final valid nll per seed (bold: "
             "failed; *: held out) | held-out seeds hold both outcomes |", "|---|---|---|---|---|"]  # fmt: skip
    done = sorted((a for a in study.arms if a.status.done and a.name in study.cells),
                  key=lambda a: (study.schedules[a.name], study.cells[a.name], a.seed))  # fmt: skip
    for (stratum, cell), group in itertools.groupby(done, key=lambda a: (study.schedules[a.name], study.cells[a.name])):
        group = list(group)
        failed = sum(study.failed(a) for a in group)
        held = {study.failed(a) for a in group if a.seed in rules.test_seeds}
        seeds = ", ".join(_seed_outcome(study, a, rules.test_seeds) for a in group)
        cell_label = ", ".join(f"{key.rsplit('.', 1)[-1]} {value.strip(chr(39))}" for key, value in cell) or "one cell"
        lines.append(f"| {stratum_label(stratum)} | {cell_label} | {failed} / {len(group) - failed} | {seeds} | "
                     f"{'yes' if held == {True, False} else 'no'} |")  # fmt: skip
    return lines


INTRO = [
    "Each explanation of why Post-LN needs warm-up names a quantity that should be large early in the runs that go",
    "on to fail (prelnx/methods.yaml, `why_warmup`, written before the runs; docs/why_warmup.md). A run *failed* when",
    "it diverged or its final valid nll is not {margin:g} bit below the unigram plateau ({plateau}); the continuous",
    "outcome (final valid nll; a diverged run is worse than any that finished, an earlier divergence worse) is shown",
    "beside it, and the verdict uses the binary one. Each quantity is read only in the early window, updates {w0}-{w1}",
    "(a run that diverged there up to its divergence; a run with no measurement there is listed as excluded). A",
    "*cell* is every factor the design fixes per run but the seed (layout, optimizer, lr schedule, any other key that",
    "varies): the baseline is the cell itself, so a pair (failing run, trained run) never crosses a cell, and a",
    "quantity that is a function of the layout or the schedule ties every pair (AUC 0.5, the baseline's). The",
    "direction is fitted on seeds {fit}; the held-out AUC is scored on the within-cell pairs of seeds {test} (1 =",
    "every pair ordered right). The interval is a 95 % bootstrap over **cells** (a cell carries all its seeds); the",
    "permutation p permutes the outcomes among each held-out cell's runs, exact when the assignments can be",
    "enumerated. holds: the interval of AUC minus the baseline lies above 0 in the claimed direction and p < 0.05;",
    "does not hold: at or below 0 (or above it the other way round); inconclusive: otherwise; not testable: fewer",
    "than {need} informative cells (held-out runs of both outcomes in one cell), and *with this design* when no cell",
    "holds both outcomes. The C-index beside it is the same held-out score on the continuous outcome (descriptive).",
]


def predictions_table(verdicts: list[PredictiveVerdict]) -> list[str]:
    lines = [("| rank | explanation | claim | quantity (early window) | fit AUC (direction; pairs) | held-out AUC "
              "[95 % CI] | minus baseline [95 % CI] | informative cells / pairs | permutation p | C-index, continuous "
              "| runs read / excluded | verdict |"), "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for rank, v in enumerate(ranked(verdicts), start=1):
        p, quantity = v.prediction, QUANTITY_NAMES.get(v.claim["quantity"], v.claim["quantity"])
        head = f"| {rank} | {v.explanation['name']} ({v.explanation['cite']}) | {v.claim['claim']} | {quantity} |"
        if p is None:
            lines.append(f"{head} - | - | - | - | - | - | 0 / {len(v.excluded)} | **not measured** |")
            continue
        direction = {1: "larger fails", -1: "smaller fails", 0: "none"}[p.direction]
        pairs = f"{p.fit_pairs} pair{'s' if p.fit_pairs != 1 else ''}"
        fit = "-" if p.fit_auc is None else f"{p.fit_auc:.2f} ({direction}; {pairs})"
        diff = "-" if p.difference is None else f"{p.difference:+.2f} [{p.diff_low:+.2f}, {p.diff_high:+.2f}]"
        pv = "-" if not p.pairs or not p.direction else f"{p.p_value:.3g} ({'exact' if p.exact else 'Monte Carlo'})"
        cont = "-" if p.continuous is None else f"{p.continuous:.2f}"
        auc = "-" if p.auc is None else f"{p.auc:.2f} [{p.low:.2f}, {p.high:.2f}]"
        lines.append(f"{head} {fit} | {auc} | {diff} | {len(p.informative)} / {p.pairs} | {pv} | {cont} | "
                     f"{p.runs} / {len(v.excluded)} | **{v.text}** |")  # fmt: skip
    return lines


def excluded_lines(verdicts: list[PredictiveVerdict]) -> list[str]:
    """Each run a prediction could not read, once, with why and the claims it is missing from."""
    why: dict[tuple[str, str], list[str]] = {}
    for v in verdicts:
        for run, reason in v.excluded:
            why.setdefault((run, reason), []).append(v.claim["id"])
    return [f"- {run}: {reason} (not in {', '.join(claims)})" for (run, reason), claims in sorted(why.items())]


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
    test = set(protocol(spec, study.sweep).test_seeds)  # the sweep's own split where it has one
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


def why_warmup_section(sweep_dir: Path, arms: list[Arm], figures_dir: Path, report_dir: Path,
                       say_claims: bool = False) -> list[str]:  # fmt: skip
    spec = explanations_data()
    study = load_study(sweep_dir, arms, trained_margin())
    if not any(study.rows.values()):  # no run recorded diagnostics
        return []
    rules = protocol(spec, study.sweep)
    predictions, verdicts = check_explanations(study, spec, rules)
    if say_claims:
        for v in [*ranked(predictions), *verdicts]:
            results.info(f"{v.claim['claim']} ({v.explanation['cite']}): {v.text}")
    p = spec["prediction"]
    plateau = f"{study.plateau:.2f} bits" if study.plateau is not None else "unknown: the dictionary is not here"
    words = {"margin": study.margin, "plateau": plateau, "w0": p["window"][0], "w1": p["window"][1],
             "fit": ", ".join(map(str, sorted(rules.fit_seeds))), "test": ", ".join(map(str, sorted(rules.test_seeds))),
             "need": rules.min_cells}  # fmt: skip
    lines = ["## Why warm-up", "", *[line.format(**words) for line in INTRO], "",
             "### Cells (runs sharing every factor but the seed)", "", *cells_table(study, rules), "",
             "### Each explanation as a predictor of failure within cells, ranked", "",
             *predictions_table(predictions), ""]  # fmt: skip
    if excluded := excluded_lines(predictions):
        lines += ["Runs a predictor could not read (counted in the cells above, not in its AUC):", "", *excluded, ""]
    arm_claims = [{"id": v.claim["id"], "explanation": f"{v.explanation['name']} ({v.explanation['cite']})",
                   "claim": v.claim["claim"]} for v in verdicts]  # fmt: skip
    lines += ["What this study can and cannot separate:", "", *separation_lines(predictions), "",
              "### Interventions and arm claims (arms of one schedule, over seeds)", "",
              *claims_table(arm_claims, {v.claim["id"]: v.outcome for v in verdicts}, ("explanation", "claim"),
                            "measured: mean per arm over seeds, difference [95 % CI], claimed side",
                            {v.claim["id"]: v.text for v in verdicts}), ""]  # fmt: skip
    if withdrawn := [f"- `{claim['replaces']}` (issue 31: failing minus trained runs pooled over the sweep, confounded "
                     f"by warm-up) is withdrawn; re-decided above as `{claim['id']}`." for explanation in
                     spec["explanations"] for claim in explanation["claims"] if claim.get("replaces")]:  # fmt: skip
        lines += ["### Withdrawn claims", "", *withdrawn, ""]
    if shown := figures(study, spec, figures_dir, report_dir):
        lines += ["### The quantities in the early window, failing and trained runs of one stratum", "", *shown]
    return lines
