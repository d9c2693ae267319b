"""The "Why warm-up" figures of a report: one figure per diagnostics quantity, one panel per layout and optimizer,
warm-up (solid) and no warm-up (dashed) overlaid, each the mean over seeds (geometric: the quantities span decades)
with a min-max band, and a cross where a run failed: its last update when it diverged, else (a run that never
trained) at its last measured update, so that the eye finds the failing runs. lr x lambda_c also draws its edge, 2.
The report computes the series (prelnx.report.why_warmup.SERIES); this module only draws them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

INFINITE_AS = 1e3  # lr x lambda_c where the loss rose at every step down: drawn here (the report says so)


@dataclass(frozen=True)
class SeedSeries:
    updates: tuple[int, ...]
    values: tuple[float, ...]
    failed: bool
    diverged: bool


@dataclass(frozen=True)
class Curve:
    panel: str  # e.g. "Post-LN, GI-Adam"
    warmup: bool
    seeds: tuple[SeedSeries, ...]


def _mean_band(seeds: tuple[SeedSeries, ...]) -> tuple[list[int], list[float], list[float], list[float]]:
    by_update: dict[int, list[float]] = {}
    for seed in seeds:
        for u, v in zip(seed.updates, seed.values):
            if v is not None and v > 0:
                by_update.setdefault(u, []).append(min(v, INFINITE_AS))
    updates = sorted(u for u, vs in by_update.items() if len(vs) == len(seeds))  # every seed measured there
    mean = [math.exp(sum(math.log(v) for v in by_update[u]) / len(by_update[u])) for u in updates]
    return updates, mean, [min(by_update[u]) for u in updates], [max(by_update[u]) for u in updates]


def why_warmup_figure(curves: list[Curve], quantity: str, out: Path, edge: float | None = None) -> Path:
    """One quantity: a panel per layout x optimizer; returns the PNG's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(c.panel for c in curves))
    columns = min(3, len(panels)) or 1
    rows = math.ceil(len(panels) / columns) or 1
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False, sharey=True)
    for ax, panel in zip(axes.flat, panels):
        for curve in (c for c in curves if c.panel == panel):
            color, style = ("tab:blue", "-") if curve.warmup else ("tab:red", "--")
            updates, mean, low, high = _mean_band(curve.seeds)
            label = f"{'warm-up' if curve.warmup else 'no warm-up'} ({len(curve.seeds)} seeds)"
            ax.plot(updates, mean, linestyle=style, color=color, linewidth=1.3, label=label)
            ax.fill_between(updates, low, high, color=color, alpha=0.15, linewidth=0)
            for seed in curve.seeds:
                points = [(u, min(v, INFINITE_AS)) for u, v in zip(seed.updates, seed.values) if v is not None and v > 0]
                if seed.failed and points:
                    ax.plot(*points[-1], marker="x", color="black", markersize=6)
        if edge is not None:
            ax.axhline(edge, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("update")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(f"{quantity}: mean over seeds, min-max band; x: a run that failed", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
