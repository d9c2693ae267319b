"""`prelnx status PATH`: where a run, a sweep or a reproduction stands, as one table (redrawn with --watch) or JSON."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Annotated

import typer

from prelnx.commands import options
from prelnx.exits import PRECEDENCE, Exit, Refusal, documented, exit_for


def status_text(path: Path, as_json: bool) -> tuple[str, Exit]:
    """The table (what PATH is, the lines above its table, then the table), or one JSON object (what PATH is, its
    runs' states as the table's columns unrendered, the ETA and the exit code); and the exit code."""
    from prelnx.reproduce.run import is_reproduction, reproduction_states, stage_lines
    from prelnx.sweep.looks import LOOKS_FILE, look_lines
    from prelnx.sweep.status import (eta_seconds, is_run_dir, is_sweep_dir, run_state, summary_age, summary_lines,
                                     sweep_states, table)

    if is_reproduction(path):
        kind, head, states = "reproduction", stage_lines(path), reproduction_states(path)
    elif is_sweep_dir(path):
        kind, head, states = "sweep", look_lines(path) + summary_lines(path), sweep_states(path)  # look, summary.csv
    elif is_run_dir(path):
        kind, head, states = "run", [], [run_state(path)]
    else:
        raise Refusal(f"{path}: not a run dir (config.yaml, status.json), a sweep folder (sweep.json) or a "
                      f"reproduction (stages/); give the folder prelnx train, sweep or reproduce wrote")  # fmt: skip
    code = exit_for(state.status for state in states)
    if not as_json:
        return "\n".join([f"{kind} {path}", *head, *table(states)]), code
    record = {"path": str(path), "kind": kind, "runs": [dataclasses.asdict(state) for state in states],
              "eta_seconds": eta_seconds(states), "exit_code": int(code), "outcome": code.name.lower()}  # fmt: skip
    if kind == "sweep":  # summary.csv's time and the runs whose records changed since (the line above the table)
        record["summary"] = summary_age(path)._asdict()
    if kind == "sweep" and (path / LOOKS_FILE).is_file():  # a sequential sweep: its looks, as the lines above say them
        record["looks"] = json.loads((path / LOOKS_FILE).read_text())
    return json.dumps(record, indent=2), code


@documented(*PRECEDENCE)
def status_command(
    path: Annotated[Path, typer.Argument(help="A run dir, a sweep folder or a reproduction's folder.", exists=True, file_okay=False)],
    watch: Annotated[bool, options.flag("--watch", "Redraw the table every --every seconds until no run is running (Ctrl-C stops).")] = False,
    every: Annotated[float, typer.Option("--every", min=0.5, help="Seconds between two redraws of --watch.")] = 5.0,
    as_json: Annotated[bool, options.json_flag()] = False,
) -> None:
    """One table of every run (status, epoch or update of its budget, last validation loss and BLEU, where it
    diverged, why it failed), the totals and an ETA for what is left. A sweep's run not started yet shows its budget
    from its config (an epoch budget with its updates once a run of the same batches has trained an epoch); a
    sequential sweep shows its look, each claim's state and the claims each arm still gets seeds for, and a sweep
    whose summary.csv is older than its runs' records (a sweep killed mid-run) says so. Reads the
    records only: safe beside a running sweep. It exits with the code of the run most in need of attention, in the
    order below (docs/usage.md, "Exit codes").
    """
    while True:
        text, code = status_text(path, as_json)
        if watch and not as_json:
            typer.echo("\033[2J\033[H", nl=False)  # clear the terminal, then the table from its top
        typer.echo(text)
        if not watch or as_json or code is not Exit.RUNNING:
            raise typer.Exit(code)
        time.sleep(every)
