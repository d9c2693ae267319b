"""`prelnx sweep`: a grid of trainings from a sweep spec, or from a training config plus --grid."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.config.load import ConfigError, find_config
from prelnx.evaluate.evaluate import evaluate_quietly
from prelnx.sweep.preflight import check_points, warnings
from prelnx.sweep.run import EXECUTORS, plan_sweep, run_sweep
from prelnx.sweep.spec import is_sweep_file, load_spec, spec_from_command_line


def sweep_command(
    config: Annotated[str, typer.Option("--config", "-c", help="A sweep spec (YAML with grid:), or a training config used as the base of --grid.")],
    grid: Annotated[Optional[list[str]], typer.Option("--grid", help="KEY=V1,V2: values to sweep (repeatable; a product).")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="KEY=VALUE for every run (repeatable).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Sweep name [default: the file's name].")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Sweep folder [default: runs/<sweep name>].")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Runs at a time (local executor); CPU threads are split between them.")] = 1,
    executor: Annotated[str, typer.Option("--executor", help=f"Where runs execute: {', '.join(EXECUTORS)}.")] = "local",
    partition: Annotated[Optional[str], typer.Option("--partition", help="Slurm partition.")] = None,
    gpus_per_run: Annotated[Optional[int], typer.Option("--gpus-per-run", help="Slurm: GPUs per run.")] = None,
    time_min: Annotated[Optional[int], typer.Option("--time-min", help="Slurm: time limit per job in minutes (jobs requeue on timeout).")] = None,
    array_parallelism: Annotated[Optional[int], typer.Option("--array-parallelism", help="Slurm: jobs of the array running at once.")] = None,
    evaluate: Annotated[bool, typer.Option("--evaluate", help="Evaluate each finished run on its test split (prelnx evaluate).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the runs and their overrides; train nothing.")] = False,
) -> None:
    """Train every point of a grid (warm-up x lr x optimizer x layout x seed), locally or on a Slurm cluster.

    Re-running the same sweep skips finished runs and resumes partial ones. summary.csv / summary.md in the
    sweep folder list every run's status, best and final valid loss, best BLEU, epochs, updates and wall time.
    """
    try:
        path = find_config(config)
        if is_sweep_file(path):
            spec = load_spec(path)
            if grid or set_:
                extra = spec_from_command_line(path, grid or [], set_ or [], name)
                spec.fixed.update(extra.fixed)
                if grid:
                    spec.grids = [{**g, **extra.grids[0]} for g in spec.grids]
            if name:
                spec.name = name
        else:
            spec = spec_from_command_line(path, grid or [], set_ or [], name)
        sweep_dir, points = plan_sweep(spec, out)
        if dry_run:
            typer.echo(f"sweep {spec.name}: {len(points)} runs -> {sweep_dir}")
            for point in points:
                overrides = ", ".join(f"{k}={v}" for k, v in point.overrides.items())
                typer.echo(f"  {point.name}: {overrides}")
            for warning in warnings(points):
                typer.echo(f"warning: {warning}", err=True)
            check_points(points)  # a dry run says whether the real one could start
            return
        slurm = {key: value for key, value in {"partition": partition, "gpus_per_run": gpus_per_run,
                 "time_min": time_min, "array_parallelism": array_parallelism}.items() if value is not None}  # fmt: skip
        rows = run_sweep(spec, out=out, jobs=jobs, executor=executor, slurm_options=slurm, echo=typer.echo,
                         after_run=evaluate_quietly if evaluate else None)  # fmt: skip
    except (ConfigError, ValueError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted: run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    if any(row["status"] not in ("finished", "diverged") for row in rows):
        raise typer.Exit(1)
