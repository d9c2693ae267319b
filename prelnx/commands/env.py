"""`prelnx env`: the lines a bug report needs (as `accelerate env`): versions, the CPU and its bf16, GPUs, Slurm."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from prelnx.commands import options


def env_command(as_json: Annotated[bool, options.json_flag()] = False) -> None:
    """Print prelnx's, Python's, torch's, fairseq's and CUDA's versions, the CPU (usable cores, native bf16), the GPUs
    and Slurm: paste them into a bug report."""
    from prelnx.launch.environment import environment

    rows = environment()
    if as_json:
        typer.echo(json.dumps(dict(rows), indent=2))
        return
    width = max(len(what) for what, _ in rows)
    for what, value in rows:
        typer.echo(f"- {what + ':':<{width + 1}} {value}")
