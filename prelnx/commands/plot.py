"""`prelnx plot`: validation loss and BLEU per epoch for a run or a sweep (the paper's Figures 2 and 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.plots.curves import NothingToPlot, plot


def plot_command(
    path: Annotated[Path, typer.Argument(help="A run dir (runs/<name>) or a sweep dir (runs/<sweep>).", exists=True, file_okay=False)],
    out: Annotated[Optional[Path], typer.Option("--out", help="Where the figures go [default: PATH].")] = None,
) -> None:
    """Plot validation loss and BLEU vs epoch, one line per run (diverged runs dashed and marked x),
    and for a warm-up x lr grid a heatmap of the best BLEU. Writes loss.png/.svg, bleu.png/.svg, heatmap.png/.svg.
    """
    try:
        files = plot(path, out)
    except NothingToPlot as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    for file in files:
        typer.echo(str(file))
