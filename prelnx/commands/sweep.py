"""`prelnx sweep`: a grid of trainings from a sweep spec, or from a training config plus --grid; a spec's sequential
seeds: plan runs look by look, its claims decided by the report's engine (passed down: sweep/ sits below report/)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.exits import Exit, Refusal, documented, exit_for
from prelnx.config.load import find_config
from prelnx.evaluate.evaluate import evaluate_quietly
from prelnx.records.outcome import RunStatus
from prelnx.report.report import report_after_sweep
from prelnx.report.sequential import decide_look
from prelnx.sweep.execute import EXECUTORS, check_start, plan_lines, plan_sweep, run_sweep, warnings
from prelnx.sweep.executors import SWEEP_GPUS_DEFAULT
from prelnx.sweep.spec import resolve_spec


@documented(Exit.FINISHED, Exit.FAILED, Exit.BAD_INPUT, Exit.DIVERGED, Exit.RUNNING, Exit.INTERRUPTED)
def sweep_command(
    config: Annotated[str, options.config("A sweep spec (YAML with grid:), or a training config used as the base of --grid.")],
    grid: Annotated[Optional[list[str]], typer.Option("--grid", help="KEY=V1,V2: values to sweep (repeatable; a product). Values are YAML; brackets keep a list whole: --grid 'optimizer.betas=[0.9,0.98],[0.9,0.999]'.")] = None,
    set_: Annotated[Optional[list[str]], options.sets("KEY=VALUE for every run (repeatable; the value is YAML).")] = None,
    seeds: Annotated[Optional[str], options.seeds("Seeds for every run; wins over the spec's seeds: (a spec with arms: or seeds: gets this fixed list instead of its plan; an old spec or a training config gets a train.seed grid axis)")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Sweep name [default: the spec's name; for --grid on a training config, its run name + '-grid'].")] = None,
    out: Annotated[Optional[Path], options.out("Sweep folder [default: runs/<sweep name>].")] = None,
    jobs: Annotated[int, options.jobs("Runs at a time (local executor); CPU threads are split between them.")] = 1,
    pin_cores: Annotated[bool, options.flag("--pin-cores", "Local executor: keep each of the --jobs runs on its own cores (Linux affinity; see docs/benchmarks.md for when it helps).")] = False,
    executor: Annotated[str, options.executor(EXECUTORS, "Where runs execute")] = "local",
    partition: Annotated[Optional[str], options.partition()] = None,
    gpus_per_run: Annotated[Optional[int], options.slurm_per_run(SWEEP_GPUS_DEFAULT)["gpus_per_run"]] = None,
    cpus_per_run: Annotated[Optional[int], options.slurm_per_run()["cpus_per_run"]] = None,
    mem_gb_per_run: Annotated[Optional[int], options.slurm_per_run()["mem_gb_per_run"]] = None,
    time_min: Annotated[Optional[int], options.time_min()] = None,
    array_parallelism: Annotated[Optional[int], typer.Option("--array-parallelism", help="Slurm: jobs of the array running at once.")] = None,
    evaluate: Annotated[bool, options.flag("--evaluate", "Evaluate each finished run on its test split (prelnx evaluate).")] = False,
    force: Annotated[bool, options.force("Train every point again, finished ones included (each old run is renamed, not deleted).")] = False,
    raw_data: Annotated[Optional[Path], typer.Option("--raw-data", help="A study's committed raw data (docs/results/<study>/in_progress or runs): its finished, diverged and failed runs are put back into the sweep folder first, so only the missing runs train (a study resumed on another machine).")] = None,
    dry_run: Annotated[bool, options.dry_run("List the runs and their overrides (a sequential plan: its looks, the first look's runs and the most it can cost), and check they can start; train nothing.")] = False,
) -> None:
    """Train every point of a grid (warm-up x lr x optimizer x layout x seed), locally or on a Slurm cluster.

    Re-running the same sweep skips finished runs and resumes partial ones. summary.csv / summary.md in the
    sweep folder list every run's status, best and final valid loss, best BLEU, epochs, updates and wall time.
    A spec's `seeds: {looks: [4, 6, 8]}` runs every arm to the first look, decides the claims, and adds the next
    look's seeds only to the arms an undecided claim reads (docs/sequential.md); looks.json and `prelnx status`
    show the look.
    """
    slurm = {"partition": partition, "gpus_per_run": gpus_per_run, "cpus_per_run": cpus_per_run,
             "mem_gb_per_run": mem_gb_per_run, "time_min": time_min, "array_parallelism": array_parallelism}
    options.slurm_only(executor, slurm)
    listed = options.parse_seeds(seeds) if seeds is not None else None  # '' is refused, never the spec's seeds
    spec = resolve_spec(find_config(config), grid or [], set_ or [], name, listed)
    sweep_dir, points = plan_sweep(spec, out)
    if dry_run:
        typer.echo("\n".join(plan_lines(spec, sweep_dir, points)))
        for warning in warnings(points):
            logging.getLogger(__name__).warning(warning)
        check_start(spec, sweep_dir, points)  # a dry run says whether the real one could start
        return
    rows = run_sweep(spec, out=out, jobs=jobs, executor=executor, slurm_options=slurm,
                     after_run=evaluate_quietly if evaluate else None, force=force, pin_cores=pin_cores,
                     decide=decide_look, raw_data=raw_data)  # fmt: skip
    report_after_sweep(sweep_dir)
    if refused := [row["run"] for row in rows if row["status"] == RunStatus.REFUSED]:
        raise Refusal(f"{sweep_dir}: {len(refused)} run(s) not trained, their run dirs hold other runs (each said "
                      f"above): {', '.join(refused)}; sweep into another --out, or --force to set every old run aside")
    raise typer.Exit(exit_for(row["status"] for row in rows))  # the one table (prelnx/exits.py): 3 if one diverged
