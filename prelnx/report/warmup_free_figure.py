"""The warm-up-free benchmark's figure: the methods ranked (best at the top), each arm's mean final valid loss with
its 95 % interval over seeds, warm-up or not and the lr as distinct markers (matplotlib's object API, drawn by Agg,
PNG)."""

from __future__ import annotations

import logging
from pathlib import Path

from prelnx.report.warmup_free import RankRow

MARKERS = "osD^vP*X"  # one per lr


def plot_ranking(rows: list[RankRow], path: Path) -> Path:
    """One line per method (per method and optimizer when a method ran with several, e.g. T-Fixup's Adam and RAdam
    readings), ordered by its best arm's mean; within it one marker per arm: the lr's shape, filled with warm-up and
    hollow without; the bar is the 95 % t interval (none with one seed)."""
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's import may have set the root to DEBUG
    from matplotlib.figure import Figure  # the object API, no pyplot: a sweep reports from threads

    optimizers: dict[str, set[str]] = {}
    for r in rows:
        optimizers.setdefault(r.method, set()).add(r.optimizer)
    line = {id(r): r.method if len(optimizers[r.method]) == 1 else f"{r.method} ({r.optimizer})" for r in rows}
    methods = list(dict.fromkeys(line[id(r)] for r in rows))  # rows are ranked: first appearance is the best arm
    lrs = sorted({r.lr for r in rows})
    arms = sorted({(r.warmup > 0, r.lr) for r in rows}, key=lambda k: (not k[0], k[1]))
    step = 0.6 / max(len(arms), 1)
    figure = Figure(figsize=(7.5, 0.55 * len(methods) + 1.6))
    ax = figure.subplots()
    for slot, (warmup, lr) in enumerate(arms):
        color = "tab:blue" if warmup else "tab:red"
        marker = MARKERS[lrs.index(lr) % len(MARKERS)]
        label = f"{'warm-up' if warmup else 'no warm-up'}, lr {lr:g}"
        for row in (r for r in rows if (r.warmup > 0, r.lr) == (warmup, lr)):
            y = methods.index(line[id(row)]) - 0.3 + step * (slot + 0.5)
            if row.low is not None:
                ax.errorbar(row.sample.mean, y, xerr=[[row.sample.mean - row.low], [row.high - row.sample.mean]],
                            fmt="none", ecolor=color, elinewidth=1, capsize=2)  # fmt: skip
            ax.plot(row.sample.mean, y, marker=marker, linestyle="none", markersize=6, color=color,
                    markerfacecolor=color if warmup else "white", label=label)  # fmt: skip
            label = None  # one legend entry per arm kind
    ax.set_yticks(range(len(methods)), methods)
    ax.invert_yaxis()  # the best method at the top
    ax.set_xlabel("final valid loss (bits per token), mean over seeds with its 95 % interval")
    ax.set_title("Warm-up-free methods, ranked by their best arm")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)  # drawn by Agg; the figure is freed with its last reference
    return path
