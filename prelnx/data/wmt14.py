"""WMT14 English->German, following fairseq's examples/translation/prepare-wmt14en2de.sh (--icml17) and the paper:
valid newstest2013 (as the paper; fairseq's script holds out every 100th training line), test newstest2014 (SGML
"full"), train cleaned after joint BPE, one joined dictionary. Steps and the BPE size (fairseq's 40,000 merges, not
the paper's ~37K vocabulary): docs/data.md, 'The steps'.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from prelnx.data import moses
from prelnx.data.locations import DATASETS
from prelnx.data.output import text_path
from prelnx.data.sources import Download, Recipe, SourceFiles, locate
from prelnx.data.textio import read_lines
from prelnx.data.workers import MosesSteps, Workers, tokenize_parallel

LANGUAGES = DATASETS["wmt14"].languages
CLEAN = {"ratio": 1.5, "min_len": 1, "max_len": 250}
CORPORA = ("europarl-v7.de-en", "commoncrawl.de-en", "news-commentary-v9.de-en")
VALID = "newstest2013"
TEST_FILES = {"en": "newstest2014-deen-src.en.sgm", "de": "newstest2014-deen-ref.de.sgm"}
NEEDED = {"train": [f"{corpus}.{lang}" for corpus in CORPORA for lang in LANGUAGES],  # the files of each split
          "valid": [f"{VALID}.{lang}" for lang in LANGUAGES], "test": list(TEST_FILES.values())}
DOWNLOADS = [
    Download("http://statmt.org/wmt13/training-parallel-europarl-v7.tgz", "wmt14/training-parallel-europarl-v7.tgz"),
    Download("http://statmt.org/wmt13/training-parallel-commoncrawl.tgz", "wmt14/training-parallel-commoncrawl.tgz"),
    Download("http://statmt.org/wmt14/training-parallel-nc-v9.tgz", "wmt14/training-parallel-nc-v9.tgz"),
    Download("http://data.statmt.org/wmt17/translation-task/dev.tgz", "wmt14/dev.tgz"),
    Download("http://statmt.org/wmt14/test-full.tgz", "wmt14/test-full.tgz"),
]
HINT = (
    "pass a folder holding the five archives (" + ", ".join(d.url.rsplit("/", 1)[1] for d in DOWNLOADS) + ") or "
    "their extracted files, e.g. `prelnx data prepare wmt14 --source /path/to/wmt14`"
)


def build_test(files: dict[str, Path], folder: Path, workers: Workers) -> int:
    """text/tok/test.{en,de}: newstest2014's segments, tokenized with -a; returns the number of lines."""
    steps = partial(MosesSteps, aggressive_dash=True)
    return tokenize_parallel({"test": {lang: [files[TEST_FILES[lang]]] for lang in LANGUAGES}}, folder, workers, steps,
                             segments=True)["test"]  # fmt: skip


def _clean_train(folder: Path) -> None:
    src, tgt = (text_path(folder, "train", lang) for lang in LANGUAGES)
    cleaned = {path: path.with_name(path.name + ".cleaned") for path in (src, tgt)}
    with open(cleaned[src], "w", encoding="utf-8") as out_src, open(cleaned[tgt], "w", encoding="utf-8") as out_tgt:
        for first, second in moses.clean_pairs(zip(read_lines(src), read_lines(tgt)), **CLEAN):
            out_src.write(first + "\n")
            out_tgt.write(second + "\n")
    for path, new in cleaned.items():
        os.replace(new, path)


def write_text(sources: SourceFiles, folder: Path, workers: Workers) -> None:
    files = sources.paths
    sides = {
        "train": {lang: [files[f"{corpus}.{lang}"] for corpus in CORPORA] for lang in LANGUAGES},
        "valid": {lang: [files[f"{VALID}.{lang}"]] for lang in LANGUAGES},
    }
    steps = partial(MosesSteps, normalize_punctuation=True, remove_non_printing=True, aggressive_dash=True)
    tokenize_parallel(sides, folder, workers, steps)
    build_test(files, folder, workers)


def gather(source: str | None, work: Path, splits: Sequence[str] = tuple(NEEDED)) -> SourceFiles:
    needed = [name for split in splits for name in NEEDED[split]]
    return locate(source, needed, downloads=DOWNLOADS, work=work, hint=HINT,
                  what="the WMT14 en-de training corpora, newstest2013 and newstest2014 (full)")  # fmt: skip


SETTINGS = {
    "recipe": "fairseq examples/translation/prepare-wmt14en2de.sh --icml17, valid newstest2013 (the paper)",
    "train": list(CORPORA),
    "steps": "normalize-punctuation | remove-non-printing-char | tokenizer -a (escape)",
    "clean": CLEAN,
    "valid": VALID,
    "test": "newstest2014 full (src.en, ref.de)",
}
RECIPE = Recipe(
    "wmt14", LANGUAGES, list(NEEDED), SETTINGS, gather=gather, write=write_text, joined_dictionary=True,
    after_bpe=_clean_train,
)
