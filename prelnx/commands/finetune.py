"""`prelnx finetune`: fine-tune a pre-trained masked-LM run's checkpoints on sentence pairs, several seeds each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.exits import Exit, Refusal, documented


@documented(Exit.FINISHED, Exit.FAILED, Exit.BAD_INPUT, Exit.DIVERGED, Exit.BUSY, Exit.INTERRUPTED)
def finetune_command(
    config: Annotated[str, options.config("A fine-tuning config (task: sentence_prediction), e.g. configs/bert_cpu/finetune_synthetic.yaml.")],
    pretrained: Annotated[Path, typer.Option("--pretrained", help="The pre-trained run dir (a masked_lm run); the model's shape comes from its config.yaml.")],
    checkpoint: Annotated[Optional[list[str]], options.checkpoint("Which checkpoints of --pretrained are fine-tuned", many=True, default="best")] = None,
    seeds: Annotated[str, options.seeds("Fine-tuning seeds per checkpoint")] = "3",
    set_: Annotated[Optional[list[str]], options.sets()] = None,
    out: Annotated[Optional[Path], options.out("Where the fine-tunings go [default: <pretrained>/finetune/<config name>].")] = None,
    dry_run: Annotated[bool, options.dry_run("List the fine-tunings; train nothing.")] = False,
) -> None:
    """Fine-tune pre-trained checkpoints on a sentence(-pair) classification task (fairseq's sentence_prediction:
    GLUE's MRPC or RTE, or the offline synthetic pair task), each with several seeds; writes
    finetune_summary.md/.json: each seed's best validation accuracy, and their mean with a 95 % interval.

    Re-running resumes unfinished fine-tunings; the exit code is that of the fine-tuning most in need of attention.
    """
    from prelnx.config.load import load_config
    from prelnx.finetune.plan import RUN_DIR_AS, default_folder, plan, run_all
    from prelnx.launch.local import sigterm_interrupts
    from prelnx.records.checkpoints import parse_checkpoints

    ignored = [item for item in set_ or [] if item.startswith(("model.", "data.tokens_per_sample"))]
    if ignored:  # finetune_config takes these from the pre-trained run: never an override silently dropped
        raise Refusal(f"--set {ignored[0]}: the model and data.tokens_per_sample are the pre-trained run's")
    # --checkpoint's one grammar (records/checkpoints.py): a bad value is one line, before anything is read
    choices = parse_checkpoints(checkpoint or ["best"], run_dir_as=RUN_DIR_AS, many=True)
    base, _ = load_config(config, set_ or [])
    folder = out or default_folder(base, pretrained)
    with sigterm_interrupts():  # kill as Ctrl-C, between trainings too: exit 130
        runs = plan(base, pretrained, choices, options.parse_seeds(seeds), folder)
        if dry_run:
            for run in runs:
                typer.echo(f"{run.run_dir}: from {run.checkpoint}, seed {run.seed}")
            return
        raise typer.Exit(run_all(runs, folder))
