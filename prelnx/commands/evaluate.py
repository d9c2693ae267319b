"""`prelnx evaluate`: test-set BLEU of a trained run, tokenized (as the paper) and SacreBLEU."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.evaluate.evaluate import RUN_DIR_AS, evaluate
from prelnx.exits import Exit, Refusal, documented
from prelnx.records.checkpoints import parse_checkpoints


@documented(Exit.FINISHED, Exit.FAILED, Exit.BAD_INPUT, Exit.BUSY, Exit.INTERRUPTED)
def evaluate_command(
    run_dir: Annotated[Path, typer.Argument(help="A run dir written by prelnx train.", exists=True, file_okay=False)],
    split: Annotated[str, typer.Option("--split", help="Which prepared split to translate: test or valid.")] = "test",
    checkpoint: Annotated[Optional[str], options.checkpoint("The checkpoint of RUN_DIR to translate with", default="best")] = None,
    average_last: Annotated[Optional[int], typer.Option("--average-last", min=1, help="Average the last N epoch checkpoints instead (not with --checkpoint).")] = None,
    beam: Annotated[Optional[int], typer.Option("--beam", min=1, help="Beam size [default: the run's eval.bleu.beam, e.g. IWSLT14 5, WMT14 4].")] = None,
    lenpen: Annotated[Optional[float], typer.Option("--lenpen", help="Length penalty [default: the run's eval.bleu.lenpen, e.g. IWSLT14 1.2, WMT14 0.6].")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Sentences per generation batch.")] = 64,
    out: Annotated[Optional[Path], options.out("Folder for <split>.json, .hyp and .ref [default: RUN_DIR/eval].")] = None,
    dry_run: Annotated[bool, options.dry_run("Say which checkpoint, split and decoding would be used; translate nothing.")] = False,
) -> None:
    """Translate a split with fairseq's generator and report tokenized BLEU (comparable to the paper) and
    SacreBLEU on detokenized text (with its signature). Writes <split>.json, .hyp and .ref to RUN_DIR/eval (--out).
    Decodes with the run's eval.bleu (beam, lenpen), as its validation BLEU did, unless --beam/--lenpen say otherwise.
    """
    if checkpoint is not None and average_last is not None:  # one of them names the weights, never both silently
        raise Refusal(f"--checkpoint {checkpoint} and --average-last {average_last}: give one of them "
                      "(--average-last translates with the average of the last N epoch checkpoints)")
    if lenpen is not None and not math.isfinite(lenpen):  # fairseq would rank the beam by nan; json.dump writes NaN
        raise Refusal(f"--lenpen {lenpen}: expected a finite number (1.0: no length penalty)")
    # a bad value: one line, before anything is read
    (choice,) = parse_checkpoints(["best" if checkpoint is None else checkpoint], run_dir_as=RUN_DIR_AS)
    result = evaluate(run_dir, split=split, checkpoint=choice, average_last=average_last, beam=beam,
                      lenpen=lenpen, batch_size=batch_size, out=out, dry_run=dry_run)  # fmt: skip
    if dry_run:
        chosen = result["checkpoint"] if average_last else result["path"]  # the file --checkpoint names
        typer.echo(f"would translate {split} of {result['data']} with {chosen} (beam {result['beam']}, "
                   f"lenpen {result['lenpen']}) and write {result['out']}/{split}.json")  # fmt: skip
        return
    typer.echo(f"{run_dir} {split} ({result['sentences']} sentences, {result['checkpoint']}, beam {result['beam']}, "
               f"lenpen {result['lenpen']}):")  # fmt: skip
    text = "BPE removed, tokenized text; comparable to the paper" if result["remove_bpe"] else "the text as binarized"
    typer.echo(f"  tokenized BLEU {result['bleu_tokenized']:.2f}   ({text})")
    typer.echo(f"  SacreBLEU      {result['sacrebleu']:.2f}   {result['sacrebleu_signature']}")
