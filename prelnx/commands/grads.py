"""`prelnx grads`: the gradient study of the paper's Figure 3 (FFN weight gradients at initialisation)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.config.load import ConfigError, load_config
from prelnx.run.plan import DataNotReady


def grads_command(
    config: Annotated[str, typer.Option("--config", "-c", help="A YAML config: a path, or a name under configs/ (e.g. grads/figure3_synthetic.yaml).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for grads.csv, grads_summary.json and figure3.png.")],
    layouts: Annotated[str, typer.Option("--layouts", help="Comma-separated layouts to compare: post, pre (and deepnorm).")] = "post,pre",
    seeds: Annotated[Optional[str], typer.Option("--seeds", help="How many seeds (10 = seeds 1..10), or a list (3,7). Each seed sets the init, the batches and the dropout draws. [default: 10; --quick: 3]")] = None,
    depths: Annotated[Optional[str], typer.Option("--depths", help="Comma-separated depths (layers in the encoder and in the decoder). [default: 6,8,10,12,14; --quick: 6,10,14]")] = None,
    batches: Annotated[Optional[int], typer.Option("--batches", help="Mini-batches per model; the norms are averaged over them. [default: 1]")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", help="Tokens per mini-batch. [default: the config's train.max_tokens; --quick: 1024]")] = None,
    checkpoint: Annotated[Optional[Path], typer.Option("--checkpoint", help="Also measure this trained fairseq checkpoint (e.g. runs/x/checkpoints/checkpoint_best.pt) on the same batches: the paper's 'after warm-up' bars.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="The picture in about a minute: 3 seeds, depths 6,10,14, 1024-token batches (explicit options win).")] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Worker processes, each measuring whole models. [default: one per core]")] = None,
    threads: Annotated[Optional[int], typer.Option("--threads", help="Torch threads per worker. [default: cores / workers]")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Override a config key, e.g. --set model.dropout=0 (repeatable).")] = None,
) -> None:
    """Measure ||dL/dW1|| and ||dL/dW2|| of every FFN of real fairseq models at initialisation (the paper's Figure 3).

    For each layout, depth and seed the model is built as `prelnx train` builds it and fed the same real mini-batches
    of the config's data through its criterion (loss per target token, as fairseq's trainer). Writes grads.csv
    (layout, depth, seed, side, layer, weight, grad_norm), grads_summary.json (mean and std over seeds) and figure3.png.
    """
    from prelnx.analysis.grads import QUICK, GradsError, GradStudy, parse_depths, parse_layouts, parse_seeds, report_lines, run_study

    try:
        resolved, _ = load_config(config, set_ or [])
        study = GradStudy(
            resolved,
            layouts=parse_layouts(layouts),
            depths=parse_depths(depths) if depths else (QUICK["depths"] if quick else GradStudy.depths),
            seeds=parse_seeds(seeds) if seeds else parse_seeds(str(QUICK["seeds"] if quick else 10)),
            batches=batches if batches is not None else (QUICK["batches"] if quick else 1),
            max_tokens=max_tokens if max_tokens is not None else (QUICK["max_tokens"] if quick else None),
            checkpoint=checkpoint,
            workers=workers,
            threads=threads,
        )
        outcome = run_study(study, out, echo=typer.echo)
    except (GradsError, ConfigError, DataNotReady) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    for line in report_lines(outcome.summary):
        typer.echo(line)
    typer.echo("wrote " + ", ".join(str(path) for path in outcome.files))
