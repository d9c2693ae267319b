"""The "Why warm-up" figures of a report: per quantity, a panel per stratum (runs that share the lr schedule), every
run a line (red failed, blue trained, dashed the held-out seed's), the predictors' early window shaded. The report
computes the series (prelnx.report.why_warmup.REDUCED, named by SERIES); this module only draws them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from prelnx.plots.diagnostics import new_figure, save_figure

INFINITE_AS = 1e3  # lr x lambda_c where the loss rose at every step down: drawn here (the report says so)


@dataclass(frozen=True)
class RunSeries:
    label: str  # e.g. "Post-LN Adam, seed 3"
    updates: tuple[int, ...]
    values: tuple[float, ...]
    failed: bool
    held_out: bool


@dataclass(frozen=True)
class Panel:
    title: str  # the stratum
    runs: tuple[RunSeries, ...]


def early_window_figure(panels: list[Panel], quantity: str, out: Path, window: tuple[int, int],
                        edge: float | None = None) -> Path:  # fmt: skip
    """One quantity, a panel per stratum; returns the PNG's path."""
    columns = min(3, len(panels)) or 1
    rows = math.ceil(len(panels) / columns) or 1
    fig, axes = new_figure((4.4 * columns, 3.3 * rows), rows, columns, squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        ax.axvspan(window[0], window[1], color="grey", alpha=0.12, linewidth=0)
        for run in panel.runs:
            points = [(u, min(v, INFINITE_AS)) for u, v in zip(run.updates, run.values) if v is not None and v > 0]
            if not points:
                continue
            color = "tab:red" if run.failed else "tab:blue"
            ax.plot(*zip(*points), color=color, linestyle="--" if run.held_out else "-", linewidth=1.0,
                    marker=".", markersize=3, alpha=0.85)  # fmt: skip
        if edge is not None:
            ax.axhline(edge, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(panel.title, fontsize=8)
        ax.set_xlabel("update")
        ax.plot([], [], color="tab:red", label="failed")
        ax.plot([], [], color="tab:blue", label="trained")
        ax.plot([], [], color="black", linestyle="--", label="held-out seed")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(f"{quantity}: every run of each stratum; shaded: the early window the predictors read", fontsize=9)
    return save_figure(fig, out.parent, out.stem, ("png",), dpi=100)[0]
