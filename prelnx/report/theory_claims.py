"""Section 3's claims at initialisation, every seed through stats.compare with paper.yaml's numbers and margins, the
one owner of these rules (the report, the claims table and variant_gradients decide through them; docs/gradients.md).
Figure 3 on a `prelnx grads` study: per seed a ratio of decoder W2 gradient norms (3c/d: last layer, deepest over
shallowest depth; 3a/b: last layer over the first) against paper.yaml's band; a verdict against the paper says whether
plain fairseq's models were measured. Lemma 1 (Section 3.3) on a `prelnx theory` run: Post-LN's ||x^{post,5}_l||^2 / d
at 3/2; Pre-LN's ||x^pre_l||^2 / d inside [1 + l/2, 1 + 3l/2] per layer, its growth per layer inside [1/2, 3/2]."""

from __future__ import annotations

import csv
import functools
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.exits import Refusal
from prelnx.layouts import display_name
from prelnx.paper import paper_data
from prelnx.report.outcome import Case, ClaimOutcome, check_claims
from prelnx.report.stats import Comparison, Sample, Verdict, above, compare


def load_gradient_summary(grads_dir: Path) -> dict[str, Any]:
    """grads_summary.json, with the per-seed rows of grads.csv under `rows`."""
    from prelnx.analysis.grads.summary import read_grads_csv

    path, table = grads_dir / "grads_summary.json", grads_dir / "grads.csv"
    if not path.is_file() or not table.is_file():
        missing = path.name if not path.is_file() else table.name
        raise Refusal(f"--grads {grads_dir}: no {missing} (run `prelnx grads ... --out {grads_dir}`)")
    return {**json.loads(path.read_text()), "rows": read_grads_csv(table)}


def _norms(summary: dict[str, Any], layout: str, depth: int, layer: int) -> dict[int, float]:
    """seed -> the decoder W2 gradient norm of `layer` at `depth`."""
    return {r["seed"]: r["grad_norm"] for r in summary["rows"] if r["layout"] == layout and r["depth"] == depth
            and r["side"] == "decoder" and r["layer"] == layer and r["weight"] == "W2"}  # fmt: skip


def _ratio(label: str, top: dict[int, float], bottom: dict[int, float]) -> Sample:
    seeds = sorted(set(top) & set(bottom))
    return Sample(label, tuple(top[s] / bottom[s] if bottom[s] else math.nan for s in seeds))  # 0: no value


def depth_ratio(summary: dict[str, Any], layout: str) -> Sample:
    """Per seed the layout's last-layer decoder W2 gradient norm at the deepest depth over the shallowest's (3c/d)."""
    shallow, deep = summary["depths"][0], summary["depths"][-1]
    return _ratio(f"{display_name(layout)} last-layer W2, {deep} / {shallow} layers",
                  _norms(summary, layout, deep, deep), _norms(summary, layout, shallow, shallow))  # fmt: skip


def layer_ratio(summary: dict[str, Any], layout: str) -> Sample:
    """Per seed the layout's decoder W2 gradient norm, last layer over the first, at `growth_depth` (3a/b)."""
    depth = summary["growth_depth"]
    return _ratio(f"{display_name(layout)} decoder W2, layer {depth} / layer 1 at depth {depth}",
                  _norms(summary, layout, depth, depth), _norms(summary, layout, depth, 1))  # fmt: skip


def fairseq_note(summary: dict[str, Any], layouts: tuple[str, ...]) -> str:
    """Whether the measured models are plain fairseq's (from what prelnx grads recorded), for a disagreeing verdict."""
    models = (summary.get("settings") or {}).get("models")
    if not models or any(layout not in models for layout in layouts):
        return ("Plain fairseq: not recorded in this grads_summary.json (made before prelnx grads recorded its "
                "models); rerun `prelnx grads` to have it said here")  # fmt: skip
    own = [layout for layout in layouts if models[layout].get("fairseq_model")]
    said = "; ".join(f"{display_name(layout)}: fairseq's `{models[layout]['arch']}`"
                     f"{' ' + ' '.join(models[layout]['flags']) if models[layout]['flags'] else ''}" for layout in layouts)  # fmt: skip
    if len(own) == len(layouts):
        return f"**Plain fairseq disagrees too**: these are fairseq's own models, no prelnx model code ({said})"
    return f"Not plain fairseq: some layouts ran prelnx's plugin model ({said}); plain fairseq was not measured"


def _with_note(outcome: ClaimOutcome, summary: dict[str, Any], layouts: tuple[str, ...]) -> ClaimOutcome:
    if outcome.verdict is Verdict.DOES_NOT_HOLD:
        outcome.notes.append(fairseq_note(summary, layouts))
    return outcome


def _level(metric: str, sample: Sample, region: tuple[float, float]) -> Comparison:
    """Every claim here compares a level of one sample (a ratio, a norm: shown unsigned) with paper.yaml's region."""
    return compare(metric, sample, None, region, level=True)


def _band(spec: dict[str, Any], key: str = "band") -> tuple[float, float]:
    low, high = spec[key]
    return float(low), float(high)


