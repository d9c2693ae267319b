"""`prelnx plot`'s diagnostics figures (train.diagnostics; rows from records/diagnostics.py), against the update.

A run dir: `diagnostics.png`, a panel per quantity, a line per group, and lr x lambda_c with its edge at 2. A sweep:
`diagnostics_summary.png`, a line per run and panel (the total gradient norm, the largest update/weight ratio and
attention logit, lr x lambda_c); diverged runs dashed. Nothing is drawn for runs without diagnostics.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from prelnx.records.diagnostics import PER_GROUP, read_diagnostics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import is_finite

TITLES = {"grad_norm": "gradient norm", "update_ratio": "||delta w|| / ||w||", "attn_logit_max": "largest attention logit",
          "hidden_rms": "layer output RMS", "lr_lambda_c": "lr x lambda_c"}  # fmt: skip
SWEEP_TITLES = {"grad_norm": "total gradient norm", "update_ratio": "largest update / weight"}  # of the summary lines


def _sharpness(row: dict[str, Any]) -> float | None:
    lam, lr = row.get("lambda_c"), row.get("lr")
    return float(lam) * float(lr) if is_finite(lam) and is_finite(lr) else None


def _largest(key: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda row: max([v for v in (row.get(key) or {}).values() if is_finite(v)], default=None)


SUMMARIES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "grad_norm": lambda row: math.sqrt(sum(v * v for v in (row.get("grad_norm") or {}).values() if is_finite(v)))
    if row.get("grad_norm") else None,
    **{key: _largest(key) for key in ("update_ratio", "attn_logit_max", "hidden_rms")},
    "lr_lambda_c": _sharpness,
}  # fmt: skip


def _series(rows: list[dict[str, Any]], value: Callable[[dict[str, Any]], float | None]) -> tuple[list, list]:
    points = [(row["num_updates"], value(row)) for row in rows]
    points = [(u, v) for u, v in points if v is not None and is_finite(v)]
    return ([u for u, _ in points], [v for _, v in points])


def new_figure(size: tuple[float, float], rows: int = 1, columns: int = 1, **kwargs: Any) -> tuple[Any, Any]:
    """A figure of `size` inches and its axes (Figure.subplots: one Axes for 1 x 1), by matplotlib's object API: no
    pyplot, whose registry of figures a sweep's threads would share. Every prelnx figure is made here."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=size)
    return figure, figure.subplots(rows, columns, **kwargs)


Formats = tuple[str, ...]  # the file formats a figure is written in: ("png", "svg"), or a report's ("png",)


def save_figure(fig: Any, out: Path, stem: str, formats: Formats = ("png", "svg"), dpi: int = 120) -> list:
    """Lay the figure out and write `<stem>.<format>` in out for each format (every prelnx figure), each atomically:
    a reader never sees half a file."""
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    files = [out / f"{stem}.{suffix}" for suffix in formats]
    for file in files:
        fd, temporary = tempfile.mkstemp(prefix=f".{file.name}.", dir=out)
        os.fchmod(fd, 0o644)  # mkstemp creates 0600; figures are shared like any other file
        os.close(fd)
        try:
            fig.savefig(temporary, dpi=dpi, format=file.suffix[1:])
            os.replace(temporary, file)
        finally:
            Path(temporary).unlink(missing_ok=True)
    return files


def plot_diagnostics(runs: list[Any], title: str, out: Path, formats: Formats = ("png", "svg")) -> list[Path]:
    """The diagnostics figure of a run (every group's curve per quantity, and lr x lambda_c), or the summary of a
    sweep's runs (one summary line per run and quantity; plots.curves.RunCurves: run_dir, label, status); [] when
    none recorded diagnostics."""
    found = [(run, rows) for run in runs if (rows := read_diagnostics(run.run_dir))]
    if not found:
        return []
    sweep = len(runs) > 1
    fig, axes = new_figure((4.6 * len(TITLES), 4.2), 1, len(TITLES))
    for ax, key in zip(axes, TITLES):
        if sweep:
            for run, rows in found:
                updates, values = _series(rows, SUMMARIES[key])
                dashed = run.status == RunStatus.DIVERGED
                ax.plot(updates, values, linewidth=1.2, linestyle="--" if dashed else "-", label=run.label)
        elif key in PER_GROUP:
            rows = found[0][1]
            groups = list(dict.fromkeys(g for row in rows for g in (row.get(key) or {})))
            for group in groups:
                updates, values = _series(rows, lambda row, g=group, k=key: (row.get(k) or {}).get(g))
                ax.plot(updates, values, linewidth=1, label=group)
            if groups:
                ax.legend(fontsize=5, ncol=2)
        else:
            ax.plot(*_series(found[0][1], _sharpness), marker="o", markersize=3)
        if key == "lr_lambda_c":
            ax.axhline(2.0, color="grey", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_title((SWEEP_TITLES if sweep else TITLES).get(key, TITLES[key]), fontsize=10)
        ax.set_xlabel("update")
    if sweep:
        axes[0].legend(fontsize=6)
    fig.suptitle(f"Diagnostics - {title}", fontsize=11)
    return save_figure(fig, out, "diagnostics_summary" if sweep else "diagnostics", formats)
