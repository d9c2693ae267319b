"""`prelnx grads`: the gradient study of the paper's Figure 3 (FFN weight gradients at initialisation)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.analysis.grads.study import LAYOUTS as STUDY_LAYOUTS
from prelnx.analysis.grads.study import QUICK, GradsError, GradStudy, check_study
from prelnx.commands import options
from prelnx.config.load import load_config
from prelnx.layouts import LAYOUTS, names

RUN_DIR_AS = "--run-dir RUN_DIR"  # how grads is given a trained run, for --checkpoint's refusals

# the table's names by family (layouts.py owns both): a row added there is offered here
LAYOUTS_HELP = "Comma-separated layouts to compare, by family: " + "; ".join(
    f"{family}: {', '.join(names(family))}" for family in dict.fromkeys(row.family for row in LAYOUTS.values())
) + "; or a layout file of yours, ./mine.py:Class."


def grads_command(
    config: Annotated[str, options.config("A YAML config: a path, or a shipped config's name (e.g. grads/figure3_synthetic).")],
    out: Annotated[Path, options.out("Folder for grads.csv, grads_summary.json and figure3.png.")],
    layouts: Annotated[str, typer.Option("--layouts", help=LAYOUTS_HELP)] = "post,pre",
    seeds: Annotated[Optional[str], options.seeds(f"Each seed sets the init, the batches and the dropout draws [default: {len(GradStudy.seeds)}; --quick: {QUICK['seeds']}]")] = None,
    depths: Annotated[Optional[str], typer.Option("--depths", help=f"Comma-separated depths (layers in the encoder and in the decoder). [default: {','.join(map(str, GradStudy.depths))}; --quick: {','.join(map(str, QUICK['depths']))}]")] = None,
    batches: Annotated[Optional[int], typer.Option("--batches", help="Mini-batches per model; the norms are averaged over them. [default: 1]")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help="Tokens per mini-batch. [default: the config's train.max_tokens; --quick: 1024]")] = None,
    run_dir: Annotated[Optional[Path], options.run_dir("A run dir written by prelnx train: its --checkpoint is also measured on the same batches (the paper's 'after warm-up' bars).")] = None,
    checkpoint: Annotated[Optional[str], options.checkpoint("Also measure this trained model on the same batches", default="best with --run-dir, else none")] = None,
    quick: Annotated[bool, options.flag("--quick", "The picture in about a minute: 3 seeds, depths 6,10,14, 1024-token batches (explicit options win).")] = False,
    workers: Annotated[Optional[int], options.jobs("Worker processes, each measuring whole models. [default: one per core]")] = None,
    threads: Annotated[Optional[int], typer.Option("--threads", min=1, help="Torch threads per worker. [default: cores / workers]")] = None,
    set_: Annotated[Optional[list[str]], options.sets()] = None,
    dry_run: Annotated[bool, options.dry_run("Print the study (layouts, depths, seeds, batches, workers); measure nothing.")] = False,
) -> None:
    """Measure ||dL/dW1|| and ||dL/dW2|| of every FFN of real fairseq models at initialisation (the paper's Figure 3).

    For each layout, depth and seed the model is built as `prelnx train` builds it and fed the same real mini-batches
    of the config's data through its criterion (loss per target token, as fairseq's trainer). Writes grads.csv
    (layout, depth, seed, side, layer, weight, grad_norm), hidden.csv (each layer's output RMS in the same passes:
    layout, depth, seed, side, layer, rms), grads_summary.json (mean and std over seeds) and figure3.png.
    """
    from prelnx.analysis.grads.run import run_study
    from prelnx.analysis.grads.summary import report_lines
    from prelnx.records.checkpoints import parse_checkpoints
    from prelnx.records.run_config import refuse_changed_layout_file

    # --checkpoint's one grammar (records/checkpoints.py): a bad value is one line, before anything is read
    choice = None
    if checkpoint is not None or run_dir is not None:
        (choice,) = parse_checkpoints(["best" if checkpoint is None else checkpoint], run_dir_as=RUN_DIR_AS)
    resolved, _ = load_config(config, set_ or [])
    trained = choice.files(run_dir)[0] if choice else None
    if choice and choice.in_run and run_dir is not None:  # a bare .pt has no run dir to say what trained it
        refuse_changed_layout_file(run_dir)
    if choice and not choice.in_run and run_dir is not None:  # said, not silently dropped
        logging.getLogger(__name__).warning(f"--run-dir {run_dir} is not read: --checkpoint {checkpoint} is a file "
                                            f"of its own")  # fmt: skip
    study = GradStudy.from_options(resolved, layouts=parse_layouts(layouts), quick=quick,
                                   depths=parse_depths(depths) if depths is not None else None,
                                   seeds=options.parse_seeds(seeds) if seeds is not None else None, batches=batches,
                                   max_tokens=max_tokens,
                                   checkpoint=trained, workers=workers, threads=threads)  # fmt: skip
    if dry_run:
        check_study(study)  # what the real run checks first, checkpoint included
        typer.echo(f"would measure layouts {', '.join(study.layouts)} at depths {', '.join(map(str, study.depths))}, "
                   f"seeds {', '.join(map(str, study.seeds))}, {study.batches} batch(es) each"
                   + (f", and {study.checkpoint}" if study.checkpoint else "") + f" -> {out}")  # fmt: skip
        return
    from prelnx.launch.local import sigterm_interrupts

    with sigterm_interrupts():  # kill as Ctrl-C: exit 130 (the pool's workers take the default action again)
        outcome = run_study(study, out)
    for line in report_lines(outcome.summary):
        typer.echo(line)
    typer.echo("wrote " + ", ".join(str(path) for path in outcome.files))


def parse_layouts(text: str) -> tuple[str, ...]:
    layouts = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [layout for layout in layouts if layout not in STUDY_LAYOUTS]
    if unknown or not layouts:
        raise GradsError(f"--layouts: unknown layout {', '.join(unknown) or repr(text)}; "
                         f"allowed: {', '.join(STUDY_LAYOUTS)} (e.g. post,pre)")
    return tuple(dict.fromkeys(layouts))


def parse_depths(text: str) -> tuple[int, ...]:
    try:
        depths = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise GradsError(f"--depths: expected layer counts like 6,8,10, got {text!r}") from None
    if not depths or any(depth < 1 for depth in depths):
        raise GradsError(f"--depths: every depth must be >= 1 (layers per encoder and decoder), got {text!r}")
    return tuple(dict.fromkeys(depths))