def last_layer_in_depth(summary: dict[str, Any], spec: dict[str, Any], layout: str, label: str) -> ClaimOutcome:
    """The layout's depth_ratio in paper.yaml's band; with a `rate_band` (Pre-LN's), also like 1/sqrt(L)."""
    if layout not in summary.get("last_layer_w2", {}) or len(summary["depths"]) < 2:
        return ClaimOutcome(spec["id"], missing=f"needs {display_name(layout)} at two depths or more")
    ratio = depth_ratio(summary, layout)
    outcome = ClaimOutcome(spec["id"], [Case(label, _level("ratio", ratio, _band(spec)))])
    if layout == "pre":
        shallow, deep = summary["depths"][0], summary["depths"][-1]
        predicted = (shallow / deep) ** 0.5
        if "rate_band" in spec:
            rate = Sample(f"{ratio.label} over 1/sqrt(L)'s {predicted:.2f}", tuple(v / predicted for v in ratio.values))
            outcome.cases.append(Case("like 1/sqrt(L)", _level("ratio", rate, _band(spec, "rate_band"))))
        outcome.notes.append(f"1/sqrt(L) predicts {predicted:.2f}")
    return _with_note(outcome, summary, (layout,))


def postln_grows_with_layer(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    if not {"post", "pre"} <= set(summary.get("growth_last_over_first_layer", {})):
        return ClaimOutcome(spec["id"], missing="needs Post-LN and Pre-LN")
    outcome = ClaimOutcome(spec["id"], [
        Case("Post-LN grows", _level("ratio", layer_ratio(summary, "post"), above(float(spec["grows_above"])))),
        Case("Pre-LN about flat", _level("ratio", layer_ratio(summary, "pre"), _band(spec))),
    ])  # fmt: skip
    return _with_note(outcome, summary, ("post", "pre"))


GRADIENT_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], ClaimOutcome]] = {
    "postln_last_layer_flat_in_depth": functools.partial(last_layer_in_depth, layout="post", label="Post-LN"),
    "preln_last_layer_falls_with_depth": functools.partial(last_layer_in_depth, layout="pre", label="Pre-LN falls"),
    "postln_grows_with_layer": postln_grows_with_layer,
}


def gradient_claims() -> list[dict[str, Any]]:
    return paper_data()["gradients"]


# Lemma 1 (Section 3.3), on a `prelnx theory` run's per-seed rows.
NORM = "‖x‖²/d"
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
    layers = len(next(iter(seeds.values())))
    values = tuple(statistics.fmean(row["post"] for row in by_layer.values()) for by_layer in seeds.values())
    sample = Sample(f"Post-LN ‖x^(post,5)‖²/d, mean over {layers} layers (d {summary['d']})", values)
    region = (expectation - margin, expectation + margin)
    outcome = ClaimOutcome(spec["id"], [Case("every seed's mean over layers", _level(NORM, sample, region))])
    outcome.notes.append(f"Lemma 1: {expectation:g}, claimed within ±{margin:g}")
    return outcome


def preln_hidden_norm_grows_linearly(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    """Per layer inside the paper's bounds; each seed's growth per layer inside the bounds' slopes."""
    seeds = _by_seed(summary)
    intercept, low, high = float(spec["intercept"]), float(spec["low_slope"]), float(spec["high_slope"])
    layers = sorted(set.intersection(*(set(by_layer) for by_layer in seeds.values())))
    outcome = ClaimOutcome(spec["id"])
    for layer in layers:
        sample = Sample(f"Pre-LN ‖x_{layer}‖²/d", tuple(by_layer[layer]["pre"] for by_layer in seeds.values()))
        region = (intercept + low * layer, intercept + high * layer)
        outcome.cases.append(Case(f"layer {layer}", _level(NORM, sample, region)))
    if len(layers) > 1:
        slopes = tuple(_slope(layers, [by_layer[layer]["pre"] for layer in layers]) for by_layer in seeds.values())
        sample = Sample(f"Pre-LN ‖x_l‖²/d, least-squares slope over layers {layers[0]}-{layers[-1]}", slopes)
        outcome.cases.append(Case("grows linearly", _level(GROWTH, sample, (low, high))))
    else:
        outcome.notes.append("one layer: no growth per layer to measure")
    return outcome


def _slope(layers: list[int], values: list[float]) -> float:
    """The least-squares slope; nan (a seed with no value, stats.finite_only) when a layer's value is not finite."""
    return statistics.linear_regression(layers, values).slope if all(map(math.isfinite, values)) else math.nan


THEORY_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], ClaimOutcome]] = {  # a claim id: its check's name
    check.__name__: check for check in (postln_hidden_norm_three_halves, preln_hidden_norm_grows_linearly)
}


def theory_claims() -> list[dict[str, Any]]:
    return paper_data()["theory"]


def check_theory(summary: dict[str, Any]) -> dict[str, ClaimOutcome]:
    """Every `theory` claim of paper.yaml decided from the summary's per-seed rows (none: each not measured)."""
    if not summary["rows"]:
        return {claim["id"]: ClaimOutcome(claim["id"], missing="the theory run has no rows")
                for claim in theory_claims()}  # fmt: skip
    return check_claims(theory_claims(), THEORY_CHECKS, summary)


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

