"""The paper's Figure 3 claims checked against a `prelnx grads` study (its grads.csv and grads_summary.json): per
seed a ratio of decoder W2 gradient norms (last layer, deepest over shallowest depth: Figure 3c/d; last layer over
the first: 3a/b), its mean's one-sample 95 % t interval against paper.yaml's band; "like 1/sqrt(L)" as the ratio
over sqrt(shallow / deep) inside `rate_band`. A verdict against the paper says whether plain fairseq's models were
measured (grads_summary.json's settings.models; tests/analysis/test_grads.py checks fairseq's own build).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.config.errors import Refusal
from prelnx.layouts import display_name
from prelnx.report.outcome import Case, ClaimOutcome, not_measured
from prelnx.report.stats import Sample, Verdict, above, compare


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
    return Sample(label, tuple(top[s] / bottom[s] for s in seeds))


def _depth_ratio(summary: dict[str, Any], layout: str) -> Sample:
    shallow, deep = summary["depths"][0], summary["depths"][-1]
    return _ratio(f"{display_name(layout)} last-layer W2, {deep} / {shallow} layers",
                  _norms(summary, layout, deep, deep), _norms(summary, layout, shallow, shallow))  # fmt: skip


def _layer_ratio(summary: dict[str, Any], layout: str) -> Sample:
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


def _band(spec: dict[str, Any]) -> tuple[float, float]:
    low, high = spec["band"]
    return float(low), float(high)


def postln_last_layer_flat_in_depth(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    if "post" not in summary.get("last_layer_w2", {}) or len(summary["depths"]) < 2:
        return not_measured(spec["id"], "needs Post-LN at two depths or more")
    case = Case("Post-LN", compare("ratio", _depth_ratio(summary, "post"), None, _band(spec)))
    return _with_note(ClaimOutcome(spec["id"], [case]), summary, ("post",))


def preln_last_layer_falls_with_depth(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    if "pre" not in summary.get("last_layer_w2", {}) or len(summary["depths"]) < 2:
        return not_measured(spec["id"], "needs Pre-LN at two depths or more")
    shallow, deep = summary["depths"][0], summary["depths"][-1]
    ratio = _depth_ratio(summary, "pre")
    predicted = (shallow / deep) ** 0.5
    cases = [Case("Pre-LN falls", compare("ratio", ratio, None, _band(spec)))]
    if "rate_band" in spec:
        low, high = spec["rate_band"]
        rate = Sample(f"{ratio.label} over 1/sqrt(L)'s {predicted:.2f}", tuple(v / predicted for v in ratio.values))
        cases.append(Case("like 1/sqrt(L)", compare("ratio", rate, None, (float(low), float(high)))))
    outcome = ClaimOutcome(spec["id"], cases)
    outcome.notes.append(f"1/sqrt(L) predicts {predicted:.2f}")
    return _with_note(outcome, summary, ("pre",))


def postln_grows_with_layer(summary: dict[str, Any], spec: dict[str, Any]) -> ClaimOutcome:
    if not {"post", "pre"} <= set(summary.get("growth_last_over_first_layer", {})):
        return not_measured(spec["id"], "needs Post-LN and Pre-LN")
    outcome = ClaimOutcome(spec["id"], [
        Case("Post-LN grows", compare("ratio", _layer_ratio(summary, "post"), None, above(float(spec["grows_above"])))),
        Case("Pre-LN about flat", compare("ratio", _layer_ratio(summary, "pre"), None, _band(spec))),
    ])  # fmt: skip
    return _with_note(outcome, summary, ("post", "pre"))


GRADIENT_CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], ClaimOutcome]] = {
    "postln_last_layer_flat_in_depth": postln_last_layer_flat_in_depth,
    "preln_last_layer_falls_with_depth": preln_last_layer_falls_with_depth,
    "postln_grows_with_layer": postln_grows_with_layer,
}
