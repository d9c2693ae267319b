"""`prelnx data prepare`: locate (or download) a recipe's inputs, build its text (tokenize, clean, BPE) in a staging
folder, binarize it with fairseq's own preprocessing, write manifest.json, rename into place.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path

from prelnx.data import bpe, iwslt14, multi30k, wmt14
from prelnx.data.custom import CustomCorpus, custom_recipe, text_recipe
from prelnx.data.locations import DATASETS, Dataset
from prelnx.data.output import binarize, check_replaceable, is_prepared, read_manifest, staged_folder, write_manifest
from prelnx.data.sources import Recipe, local_source
from prelnx.data.textio import DataError, sha256_file
from prelnx.data.workers import Workers

log = logging.getLogger(__name__)
_RECIPES = {module.RECIPE.dataset: module for module in (iwslt14, wmt14, multi30k)}


def make_recipe(
    dataset: str,
    *,
    source: str | None = None,
    bpe_code: Path | None = None,
    bpe_merges: int | None = None,
    custom: CustomCorpus | None = None,
    text_options: dict | None = None,
) -> Recipe:
    if bpe_code is not None and bpe_merges is not None:
        raise DataError("pass either --bpe-code (apply an existing code) or --bpe-merges (learn one), not both")
    if bpe_merges is not None and bpe_merges < 1:
        raise DataError(f"--bpe-merges must be at least 1, got {bpe_merges}")
    if bpe_code is not None and not bpe_code.is_file():
        raise DataError(f"--bpe-code {bpe_code}: no such file")
    if dataset != "text" and (text_options or {}).get("valid_lines") is not None:
        raise DataError(f"--valid-lines is for text, not {dataset}: {dataset}'s validation split is "
                        + ("--valid-src/--valid-tgt" if dataset == "custom" else "its release's"))
    if dataset == "custom":
        if source is not None:
            raise DataError("custom data takes its files from --train-src/--train-tgt/..., not --source")
        recipe = custom_recipe(custom or CustomCorpus({}))  # none given: it refuses, naming --train-src/--train-tgt
    elif custom is not None:
        raise DataError(f"--train-src/--valid-src/... and the other custom options are for `custom`, not {dataset}")
    elif dataset == "text":
        recipe = text_recipe(source=source, corpus_options=text_options or {})
    elif dataset in _RECIPES:
        local_source(source, _RECIPES[dataset].HINT)  # refused here: a dry run refuses what the run would
        recipe = replace(_RECIPES[dataset].RECIPE, source=source)
    else:
        raise DataError(f"unknown dataset {dataset!r}; expected one of {', '.join(Dataset)}")
    merges = bpe_merges or DATASETS[dataset].bpe_merges
    bpe_setting = {"joint_merges": merges} if merges else None  # what decides the BPE step: the merges to learn, or
    if bpe_code is not None:
        bpe_setting = {"code_sha256": sha256_file(bpe_code)}  # the given code's sha256
    settings = {**recipe.settings, "bpe": bpe_setting}
    return replace(recipe, settings=settings, bpe_code=bpe_code, bpe_merges=merges)


def prepare_recipe(
    recipe: Recipe,
    out: Path,
    *,
    workers: int | None = None,
    force: bool = False,
    command: str = "",
) -> Path:
    """Build `recipe` into `out` (unless it is already there with the same settings); returns `out`."""
    if prepared(recipe, out, force):
        log.info(f"{out} already holds {recipe.describe()} with these settings (manifest.json); --force prepares it again")
        return out
    with staged_folder(out) as staging, Workers(workers) as pool:
        work = staging / "work"
        sources = recipe.gather(recipe.source, work)
        log.info(f"preparing {recipe.describe()} from {sources.origin} with {pool.count} worker(s)")
        recipe.write(sources, staging, pool)
        if recipe.bpe_code is None and recipe.bpe_merges is None:  # no BPE: the text before BPE is the text
            entry = None
            for path in sorted((staging / "text" / "tok").iterdir()):
                path.replace(staging / "text" / path.name)
            (staging / "text" / "tok").rmdir()
        else:
            entry = bpe.encode(staging, splits=recipe.splits, languages=tuple(dict.fromkeys(recipe.languages)),
                               given=recipe.bpe_code, merges=recipe.bpe_merges or 0, workers=pool)  # fmt: skip
        if recipe.after_bpe is not None:
            recipe.after_bpe(staging)
        shutil.rmtree(work, ignore_errors=True)
        log.info("binarizing with fairseq-preprocess")
        binarize(staging / "text", staging, source_lang=recipe.languages[0], target_lang=recipe.languages[1],
                 splits=recipe.splits, joined_dictionary=recipe.joined_dictionary, workers=pool.count,
                 monolingual=recipe.monolingual)  # fmt: skip
        write_manifest(staging, recipe, command=command, sources={"origin": sources.origin, "files": sources.inputs},
                       bpe=entry)  # fmt: skip
    return out


def prepared(recipe: Recipe, out: Path, force: bool) -> bool:
    """`out` already holds this preparation (nothing to do); else `out` is refused if it may not be replaced."""
    if not force and is_prepared(out, recipe.dataset, recipe.settings):
        return True
    check_replaceable(out, force=force)
    return False


def summary(out: Path) -> str:
    """One line per split: its line count (of each side)."""
    manifest = read_manifest(out) or {}
    lines = manifest.get("lines", {})
    parts = [f"{split} {next(iter(counts.values())):,}" for split, counts in lines.items()]
    return f"{out}: {manifest.get('dataset')} ({', '.join(parts)} lines)"
