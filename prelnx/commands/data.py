"""`prelnx data prepare`: download (or take a local copy of), tokenize, BPE and binarize a dataset for fairseq."""

from __future__ import annotations

import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.data.locations import DEFAULT_VALID_LINES, Dataset, default_folder
from prelnx.exits import Exit, documented

data_app = options.command_group(
    "Prepare datasets for training: download or take a local copy, tokenize, BPE, binarize for fairseq.")
data_app.callback()(lambda: None)  # a group, though it holds one command: `prelnx data prepare`


def _command_line(ctx: typer.Context) -> str:
    """The command as run, in canonical form, for the manifest."""
    parts = ["prelnx", "data", "prepare"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or value == param.default:
            continue
        value = value.value if isinstance(value, Enum) else value
        if param.param_type_name == "argument":
            parts.append(str(value))
        elif value is True:
            parts.append(param.opts[0])
        else:
            parts += [param.opts[0], str(value)]
    return shlex.join(parts)


@data_app.command("prepare", short_help="Download or copy, tokenize, BPE and binarize a dataset for fairseq.")
@documented(Exit.FINISHED, Exit.BAD_INPUT, Exit.INTERRUPTED)
def prepare_command(
    ctx: typer.Context,
    dataset: Annotated[Dataset, typer.Argument(help="iwslt14 (de->en) | wmt14 (en->de) | multi30k (de->en) | custom (any parallel text) | text (monolingual, for task: masked_lm).")],
    source: Annotated[Optional[str], typer.Option("--source", help="A URL, an archive (.tgz, .zip) or a folder with the dataset's files [default: download from the official location]; text: a text file or a folder of *.txt files, one sentence or document per line.")] = None,
    out: Annotated[Optional[Path], options.out("Output folder [default: data-bin/iwslt14.tokenized.de-en, data-bin/wmt14_en_de, data-bin/multi30k.de-en, data-bin/custom, data-bin/text].")] = None,
    bpe_code: Annotated[Optional[Path], typer.Option("--bpe-code", help="Apply this subword-nmt code file instead of learning BPE.")] = None,
    bpe_merges: Annotated[Optional[int], typer.Option("--bpe-merges", help="Joint BPE merges learned on train [default: iwslt14 10000, wmt14 40000, multi30k 10000; custom, text: no BPE].")] = None,
    workers: Annotated[Optional[int], options.jobs("Processes for tokenization, BPE and binarizing [default: the core count].")] = None,
    force: Annotated[bool, options.force("Prepare again even if --out holds a preparation (it is replaced once the new one is complete).")] = False,
    dry_run: Annotated[bool, options.dry_run("Say what would be prepared and where, checking --source and --out as the run would; prepare nothing.")] = False,
    train_src: Annotated[Optional[Path], typer.Option("--train-src", help="custom: training source text.")] = None,
    train_tgt: Annotated[Optional[Path], typer.Option("--train-tgt", help="custom: training target text.")] = None,
    valid_src: Annotated[Optional[Path], typer.Option("--valid-src", help="custom: validation source text.")] = None,
    valid_tgt: Annotated[Optional[Path], typer.Option("--valid-tgt", help="custom: validation target text.")] = None,
    test_src: Annotated[Optional[Path], typer.Option("--test-src", help="custom: test source text (optional).")] = None,
    test_tgt: Annotated[Optional[Path], typer.Option("--test-tgt", help="custom: test target text (optional).")] = None,
    source_lang: Annotated[str, typer.Option("--source-lang", help="custom: source language code (file suffix; Moses rules with --tokenize).")] = "src",
    target_lang: Annotated[str, typer.Option("--target-lang", help="custom: target language code.")] = "tgt",
    tokenize: Annotated[bool, options.flag("--tokenize", "custom, text: Moses-tokenize the text (text: English rules).")] = False,
    lowercase: Annotated[bool, options.flag("--lowercase", "custom, text: lowercase the text.")] = False,
    valid_lines: Annotated[Optional[int], typer.Option("--valid-lines", help=f"text: the last N non-blank lines are held out for validation [default: {DEFAULT_VALID_LINES}]; the other datasets have their own validation split.")] = None,
    joined_dictionary: Annotated[bool, options.flag("--joined-dictionary", "custom: one dictionary for both sides (needed for share_all_embeddings).")] = False,
) -> None:
    """Prepare DATASET into a folder `prelnx train` reads (data.path): fairseq dictionaries and binary splits,
    the text before and after BPE (text/), the BPE code, and manifest.json (line counts, sha256 of every file,
    tool versions, the command).

    Without --source, the data is downloaded (resumable) into ~/.cache/prelnx/downloads.
    """
    from prelnx.data.custom import corpus_from_options  # here, not at import: `prelnx --help` stays fast
    from prelnx.data.prepare import make_recipe, prepare_recipe, prepared, summary

    pairs = {"train": (train_src, train_tgt), "valid": (valid_src, valid_tgt), "test": (test_src, test_tgt)}
    text_options = {"valid_lines": valid_lines, "tokenize": tokenize, "lowercase": lowercase}
    own = {} if dataset is Dataset.text else {"tokenize": tokenize, "lowercase": lowercase}  # text's own options too
    corpus = corpus_from_options(pairs, dataset=dataset.value, source_lang=source_lang, target_lang=target_lang,
                                 joined_dictionary=joined_dictionary, **own)  # any given for text is refused
    recipe = make_recipe(dataset.value, source=source, bpe_code=bpe_code, bpe_merges=bpe_merges, custom=corpus,
                         text_options=text_options)
    target = out or default_folder(dataset.value)
    if dry_run:  # refused as the run would be: the --source, the --out
        typer.echo(f"{target} already holds {recipe.describe()}" if prepared(recipe, target, force)
                   else f"would prepare {recipe.describe()} into {target}")  # fmt: skip
        return
    from prelnx.launch.local import sigterm_interrupts

    with sigterm_interrupts():  # kill (a scheduler's stop) as Ctrl-C: exit 130, the staging folder removed
        prepare_recipe(recipe, target, workers=workers, force=force, command=_command_line(ctx))
    typer.echo(summary(target))
    if dataset in (Dataset.text, Dataset.custom) or (out is not None and out != default_folder(dataset.value)):
        name = "custom" if dataset is Dataset.text else dataset.value  # masked_lm reads prepared text as custom data
        sets = {"data.dataset": name, "data.path": target}
        if (source_lang, target_lang) != ("src", "tgt"):  # custom's codes name its files (train.de-en.de.bin)
            sets.update({"data.source_lang": source_lang, "data.target_lang": target_lang})
        if dataset is not Dataset.text and (target / "code").is_file():  # BLEU on words, not on subword units
            sets["eval.bleu.remove_bpe"] = "'@@ '"
        typer.echo("train on it: prelnx train --config ..." + "".join(f" --set {k}={v}" for k, v in sets.items()))
