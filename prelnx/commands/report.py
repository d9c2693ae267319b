"""`prelnx report`: a markdown report of a sweep, its plots, and the paper's claims beside the measured numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.plots.curves import NothingToPlot
from prelnx.report.report import ReportError, write_report


def report_command(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep dir written by prelnx sweep.", exists=True, file_okay=False)],
    out: Annotated[Path, typer.Option("--out", help="The markdown file to write; its PNG figures go to <name>_figures/ beside it.")],
    grads: Annotated[Optional[Path], typer.Option("--grads", help="A prelnx grads output folder, for the Figure 3 section.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="The report's title.")] = None,
) -> None:
    """Write a report: each claim of the paper (from prelnx/report/paper.yaml, with its section or figure), what
    the sweep (and gradient study) measured, and whether it holds at this scale; the results table; the plots.
    """
    try:
        path = write_report(sweep_dir, out, grads, title)
    except (ReportError, NothingToPlot, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    typer.echo(str(path))
