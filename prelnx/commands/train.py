"""`prelnx train`: validate a config, then train (or resume) one run, here or as one Slurm job across nodes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.config.load import dump_config, load_config
from prelnx.config.schedule import lr_curve_warnings
from prelnx.exits import Exit, Refusal, documented
from prelnx.launch import RunExecutor
from prelnx.launch.local import check_before_training, sigterm_interrupts, train
from prelnx.launch.slurm_job import GPUS_DEFAULT, dry_run_lines, run_request, train_on_slurm
from prelnx.plan.launch import default_run_dir, plan_run


@documented(Exit.FINISHED, Exit.FAILED, Exit.BAD_INPUT, Exit.DIVERGED, Exit.BUSY, Exit.INTERRUPTED)
def train_command(
    config: Annotated[str, options.config()],
    set_: Annotated[Optional[list[str]], options.sets()] = None,
    run_dir: Annotated[Optional[Path], options.run_dir("Where the run's files go [default: runs/train/<config name>].")] = None,
    dry_run: Annotated[bool, options.dry_run("Print the resolved config and the fairseq-train command; train nothing.")] = False,
    force: Annotated[bool, options.force("Train again even if the run dir holds a finished or different run (the old one is renamed, not deleted).")] = False,
    executor: Annotated[RunExecutor, options.executor(help="Where the run trains (slurm: one job of train.nodes x train.processes tasks, one worker each)")] = RunExecutor.LOCAL,
    partition: Annotated[Optional[str], options.partition()] = None,
    gpus_per_run: Annotated[Optional[int], options.slurm_per_run(GPUS_DEFAULT)["gpus_per_run"]] = None,
    cpus_per_run: Annotated[Optional[int], options.slurm_per_run(GPUS_DEFAULT)["cpus_per_run"]] = None,
    mem_gb_per_run: Annotated[Optional[int], options.slurm_per_run(GPUS_DEFAULT)["mem_gb_per_run"]] = None,
    time_min: Annotated[Optional[int], options.time_min()] = None,
) -> None:
    """Train a Post-LN or Pre-LN fairseq transformer (translation, or BERT-style masked LM); valid loss and BLEU per
    epoch (per N updates with eval.every_updates) go to metrics.jsonl and TensorBoard.

    Re-running the same command on the same run dir resumes from the last checkpoint. On Slurm the run's resources
    are asked in all, as sweep and reproduce ask them per run, and split evenly between its nodes and tasks.
    A full disk fails the run (status.json says which path); a refused checkpoint, damaged data or a Slurm job that
    can never start or cannot be submitted is bad input.
    """
    resolved, _ = load_config(config, set_ or [])
    for warning in lr_curve_warnings(resolved.schedule, resolved.optimizer.lr):
        logging.getLogger(__name__).warning(warning)
    target = run_dir or default_run_dir(resolved)
    slurm = {"partition": partition, "gpus_per_run": gpus_per_run, "cpus_per_run": cpus_per_run,
             "mem_gb_per_run": mem_gb_per_run, "time_min": time_min}
    options.slurm_only(executor, slurm)
    if executor == "slurm":
        request = run_request(resolved, **slurm)
        if dry_run:
            typer.echo("\n".join(dry_run_lines(resolved, target, request, force)))
            return
        message, code = train_on_slurm(resolved, target, request, force=force)
    else:
        if dry_run:
            plan = plan_run(resolved, target)
            typer.echo(dump_config(plan.config, task_keys_only=True))
            typer.echo(f"# {plan.launch.batch}")
            typer.echo("# the equivalent plain command:")
            typer.echo(plan.launch.command_line())
            for line in check_before_training(plan, force):  # refusals raise, with the real run's exit code
                typer.echo(f"# {line}")
            return
        with sigterm_interrupts():  # kill as Ctrl-C before fairseq starts too (its checks, the data): exit 130
            message, code = "", train(resolved, run_dir=target, force=force).exit_code
    if message and code == Exit.BAD_INPUT:
        raise Refusal(message)
    if message:
        typer.echo(message, err=code != 0)
    raise typer.Exit(code)
