"""IWSLT14 German->English, as fairseq's examples/translation/prepare-iwslt14.sh makes it (the steps:
docs/data.md, 'The steps'): Moses-tokenized, cleaned, lowercased; valid every 23rd cleaned line; joint BPE;
separate dictionaries (fairseq's IWSLT14 recipe does not join them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from prelnx.data import moses
from prelnx.data.locations import DATASETS
from prelnx.data.sources import Download, Recipe, SourceFiles, locate
from prelnx.data.textio import DataError, check_parallel, read_lines, tok_path
from prelnx.data.workers import MosesSteps, Workers, tokenize_parallel

URL = "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz"  # fairseq's mirror of the release
LANGUAGES = DATASETS["iwslt14"].languages
CLEAN = {"ratio": 1.5, "min_len": 1, "max_len": 175}
VALID_EVERY = 23
TRAIN_FILES = {lang: f"train.tags.de-en.{lang}" for lang in LANGUAGES}
TEST_SETS = (
    "IWSLT14.TED.dev2010",
    "IWSLT14.TEDX.dev2012",
    "IWSLT14.TED.tst2010",
    "IWSLT14.TED.tst2011",
    "IWSLT14.TED.tst2012",
)
HINT = (
    "pass the release archive or a folder of its files, e.g. "
    "`prelnx data prepare iwslt14 --source /path/to/de-en.tgz` (the archive is at " + URL + ")"
)
TEST_FILES = {lang: [f"{name}.de-en.{lang}.xml" for name in TEST_SETS] for lang in LANGUAGES}
NEEDED = {"train": list(TRAIN_FILES.values()), "valid": list(TRAIN_FILES.values()),  # the files of each split
          "test": [name for names in TEST_FILES.values() for name in names]}
_METADATA = ("<url>", "<talkid>", "<keywords>")
_TAGS = ("<title>", "</title>", "<description>", "</description>")


def train_text(lines: Iterable[str]) -> Iterator[str]:
    """grep -v '<url>' | grep -v '<talkid>' | grep -v '<keywords>' | sed 's/<title>//g' | ... (the script's filter)."""
    for line in lines:
        if any(tag in line for tag in _METADATA):
            continue
        for tag in _TAGS:
            line = line.replace(tag, "")
        yield line


def _build_train_valid(files: dict[str, Path], folder: Path, workers: Workers) -> None:
    train_files = {lang: files[TRAIN_FILES[lang]] for lang in LANGUAGES}
    counts = {path: sum(1 for _ in train_text(read_lines(path))) for path in train_files.values()}
    total = check_parallel(counts)
    if total == 0:
        raise DataError(f"{train_files['de']} holds no training text")
    tokenized = [  # both sides streamed side by side into clean-corpus: nothing written and read back
        workers.map(MosesSteps(lang), train_text(read_lines(path)), desc=f"tokenize train.{lang}", total=total)
        for lang, path in train_files.items()
    ]
    outputs = {(split, lang): tok_path(folder, split, lang) for split in ("train", "valid") for lang in LANGUAGES}
    outputs[("train", "de")].parent.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        handles = {key: stack.enter_context(open(path, "w", encoding="utf-8")) for key, path in outputs.items()}
        for number, (de, en) in enumerate(moses.clean_pairs(zip(*tokenized), **CLEAN), start=1):
            split = "valid" if number % VALID_EVERY == 0 else "train"
            handles[(split, "de")].write(moses.lowercase(de) + "\n")
            handles[(split, "en")].write(moses.lowercase(en) + "\n")


def write_text(sources: SourceFiles, folder: Path, workers: Workers, *, splits: Sequence[str] = tuple(NEEDED)) -> None:
    """Write text/tok/{split}.{de,en} into `folder`."""
    if "train" in splits or "valid" in splits:
        _build_train_valid(sources.paths, folder, workers)
    if "test" in splits:  # the five dev/test sets' segments, tokenized and lowercased, concatenated in order
        sides = {lang: [sources.paths[name] for name in names] for lang, names in TEST_FILES.items()}
        tokenize_parallel({"test": sides}, folder, workers, partial(MosesSteps, lowercase=True), segments=True)


def gather(source: str | None, work: Path, splits: Sequence[str] = tuple(NEEDED)) -> SourceFiles:
    needed = [name for split in splits for name in NEEDED[split]]
    return locate(source, needed, downloads=[Download(URL, "iwslt14/de-en.tgz")], work=work, hint=HINT,
                  what="the IWSLT14 de-en release")  # fmt: skip


SETTINGS = {
    "recipe": "fairseq examples/translation/prepare-iwslt14.sh",
    "tokenizer": "moses (escape, no -a)",
    "lowercase": True,
    "clean": CLEAN,
    "valid": f"every {VALID_EVERY}th line of the cleaned train corpus",
    "test": list(TEST_SETS),
}
RECIPE = Recipe("iwslt14", LANGUAGES, list(NEEDED), SETTINGS, gather=gather, write=write_text)
