"""Text of yours, used as given unless `--tokenize`, `--lowercase`, `--bpe-merges N` or `--bpe-code FILE` say
otherwise, lines kept one for one: `custom` (parallel text) and `text` (monolingual, for task: masked_lm, binarized
`--only-source`, blank lines dropped, the last `--valid-lines` held out): the commands in docs/data.md and
docs/studies.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from prelnx.data.locations import DEFAULT_VALID_LINES
from prelnx.data.sources import Recipe, SourceFiles
from prelnx.data.textio import DataError, read_lines, sha256_file, tok_path, write_lines
from prelnx.data.workers import MosesSteps, Workers, tokenize_parallel

LANG = "txt"  # the file suffix of monolingual text (fairseq's monolingual files carry no language)


@dataclass(frozen=True)
class CustomCorpus:
    files: dict[str, tuple[Path, Path]]  # split -> (source file, target file); train and valid are required
    source_lang: str = "src"
    target_lang: str = "tgt"
    tokenize: bool = False  # Moses tokenizer, with the rules of source_lang / target_lang
    lowercase: bool = False
    joined_dictionary: bool = False

    @property
    def languages(self) -> tuple[str, str]:
        return self.source_lang, self.target_lang

    @property
    def splits(self) -> list[str]:
        return [split for split in ("train", "valid", "test") if split in self.files]


@dataclass(frozen=True)
class TextCorpus:
    source: Path  # a text file or a folder of *.txt files
    valid_lines: int = DEFAULT_VALID_LINES
    tokenize: bool = False  # Moses tokenizer with English rules
    lowercase: bool = False


def corpus_from_options(
    pairs: dict[str, tuple[Path | None, Path | None]], *, dataset: str, **options: Any
) -> CustomCorpus | None:
    """The custom corpus `prelnx data prepare` options describe (`options`: CustomCorpus's other fields); None when
    they describe none (a named dataset with no custom option). Raises DataError for a source file without its
    target (or the reverse)."""
    given = any(path is not None for pair in pairs.values() for path in pair)
    if dataset != "custom" and not given and CustomCorpus({}, **options) == CustomCorpus({}):
        return None
    for split, (src, tgt) in pairs.items():
        if (src is None) != (tgt is None):
            raise DataError(f"--{split}-src and --{split}-tgt go together")
    return CustomCorpus({split: pair for split, pair in pairs.items() if None not in pair}, **options)


def write_custom(sources: SourceFiles, folder: Path, workers: Workers, *, corpus: CustomCorpus) -> None:
    steps = partial(MosesSteps, tokenize=corpus.tokenize, lowercase=corpus.lowercase)
    sides = {split: {lang: [sources.paths[f"{split}.{lang}"]] for lang in corpus.languages} for split in corpus.splits}
    tokenize_parallel(sides, folder, workers, steps if corpus.tokenize or corpus.lowercase else None)


def custom_recipe(corpus: CustomCorpus) -> Recipe:
    for split in ("train", "valid"):
        if split not in corpus.files:
            raise DataError(f"custom data needs --{split}-src and --{split}-tgt (training text, and validation text: "
                            f"fairseq-train validates every epoch)")  # fmt: skip
    if corpus.source_lang == corpus.target_lang:
        raise DataError(f"--source-lang and --target-lang are both {corpus.source_lang!r}; they must differ")
    for flag, lang in zip(("--source-lang", "--target-lang"), corpus.languages):
        if not re.fullmatch(r"[\w-]+", lang):  # part of every file name: train.SRC-TGT.LANG.bin
            raise DataError(f"{flag} {lang!r}: a language code is letters, digits, _ or - (e.g. de)")
    paths: dict[str, Path] = {}  # the inputs by their name in the recipe, {split}.{lang}
    for split, pair in corpus.files.items():
        for flag, lang, path in zip(("src", "tgt"), corpus.languages, pair):
            if not path.is_file():
                raise DataError(f"--{split}-{flag} {path}: {'a folder, not a file' if path.is_dir() else 'no such file'}")
            paths[f"{split}.{lang}"] = path
    settings = {
        "files": {split: [str(path.resolve()) for path in pair] for split, pair in corpus.files.items()},
        "inputs_sha256": {str(path.resolve()): sha256_file(path) for path in paths.values()},
        **{key: value for key, value in asdict(corpus).items() if key != "files"},
    }
    return Recipe("custom", corpus.languages, corpus.splits, settings,
                  gather=lambda _, work: SourceFiles.given("custom files", paths, settings["inputs_sha256"]),
                  write=partial(write_custom, corpus=corpus), joined_dictionary=corpus.joined_dictionary)


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
    return (line for path in files for line in read_lines(path) if line.strip())  # unreadable: read_lines says so


def write_text(sources: SourceFiles, folder: Path, workers: Workers, *, corpus: TextCorpus) -> None:
    files = list(sources.paths.values())
    total = sum(1 for _ in _non_blank(files))  # read once, not kept
    if total < 2 * corpus.valid_lines:
        raise DataError(f"--source: {total} non-blank line(s), too few to hold out --valid-lines {corpus.valid_lines} "
                        f"and train on at least as many; give more text or a smaller --valid-lines")  # fmt: skip
    lines = _non_blank(files)  # streamed: the last valid_lines lines are validation
    steps = MosesSteps("en", tokenize=corpus.tokenize, lowercase=corpus.lowercase)
    for split, count in (("train", total - corpus.valid_lines), ("valid", corpus.valid_lines)):
        part: Iterable[str] = islice(lines, count)
        if corpus.tokenize or corpus.lowercase:
            part = workers.map(steps, part, desc=split, total=count)
        write_lines(tok_path(folder, split, LANG), part)


def text_recipe(*, source: str | None, corpus_options: dict) -> Recipe:
    if source is None:
        raise DataError("text needs --source: a text file or a folder of *.txt files, one sentence or document per line")
    corpus = TextCorpus(source=Path(source).expanduser(), **{k: v for k, v in corpus_options.items() if v is not None})
    if corpus.valid_lines < 1:
        raise DataError(f"--valid-lines must be at least 1, got {corpus.valid_lines}")
    try:
        paths = {f"file{index}": path for index, path in enumerate(text_files(corpus.source))}
        hashes = {str(path.resolve()): sha256_file(path) for path in paths.values()}
    except OSError as error:
        raise DataError(f"--source: {error.filename}: cannot read ({error.strerror or error})") from None
    settings = {"inputs_sha256": hashes, **{key: value for key, value in asdict(corpus).items() if key != "source"}}
    return Recipe("text", (LANG, LANG), ["train", "valid"], settings,
                  gather=lambda _, work: SourceFiles.given(str(corpus.source), paths, hashes),
                  write=partial(write_text, corpus=corpus), monolingual=True)
