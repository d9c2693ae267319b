"""`prelnx plot`: validation loss, BLEU and lr per epoch (per update for BERT-style runs) for a run or a sweep."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options


def plot_command(
    path: Annotated[Path, typer.Argument(help="A run dir (runs/<name>) or a sweep dir (runs/<sweep>).", exists=True, file_okay=False)],
    out: Annotated[Optional[Path], options.out("Folder for the figures [default: PATH].")] = None,
    dry_run: Annotated[bool, options.dry_run("List the runs that would be drawn; write nothing.")] = False,
) -> None:
    """Plot validation loss, BLEU and the lr vs epoch (vs update for runs that validate every N updates: BERT,
    Figure 5a), one line per run (diverged runs dashed and marked x),
    and for a warm-up x lr grid a heatmap of the best BLEU. Writes loss, bleu, lr and heatmap as .png and .svg;
    a figure no run has data for is not drawn.
    """
    from prelnx.plots.curves import collect_runs, plot

    if dry_run:
        for run in collect_runs(path):
            typer.echo(f"{run.label}: {run.status}, {len(run.rows)} validation row(s)")  # epochs or every N updates
        typer.echo(f"figures would go to {out or path}")
        return
    files = plot(path, out)
    if not files:  # every figure needs a validation row or an lr: say why nothing was written
        logging.getLogger(__name__).warning(f"{path}: nothing to plot yet (no run has a validation row)")
    for file in files:
        typer.echo(str(file))
