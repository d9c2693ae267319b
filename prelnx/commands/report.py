"""`prelnx report`: a markdown report of a sweep, its plots, and the paper's claims beside the measured numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options


def report_command(
    sweep_dir: Annotated[Path, typer.Argument(help="A sweep dir written by prelnx sweep.", exists=True, file_okay=False)],
    out: Annotated[Optional[Path], options.out("Folder for the report: <name>.md and its figures in <name>_figures/ [default: SWEEP_DIR].")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="The report's file name, without .md [default: report in the sweep dir, else the sweep's name].")] = None,
    grads: Annotated[Optional[Path], typer.Option("--grads", help="A prelnx grads output folder, for the Figure 3 section.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="The report's title.")] = None,
    dry_run: Annotated[bool, options.dry_run("Say which file would be written; write nothing.")] = False,
) -> None:
    """Write a report: each claim of the paper (from prelnx/paper.yaml, with its section or figure), the
    arms' means over seeds, the difference with its 95 % interval, the claim's premise and its verdict (holds, does
    not hold, inconclusive, not testable at this scale, not measured), printed here too; the results table (mean
    ± sd per arm, then per seed); the plots (mean over seeds with a min-max band).
    """
    from prelnx.report.report import check_report_inputs, report_path, write_report

    target = report_path(sweep_dir, out, name)
    if dry_run:
        check_report_inputs(sweep_dir, grads)
        typer.echo(f"would write {target} and its figures in {target.with_name(target.stem + '_figures')}")
        return
    path = write_report(sweep_dir, target, grads, title, say_claims=True)  # the claims, then the file
    typer.echo(str(path))
