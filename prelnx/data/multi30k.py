"""Multi30k task 1, German->English: train 29,000, valid 1,014 (val), test 1,000 (test_2016_flickr).

The official raw files go through the steps of the official tokenized release (lowercase.perl |
normalize-punctuation.perl | tokenizer.perl), then joint BPE; nothing is cleaned away, so the split sizes stay.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from prelnx.data.locations import DATASETS
from prelnx.data.sources import Download, Recipe, SourceFiles, locate
from prelnx.data.workers import MosesSteps, Workers, tokenize_parallel

BASE_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw"
LANGUAGES = DATASETS["multi30k"].languages
FILES = {"train": "train", "valid": "val", "test": "test_2016_flickr"}  # our split -> the release's file stem
NEEDED = [f"{stem}.{lang}" for stem in FILES.values() for lang in LANGUAGES]
HINT = (
    "pass a folder that holds the release's data/task1/raw files (train/val/test_2016_flickr .de/.en, gzipped "
    "or not), e.g. `prelnx data prepare multi30k --source /path/to/multi30k`"
)


def write_text(sources: SourceFiles, folder: Path, workers: Workers) -> None:
    sides = {split: {lang: [sources.paths[f"{FILES[split]}.{lang}"]] for lang in LANGUAGES} for split in FILES}
    tokenize_parallel(sides, folder, workers, partial(MosesSteps, lowercase_first=True, normalize_punctuation=True))


def gather(source: str | None, work: Path) -> SourceFiles:
    downloads = [Download(f"{BASE_URL}/{name}.gz", f"multi30k/{name}.gz") for name in NEEDED]
    return locate(source, NEEDED, downloads=downloads, work=work, hint=HINT, what="Multi30k task 1 raw files")


SETTINGS = {
    "recipe": "Multi30k task 1 official lc.norm.tok, then joint BPE",
    "steps": "lowercase | normalize-punctuation | tokenizer (escape, no -a)",
    "files": FILES,
}
RECIPE = Recipe("multi30k", LANGUAGES, list(FILES), SETTINGS, gather=gather, write=write_text)
