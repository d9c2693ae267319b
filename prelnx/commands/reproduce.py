"""`prelnx reproduce`: every experiment of the paper at one scale (demo, cpu, paper), planned, run, reported."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.exits import Exit, documented
from prelnx.launch import Executor
from prelnx.reproduce.scales import Scale


@documented(Exit.FINISHED, Exit.FAILED, Exit.BAD_INPUT, Exit.INTERRUPTED)
def reproduce_command(
    scale: Annotated[Scale, typer.Option("--scale", help="demo (every stage at toy size, offline; 12.5 min on 2 cores of an AVX-512 EPYC, ~3x that with AVX2 only), cpu (the shipped CPU studies, hours; Multi30k prepared), paper (the paper's configs on GPUs; IWSLT14 prepared).")],
    executor: Annotated[Executor, options.executor(help="Where the sweeps' runs train")] = Executor.LOCAL,
    jobs: Annotated[int, options.jobs("Runs at a time (local executor); CPU threads are split between them.")] = 2,
    seeds: Annotated[Optional[str], options.seeds("The seeds of each arm of the arms sweeps [default: demo 1; cpu, paper: each sweep's own]")] = None,
    out: Annotated[Optional[Path], options.out("The reproduction's folder [default: runs/reproduce-<scale>].")] = None,
    partition: Annotated[Optional[str], options.partition()] = None,
    time_min: Annotated[Optional[int], options.time_min()] = None,
    gpus_per_run: Annotated[Optional[int], options.slurm_per_run()["gpus_per_run"]] = None,
    cpus_per_run: Annotated[Optional[int], options.slurm_per_run()["cpus_per_run"]] = None,
    mem_gb_per_run: Annotated[Optional[int], options.slurm_per_run()["mem_gb_per_run"]] = None,
    dry_run: Annotated[bool, options.dry_run("Print the plan (every stage, its runs, its compute estimate) and check the data; train nothing.")] = False,
) -> None:
    """Reproduce every experiment of the paper at one scale: the theory checks, Figure 3's gradients, the premise
    sweeps, Figures 2a/2b/4 and each arm's test BLEU, Figure 5a's BERT arms and their fine-tuning (5b/c), in
    stages whose order and dependencies are fixed (prelnx/reproduce/scales.py), then one report.md.

    The plan comes first (with a compute estimate: measured here for demo and cpu, GPU-hours for paper).
    Interrupted, run the same command again: complete stages are skipped and sweeps resume their runs. A stage that
    did not complete fails it; a scale whose data is missing is bad input, and the message names the command that
    prepares it.
    """
    from prelnx.launch.local import sigterm_interrupts
    from prelnx.reproduce.run import reproduce

    slurm = {"partition": partition, "time_min": time_min, "gpus_per_run": gpus_per_run, "cpus_per_run": cpus_per_run,
             "mem_gb_per_run": mem_gb_per_run}
    options.slurm_only(executor, slurm)
    with sigterm_interrupts():  # kill as Ctrl-C in every stage (theory, grads, fine-tuning) and between them: exit 130
        raise typer.Exit(reproduce(scale.value, out, executor=executor.value, jobs=jobs, seeds=options.parse_seeds(seeds) if seeds is not None else None,
                                   slurm=slurm, dry_run=dry_run))  # fmt: skip
