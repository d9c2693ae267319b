"""Checking the paper's Figure 3 claims against a `prelnx grads` study (its grads_summary.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from prelnx.report.claims import NOT_MEASURED, Verdict, verdict

FLAT_BAND = (0.75, 1.33)  # a ratio deepest/shallowest inside this band counts as "flat in depth"


def load_gradient_summary(grads_dir: Path) -> dict[str, Any]:
    path = grads_dir / "grads_summary.json"
    if not path.is_file():
        raise ValueError(f"--grads {grads_dir}: no grads_summary.json (run `prelnx grads ... --out {grads_dir}`)")
    return json.loads(path.read_text())


def _by_depth(summary: dict[str, Any], layout: str) -> str:
    values = summary["last_layer_w2"][layout]
    return ", ".join(f"{depth} layers {v['mean']:.3g}" for depth, v in sorted(values.items(), key=lambda kv: int(kv[0])))


def postln_last_layer_flat_in_depth(summary: dict[str, Any]) -> Verdict:
    if "post" not in summary.get("last_layer_w2", {}) or len(summary["depths"]) < 2:
        return NOT_MEASURED
    ratio = summary["last_layer_w2_falls_with_depth"]["post"]
    measured = f"{_by_depth(summary, 'post')} (deepest/shallowest {ratio:.2f})"
    return Verdict(measured, verdict(FLAT_BAND[0] <= ratio <= FLAT_BAND[1]))


def preln_last_layer_falls_with_depth(summary: dict[str, Any]) -> Verdict:
    if "pre" not in summary.get("last_layer_w2", {}) or len(summary["depths"]) < 2:
        return NOT_MEASURED
    ratio = summary["last_layer_w2_falls_with_depth"]["pre"]
    shallow, deep = summary["depths"][0], summary["depths"][-1]
    expected = (shallow / deep) ** 0.5
    measured = (f"{_by_depth(summary, 'pre')} (deepest/shallowest {ratio:.2f}; "
                f"1/sqrt(L) predicts {expected:.2f})")  # fmt: skip
    return Verdict(measured, verdict(ratio < FLAT_BAND[0]))


def postln_grows_with_layer(summary: dict[str, Any]) -> Verdict:
    growth = summary.get("growth_last_over_first_layer", {})
    if "post" not in growth or "pre" not in growth:
        return NOT_MEASURED
    post, pre = growth["post"]["decoder"]["W2"], growth["pre"]["decoder"]["W2"]
    post_e, pre_e = growth["post"]["encoder"]["W2"], growth["pre"]["encoder"]["W2"]
    measured = (f"last/first layer W2 at depth {summary['growth_depth']}: Post-LN decoder {post:.2f}, encoder "
                f"{post_e:.2f}; Pre-LN decoder {pre:.2f}, encoder {pre_e:.2f}")  # fmt: skip
    return Verdict(measured, verdict(post > 1.2 and post > pre and FLAT_BAND[0] <= pre <= FLAT_BAND[1] * 1.2))


GRADIENT_CHECKS: dict[str, Callable[[dict[str, Any]], Verdict]] = {
    "postln_last_layer_flat_in_depth": postln_last_layer_flat_in_depth,
    "preln_last_layer_falls_with_depth": preln_last_layer_falls_with_depth,
    "postln_grows_with_layer": postln_grows_with_layer,
}
