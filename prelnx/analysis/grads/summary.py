"""The gradient study's numbers: grads.csv rows, mean and std over seeds, the JSON summary, and the closing table
beside the paper's Figure-3 numbers (prelnx/paper.yaml, `figure3`)."""

from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path
from typing import Any, Iterable

from prelnx.analysis.grads.study import LAYOUTS, WEIGHTS, ModelResult
from prelnx.paper import paper_data

CSV_COLUMNS = ("layout", "depth", "seed", "side", "layer", "weight", "grad_norm")
HIDDEN_COLUMNS = ("layout", "depth", "seed", "side", "layer", "rms")  # hidden.csv: each layer's output RMS at init
LAYER_KEYS = ("layout", "depth", "side", "layer", "weight")  # a per-layer statistic's group (hidden.csv's: no weight)


def result_rows(results: Iterable[ModelResult], hidden: bool = False) -> list[dict[str, Any]]:
    """grads.csv's rows, or hidden.csv's (`hidden`: the RMS of every layer's output, the residual stream) per model:
    by layout, depth, seed, encoder before decoder, layer, then weight."""
    columns = HIDDEN_COLUMNS if hidden else CSV_COLUMNS
    rows = [
        {"layout": r.spec.layout, "depth": r.spec.depth, "seed": r.spec.seed, **dict(zip(columns[3:], (*key, value)))}
        for r in results
        for key, value in (r.hidden_rms if hidden else r.norms).items()
    ]
    order = {"encoder": 0, "decoder": 1}
    return sorted(rows, key=lambda row: (row["layout"], row["depth"], row["seed"], order[row["side"]], row["layer"],
                                         row.get("weight", "")))  # fmt: skip


def hidden_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per layer mean/std over seeds, and per layout and depth the last layer's RMS over the first's."""
    stats = stats_by(rows, LAYER_KEYS[:-1], "rms")
    growth = {
        f"{layout} {depth} {side}": _ratio(stats[(layout, depth, side, depth)]["mean"], stats[(layout, depth, side, 1)]["mean"])
        for (layout, depth, side, layer) in stats if layer == 1 and (layout, depth, side, depth) in stats
    }  # fmt: skip
    return {"per_layer": _entries(stats, LAYER_KEYS[:-1]), "last_over_first_layer": growth}


def csv_text(rows: list[dict[str, Any]], columns: tuple[str, ...] = CSV_COLUMNS) -> str:
    """grads.csv (or hidden.csv, theory's CSVs: their columns), every float to 6 digits."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: (f"{value:.6g}" if isinstance(value, float) else value) for key, value in row.items()})
    return buffer.getvalue()


def read_grads_csv(path: Path) -> list[dict[str, Any]]:
    with open(path, newline="") as handle:
        return [
            {**row, "depth": int(row["depth"]), "seed": int(row["seed"]), "layer": int(row["layer"]),
             "grad_norm": float(row["grad_norm"])}
            for row in csv.DictReader(handle)
        ]  # fmt: skip


def _ratio(numerator: float, denominator: float) -> float:
    """A ratio of gradient norms; NaN where the denominator is 0 (ReZero's FFN gradients are 0 at initialisation:
    its a = 0 cuts every sublayer off the loss)."""
    return numerator / denominator if denominator else math.nan


def stats_by(rows: list[dict[str, Any]], keys: tuple[str, ...], value: str) -> dict[tuple, dict[str, float]]:
    """The rows' `keys` values -> mean, sample standard deviation (0 for a single seed) and n of `value` over seeds,
    in key order."""
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[key] for key in keys), []).append(row[value])
    return {key: {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                  "n": len(values)} for key, values in sorted(groups.items())}  # fmt: skip


