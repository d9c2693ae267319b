"""`prelnx status PATH`: where a run, a sweep or a reproduction stands, as one table (redrawn with --watch)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from prelnx.commands import options


def _lines(path: Path) -> tuple[list[str], int]:
    from prelnx.config.errors import Refusal
    from prelnx.reproduce.run import is_reproduction, reproduction_states, stage_lines
    from prelnx.sweep.looks import look_lines
    from prelnx.sweep.status import exit_code, is_run_dir, is_sweep_dir, run_state, sweep_states, table

    if is_reproduction(path):
        head, states = [f"reproduction {path}", *stage_lines(path)], reproduction_states(path)
    elif is_sweep_dir(path):
        head, states = [f"sweep {path}", *look_lines(path)], sweep_states(path)  # a sequential sweep: its look
    elif is_run_dir(path):
        head, states = [f"run {path}"], [run_state(path)]
    else:
        raise Refusal(f"{path}: not a run dir (config.yaml, status.json), a sweep folder (sweep.json) or a "
                      f"reproduction (stages/); give the folder prelnx train, sweep or reproduce wrote")  # fmt: skip
    return [*head, *table(states)], exit_code(states)


def status_command(
    path: Annotated[Path, typer.Argument(help="A run dir, a sweep folder or a reproduction's folder.", exists=True, file_okay=False)],
    watch: Annotated[bool, options.flag("--watch", "Redraw the table every --every seconds until no run is running (Ctrl-C stops).")] = False,
    every: Annotated[float, typer.Option("--every", min=0.5, help="Seconds between two redraws of --watch.")] = 5.0,
) -> None:
    """One table of every run (status, epoch or update of its budget, last validation loss and BLEU, where it
    diverged, why it failed), the totals and an ETA for what is left. A sweep's run not started yet shows its budget
    from its config (an epoch budget with its updates once a run of the same batches has trained an epoch); a
    sequential sweep shows its look, each claim's state and the claims each arm still gets seeds for. Reads the
    records only: safe beside a running sweep.

    Exit codes: 0 every run finished, 1 some diverged, failed, were interrupted or never started (and none is
    running), 3 some are still running.
    """
    while True:
        lines, code = _lines(path)
        if watch:
            typer.echo("\033[2J\033[H", nl=False)  # clear the terminal, then the table from its top
        typer.echo("\n".join(lines))
        if not watch or code != 3:
            raise typer.Exit(code)
        time.sleep(every)
