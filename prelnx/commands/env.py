"""`prelnx env`: the lines a bug report needs (as `accelerate env`): versions, the CPU and its bf16, GPUs, Slurm."""

from __future__ import annotations

from typing import Annotated

from prelnx.commands import options


def env_command(as_json: Annotated[bool, options.json_flag()] = False) -> None:
    """Print prelnx's, Python's, torch's, fairseq's and CUDA's versions, the CPU (usable cores, native bf16), the GPUs
    and Slurm: paste them into a bug report."""
    from prelnx.launch.environment import environment

    rows = environment()
    width = max(len(what) for what, _ in rows)
    options.echo(as_json, dict(rows), "\n".join(f"- {what + ':':<{width + 1}} {value}" for what, value in rows))