def _entries(stats: dict[tuple, dict[str, float]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The summary's list form of `stats_by`: one dict per group, its keys then its statistics."""
    return [{**dict(zip(keys, key)), **values} for key, values in stats.items()]


def summarize(rows: list[dict[str, Any]], checkpoint_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON summary: per-layer mean/std over seeds, the last-layer W2 per depth, the growth across layers."""
    stats = stats_by(rows, LAYER_KEYS, "grad_norm")
    depths = sorted({row["depth"] for row in rows})
    layouts = sorted({row["layout"] for row in rows}, key=_table_order)  # the table's order, then a user's files
    last_w2 = {
        layout: {str(depth): stats[(layout, depth, "decoder", depth, "W2")] for depth in depths}
        for layout in layouts
    }  # fmt: skip
    shown = 6 if 6 in depths else depths[0]  # per layer in Figure 3 (a)(b): the paper's 6 when measured
    growth = {
        layout: {
            side: {weight: _ratio(stats[(layout, shown, side, shown, weight)]["mean"], stats[(layout, shown, side, 1, weight)]["mean"])
                   for weight in WEIGHTS}
            for side in ("encoder", "decoder")
        }
        for layout in layouts
    }  # fmt: skip
    summary: dict[str, Any] = {
        "layouts": layouts,
        "depths": depths,
        "seeds": sorted({row["seed"] for row in rows}),
        "last_layer_w2": last_w2,
        "last_layer_w2_falls_with_depth": {
            layout: _ratio(last_w2[layout][str(depths[-1])]["mean"], last_w2[layout][str(depths[0])]["mean"]) for layout in layouts
        },
        "growth_depth": shown,
        "growth_last_over_first_layer": growth,
        "per_layer": _entries(stats, LAYER_KEYS),
        "paper": paper_data()["figure3"],  # Figure 3 as read off its plots: text per layout
    }
    if checkpoint_rows:
        summary["checkpoint"] = _entries(stats_by(checkpoint_rows, LAYER_KEYS, "grad_norm"), LAYER_KEYS)
    return summary


def timing_summary(results: list[ModelResult], wall_s: float, workers: int, threads: int) -> dict[str, Any]:
    """Where the time went. The cost ratio is the machine time (wall x workers) over the time spent in fwd+bwd."""
    fwdbwd = sum(r.fwdbwd_s for r in results)
    return {
        "wall_s": wall_s,
        "fwdbwd_sum_s": fwdbwd,
        "build_sum_s": sum(r.build_s for r in results),
        "data_sum_s": sum(r.data_s for r in results),
        "workers": workers,
        "threads_per_worker": threads,
        "models": len(results),
        "cost_ratio": wall_s * workers / fwdbwd if fwdbwd else math.inf,
        "wall_over_fwdbwd_sum": wall_s / fwdbwd if fwdbwd else math.inf,
    }


def _table_order(layout: str) -> tuple[int, str]:
    """The layout table's order (post, pre, ...), a user's files after it."""
    return (LAYOUTS.index(layout) if tuple.__contains__(LAYOUTS, layout) else len(LAYOUTS), layout)


def report_lines(summary: dict[str, Any]) -> list[str]:
    """The closing table: our numbers beside the paper's."""
    paper = paper_data()["figure3"]
    lines = ["last-layer (decoder) W2 gradient norm, mean +- std over seeds:"]
    for layout, by_depth in summary["last_layer_w2"].items():
        cells = "  ".join(f"{depth}: {v['mean']:.3f}+-{v['std']:.3f}" for depth, v in by_depth.items())
        lines.append(f"  {layout:8s} {cells}   (paper: {paper['last_layer_w2'].get(layout, 'not in the paper')})")
    lines.append(f"last layer / first layer, at depth {summary['growth_depth']}:")
    for layout, sides in summary["growth_last_over_first_layer"].items():
        cells = "  ".join(f"{side} W1 {v['W1']:.2f} W2 {v['W2']:.2f}" for side, v in sides.items())
        lines.append(f"  {layout:8s} {cells}   (paper: {paper['per_layer'].get(layout, 'not in the paper')})")
    hidden = summary.get("hidden_rms", {}).get("last_over_first_layer", {})
    # keys are "LAYOUT DEPTH SIDE"; a user's layout is a path, which may hold spaces: split from the right
    parts = {key: key.rsplit(" ", 2) for key in hidden}
    shown = sorted(((key, ratio) for key, ratio in hidden.items() if parts[key][1] == str(summary["growth_depth"])),
                   key=lambda item: (_table_order(parts[item[0]][0]), item[0]))  # fmt: skip
    if shown:
        lines.append(f"layer output RMS at init, last layer / first layer, at depth {summary['growth_depth']} (hidden.csv):")
        lines += [f"  {parts[key][0]:8s} {parts[key][2]} {ratio:.2f}" for key, ratio in shown]
    t = summary["timing"]
    lines.append(
        f"time: wall {t['wall_s']:.1f} s, forward+backward {t['fwdbwd_sum_s']:.1f} s summed over {t['models']} models "
        f"({t['workers']} worker(s) x {t['threads_per_worker']} thread(s)); cost ratio wall x workers / fwd+bwd = "
        f"{t['cost_ratio']:.2f} (build {t['build_sum_s']:.1f} s, data {t['data_sum_s']:.1f} s summed)"
    )
    return lines
