"""`prelnx plot`'s diagnostics figures (train.diagnostics; rows from records/diagnostics.py), against the update.

A run dir: `diagnostics.png`, a panel per quantity, a line per group, and lr x lambda_c with its edge at 2. A sweep:
`diagnostics_summary.png`, a line per run and panel (the total gradient norm, the largest update/weight ratio and
attention logit, lr x lambda_c); diverged runs dashed. Nothing is drawn for runs without diagnostics.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from prelnx.records.diagnostics import PER_GROUP, read_diagnostics
from prelnx.records.outcome import RunStatus

TITLES = {"grad_norm": "gradient norm", "update_ratio": "||delta w|| / ||w||", "attn_logit_max": "largest attention logit",
          "hidden_rms": "layer output RMS", "lr_lambda_c": "lr x lambda_c"}  # fmt: skip


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _sharpness(row: dict[str, Any]) -> float | None:
    lam, lr = row.get("lambda_c"), row.get("lr")
    return float(lam) * float(lr) if _finite(lam) and _finite(lr) else None


SUMMARIES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "grad_norm": lambda row: math.sqrt(sum(v * v for v in (row.get("grad_norm") or {}).values() if _finite(v)))
    if row.get("grad_norm") else None,
    "update_ratio": lambda row: max([v for v in (row.get("update_ratio") or {}).values() if _finite(v)], default=None),
    "attn_logit_max": lambda row: max([v for v in (row.get("attn_logit_max") or {}).values() if _finite(v)], default=None),
    "hidden_rms": lambda row: max([v for v in (row.get("hidden_rms") or {}).values() if _finite(v)], default=None),
    "lr_lambda_c": _sharpness,
}  # fmt: skip


def _series(rows: list[dict[str, Any]], value: Callable[[dict[str, Any]], float | None]) -> tuple[list, list]:
    points = [(row["num_updates"], value(row)) for row in rows]
    points = [(u, v) for u, v in points if v is not None and _finite(v)]
    return ([u for u, _ in points], [v for _, v in points])


def _figure(panels: int):
    from matplotlib.figure import Figure  # the object API: pyplot's figure registry is shared by a sweep's threads

    fig = Figure(figsize=(4.6 * panels, 4.2))
    axes = fig.subplots(1, panels)
    return fig, list(axes) if panels > 1 else [axes]


def save_figure(fig: Any, out: Path, stem: str) -> list[Path]:
    """`<stem>.png` and `<stem>.svg` in out (every `prelnx plot` figure)."""
    fig.tight_layout()
    files = [out / f"{stem}.png", out / f"{stem}.svg"]
    for file in files:
        fig.savefig(file, dpi=120)
    return files


def run_figure(rows: list[dict[str, Any]], title: str, out: Path) -> list[Path]:
    """One run: every group's curve per quantity, and lr x lambda_c."""
    fig, axes = _figure(len(TITLES))
    for ax, key in zip(axes, TITLES):
        if key in PER_GROUP:
            groups = list(dict.fromkeys(g for row in rows for g in (row.get(key) or {})))
            for group in groups:
                updates, values = _series(rows, lambda row, g=group, k=key: (row.get(k) or {}).get(g))
                ax.plot(updates, values, linewidth=1, label=group)
            if groups:
                ax.legend(fontsize=5, ncol=2)
        else:
            updates, values = _series(rows, _sharpness)
            ax.plot(updates, values, marker="o", markersize=3)
            ax.axhline(2.0, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title(TITLES[key], fontsize=10)
        ax.set_xlabel("update")
    fig.suptitle(f"Diagnostics - {title}", fontsize=11)
    return save_figure(fig, out, "diagnostics")


def sweep_figure(runs: list[tuple[Any, list[dict[str, Any]]]], title: str, out: Path) -> list[Path]:
    """Several runs: one summary line per run and quantity."""
    fig, axes = _figure(len(TITLES))
    for ax, key in zip(axes, TITLES):
        for run, rows in runs:
            updates, values = _series(rows, SUMMARIES[key])
            ax.plot(updates, values, linewidth=1.2, linestyle="--" if run.status == RunStatus.DIVERGED else "-", label=run.label)
        if key == "lr_lambda_c":
            ax.axhline(2.0, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title({"grad_norm": "total gradient norm", "update_ratio": "largest update / weight",
                      "attn_logit_max": "largest attention logit"}.get(key, TITLES[key]), fontsize=10)  # fmt: skip
        ax.set_xlabel("update")
    axes[0].legend(fontsize=6)
    fig.suptitle(f"Diagnostics - {title}", fontsize=11)
    return save_figure(fig, out, "diagnostics_summary")


def plot_diagnostics(runs: list[Any], title: str, out: Path) -> list[Path]:
    """The diagnostics figure of a run, or the summary of a sweep's runs (plots.curves.RunCurves: run_dir, label,
    status); [] when none recorded diagnostics."""
    found = [(run, rows) for run in runs if (rows := read_diagnostics(run.run_dir))]
    if not found:
        return []
    if len(runs) == 1:
        return run_figure(found[0][1], title, out)
    return sweep_figure(found, title, out)
