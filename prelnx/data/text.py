"""Monolingual text for task: masked_lm: `prelnx data prepare text --source FILE_OR_FOLDER [--valid-lines N]`.

Plain UTF-8 text, one sentence or document per line, as one file or a folder of `*.txt` files (name order,
recursively); blank lines dropped; the last `--valid-lines` lines held out for validation. Then as for translation
(optional Moses steps, BPE) and fairseq's binarizing with `--only-source` (dict.txt, train/valid.bin/.idx).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice
from pathlib import Path

from prelnx.data.locations import DEFAULT_VALID_LINES
from prelnx.data.output import tok_path
from prelnx.data.sources import Recipe, SourceFiles
from prelnx.data.textio import DataError, read_lines, sha256_file, write_lines
from prelnx.data.workers import MosesSteps, Workers

LANG = "txt"  # the file suffix of the text (fairseq's monolingual files carry no language)


@dataclass(frozen=True)
class TextCorpus:
    source: Path  # a text file or a folder of *.txt files
    valid_lines: int = DEFAULT_VALID_LINES
    tokenize: bool = False  # Moses tokenizer with English rules
    lowercase: bool = False


def text_files(source: Path) -> list[Path]:
    """The files a --source names: itself, or every *.txt under the folder, in name order."""
    if source.is_file():
        return [source]
    if source.is_dir():
        files = sorted(path for path in source.rglob("*.txt") if path.is_file())
        if not files:
            raise DataError(f"--source {source}: the folder holds no *.txt file (one sentence or document per line)")
        return files
    raise DataError(f"--source {source}: no such file or folder (give a text file or a folder of *.txt files)")


def _non_blank(files: list[Path]) -> Iterator[str]:
    for path in files:
        try:
            yield from (line for line in read_lines(path) if line.strip())
        except OSError as error:
            raise DataError(f"--source: {path}: cannot read ({error.strerror or error})") from None


def count_lines(files: list[Path], valid_lines: int) -> int:
    """Non-blank lines of the files (read once, not kept); refuses too few to hold out `valid_lines`."""
    total = sum(1 for _ in _non_blank(files))
    if total < 2 * valid_lines:
        raise DataError(f"--source: {total} non-blank line(s), too few to hold out --valid-lines {valid_lines} "
                        f"and train on at least as many; give more text or a smaller --valid-lines")  # fmt: skip
    return total


def write_text(sources: SourceFiles, folder: Path, workers: Workers, *, corpus: TextCorpus) -> None:
    files = list(sources.paths.values())
    total = count_lines(files, corpus.valid_lines)
    lines = _non_blank(files)  # streamed: the last valid_lines lines are validation
    steps = MosesSteps("en", tokenize=corpus.tokenize, lowercase=corpus.lowercase)
    for split, count in (("train", total - corpus.valid_lines), ("valid", corpus.valid_lines)):
        part: Iterable[str] = islice(lines, count)
        if corpus.tokenize or corpus.lowercase:
            part = workers.map(steps, part, desc=split, total=count)
        write_lines(tok_path(folder, split, LANG), part)


def recipe(*, source: str | None, corpus_options: dict) -> Recipe:
    if source is None:
        raise DataError("text needs --source: a text file or a folder of *.txt files, one sentence or document per line")
    corpus = TextCorpus(source=Path(source).expanduser(), **corpus_options)
    if corpus.valid_lines < 1:
        raise DataError(f"--valid-lines must be at least 1, got {corpus.valid_lines}")
    try:
        paths = {f"file{index}": path for index, path in enumerate(text_files(corpus.source))}
        hashes = {str(path.resolve()): sha256_file(path) for path in paths.values()}
    except OSError as error:
        raise DataError(f"--source: {error.filename}: cannot read ({error.strerror or error})") from None
    settings = {
        "inputs_sha256": hashes,
        "valid_lines": corpus.valid_lines, "tokenize": corpus.tokenize, "lowercase": corpus.lowercase,
    }  # fmt: skip
    return Recipe("text", (LANG, LANG), ["train", "valid"], settings,
                  gather=lambda work: SourceFiles.given(str(corpus.source), paths, hashes),
                  write=partial(write_text, corpus=corpus), monolingual=True)
