"""Monolingual text for task: masked_lm: `prelnx data prepare text --source FILE_OR_FOLDER [--valid-lines N]`.

What a user brings: plain UTF-8 text, one sentence or one document per line (BERT's Wikipedia + BookCorpus
are not downloadable: BookCorpus is not public), as one file or a folder of `*.txt` files (read in name order,
recursively). Blank lines are dropped. The last `--valid-lines` lines are held out for validation. Then, as for
translation: optional Moses tokenization and lowercasing, BPE learned on train (`--bpe-merges`) or applied
(`--bpe-code`), and fairseq's own binarizing with `--only-source` (dict.txt, train/valid.bin/.idx).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prelnx.data import bpe
from prelnx.data.errors import DataError
from prelnx.data.output import text_path, tok_path
from prelnx.data.recipe import Recipe
from prelnx.data.sources import SourceFiles
from prelnx.data.textio import read_lines, sha256_file, write_lines
from prelnx.data.workers import MosesSteps, Workers

LANG = "txt"  # the file suffix of the text (fairseq's monolingual files carry no language)
DEFAULT_VALID_LINES = 1000


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


def split_lines(files: list[Path], valid_lines: int) -> tuple[list[str], list[str]]:
    """(train, valid) lines: every non-blank line of the files, the last `valid_lines` held out."""
    lines = [line for path in files for line in read_lines(path) if line.strip()]
    if len(lines) < 2 * valid_lines:
        raise DataError(f"--source: {len(lines)} non-blank line(s), too few to hold out --valid-lines {valid_lines} "
                        f"and train on at least as many; give more text or a smaller --valid-lines")  # fmt: skip
    return lines[:-valid_lines], lines[-valid_lines:]


def gather(corpus: TextCorpus, work: Path) -> SourceFiles:
    found = SourceFiles(origin=str(corpus.source))
    for index, path in enumerate(text_files(corpus.source)):
        found.paths[f"file{index}"] = path
        found.inputs[str(path)] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    return found


def build_text(sources: SourceFiles, folder: Path, workers: Workers, *, corpus: TextCorpus,
               bpe_code: Path | None, bpe_merges: int | None) -> dict | None:  # fmt: skip
    use_bpe = bpe_code is not None or bpe_merges is not None
    train, valid = split_lines(list(sources.paths.values()), corpus.valid_lines)
    steps = MosesSteps("en", tokenize=corpus.tokenize, lowercase=corpus.lowercase)
    for split, lines in (("train", train), ("valid", valid)):
        out = tok_path(folder, split, LANG) if use_bpe else text_path(folder, split, LANG)
        if corpus.tokenize or corpus.lowercase:
            lines = list(workers.map(steps, lines, desc=f"{split}", total=len(lines)))
        write_lines(out, lines)
    if not use_bpe:
        return None
    entry = bpe.make_code(folder, train=[tok_path(folder, "train", LANG)], given=bpe_code, merges=bpe_merges or 0,
                          workers=workers)  # fmt: skip
    bpe.apply_code(folder, splits=["train", "valid"], languages=(LANG,), workers=workers)
    return entry


def recipe(*, source: str | None, corpus_options: dict, bpe_code: Path | None, bpe_merges: int | None) -> Recipe:
    if source is None:
        raise DataError("text needs --source: a text file or a folder of *.txt files, one sentence or document per line")
    if corpus_options["valid_lines"] < 1:
        raise DataError(f"--valid-lines must be at least 1, got {corpus_options['valid_lines']}")
    corpus = TextCorpus(source=Path(source).expanduser(), **corpus_options)
    files = text_files(corpus.source)
    settings = {
        "inputs_sha256": {str(path.resolve()): sha256_file(path) for path in files},
        "valid_lines": corpus.valid_lines, "tokenize": corpus.tokenize, "lowercase": corpus.lowercase,
        "bpe": bpe.settings(bpe_code, bpe_merges),
    }  # fmt: skip
    return Recipe(
        dataset="text",
        languages=(LANG, LANG),
        splits=["train", "valid"],
        joined_dictionary=False,
        settings=settings,
        gather=lambda work: gather(corpus, work),
        build=lambda sources, folder, workers: build_text(
            sources, folder, workers, corpus=corpus, bpe_code=bpe_code, bpe_merges=bpe_merges
        ),
        monolingual=True,
    )
