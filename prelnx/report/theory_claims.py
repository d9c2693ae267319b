"""Section 3.3's Lemma 1 against a `prelnx theory` run, every seed through prelnx.report.stats.compare with
paper.yaml's `theory` numbers and margins: Post-LN's ||x^{post,5}_l||^2 / d (mean over layers) at 3/2; Pre-LN's
||x^pre_l||^2 / d inside [1 + l/2, 1 + 3l/2] per layer and its least-squares growth per layer inside [1/2, 3/2].
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.config.errors import Refusal
from prelnx.paper import paper_data
from prelnx.report.outcome import Case, ClaimOutcome, not_measured
from prelnx.report.stats import Sample, compare

NORM = "‖x‖²/d"  # a level, not a difference (prelnx.report.render.LEVELS)
GROWTH = "growth of ‖x‖²/d per layer"
HEADER = "Lemma 1 decided from every seed (paper.yaml's numbers and margins; a 95 % t interval over the seeds):"


def load_theory_summary(theory_dir: Path) -> dict[str, Any]:
    """theory_summary.json, with theory_hidden.csv's per-seed rows under `rows` (any `prelnx theory --out`)."""
    path, table = theory_dir / "theory_summary.json", theory_dir / "theory_hidden.csv"
    if not path.is_file() or not table.is_file():
        missing = path.name if not path.is_file() else table.name
        raise Refusal(f"{theory_dir}: no {missing} (run `prelnx theory --out {theory_dir}`)")
    with table.open(newline="") as handle:
        rows = [{"seed": int(r["seed"]), "layer": int(r["layer"]), "post": float(r["post"]), "pre": float(r["pre"])}
                for r in csv.DictReader(handle)]  # fmt: skip
    return {**json.loads(path.read_text()), "rows": rows}


def _by_seed(summary: dict[str, Any]) -> dict[int, dict[int, dict[str, Any]]]:
    """seed -> layer -> that draw's row."""
    seeds: dict[int, dict[int, dict[str, Any]]] = {}
    for row in summary["rows"]:
        seeds.setdefault(int(row["seed"]), {})[int(row["layer"])] = row
    return seeds


def postln_hidden_norm_three_halves(summary: dict[str, Any], spec: dict[str, Any], expectation: float | None = None,
                                    margin: float | None = None) -> ClaimOutcome:  # fmt: skip
    """Against paper.yaml's expectation +- margin, or those given (a test passes a wrong one to see it refused)."""
    expectation = float(spec["expectation"] if expectation is None else expectation)
    margin = float(spec["margin"] if margin is None else margin)
    seeds = _by_seed(summary)
    if not seeds:
        return not_measured(spec["id"], "the theory run has no rows")
    layers = len(next(iter(seeds.values())))
    values = tuple(statistics.fmean(row["post"] for row in by_layer.values()) for by_layer in seeds.values())
    sample = Sample(f"Post-LN ‖x^(post,5)‖²/d, mean over {layers} layers (d {summary['d']})", values)
    region = (expectation - margin, expectation + margin)
    outcome = ClaimOutcome(spec["id"], [Case("every seed's mean over layers", compare(NORM, sample, None, region))])
    outcome.notes.append(f"Lemma 1: {expectation:g}, claimed within ±{margin:g}")
    return outcome


def preln_hidden_norm_grows_linearly(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    """Per layer inside the paper's bounds; each seed's growth per layer inside the bounds' slopes."""
    seeds = _by_seed(summary)
    if not seeds:
        return not_measured(spec["id"], "the theory run has no rows")
    intercept, low, high = float(spec["intercept"]), float(spec["low_slope"]), float(spec["high_slope"])
    layers = sorted(set.intersection(*(set(by_layer) for by_layer in seeds.values())))
    outcome = ClaimOutcome(spec["id"])
    for layer in layers:
        sample = Sample(f"Pre-LN ‖x_{layer}‖²/d", tuple(by_layer[layer]["pre"] for by_layer in seeds.values()))
        region = (intercept + low * layer, intercept + high * layer)
        outcome.cases.append(Case(f"layer {layer}", compare(NORM, sample, None, region)))
    if len(layers) > 1:
        slopes = tuple(statistics.linear_regression(layers, [by_layer[layer]["pre"] for layer in layers]).slope
                       for by_layer in seeds.values())
        sample = Sample(f"Pre-LN ‖x_l‖²/d, least-squares slope over layers {layers[0]}-{layers[-1]}", slopes)
        outcome.cases.append(Case("grows linearly", compare(GROWTH, sample, None, (low, high))))
    else:
        outcome.notes.append("one layer: no growth per layer to measure")
    return outcome


THEORY_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], ClaimOutcome]] = {
    "postln_hidden_norm_three_halves": postln_hidden_norm_three_halves,
    "preln_hidden_norm_grows_linearly": preln_hidden_norm_grows_linearly,
}


def theory_claims() -> list[dict[str, Any]]:
    return paper_data()["theory"]


def check_theory(summary: dict[str, Any]) -> dict[str, ClaimOutcome]:
    """Every `theory` claim of paper.yaml decided from the summary's per-seed rows."""
    return {claim["id"]: THEORY_CHECKS[claim["id"]](summary, claim) for claim in theory_claims()}


def _case_record(case: Case, verdict: Any) -> dict[str, Any]:
    c = case.comparison
    return {"label": case.label, "quantity": c.a.label, "per_seed": list(c.a.values), "estimate": c.estimate,
            "low": c.low, "high": c.high, "region": list(c.region), "test": c.test, "reason": c.reason,
            "verdict": verdict.value}  # fmt: skip


def judge(summary: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """What `prelnx theory` records and prints (analysis.theory.run_theory's `judge`): per claim its verdict (in
    words, as the report writes it), each case's per-seed values, estimate, interval and region; and the lines."""
    from prelnx.report.render import claims_text, verdict_text

    claims, outcomes = theory_claims(), check_theory(summary)
    verdicts = {claim["id"]: {"claim": claim["claim"], "source": claim["source"], "paper": claim["paper"],
                              "verdict": verdict_text(outcomes[claim["id"]]),
                              "cases": [_case_record(j.case, j.verdict) for j in outcomes[claim["id"]].judged()],
                              "notes": outcomes[claim["id"]].notes}
                for claim in claims}  # fmt: skip
    return verdicts, [HEADER, *claims_text(claims, outcomes)]

