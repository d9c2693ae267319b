"""Any parallel text: `prelnx data prepare custom --train-src A --train-tgt B --valid-src ... [--test-src ...]`,
used as given unless `--tokenize`, `--lowercase`, `--bpe-merges N` or `--bpe-code FILE` say otherwise (docs/data.md);
lines are kept one for one (nothing is cleaned away).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from prelnx.data.output import tok_path
from prelnx.data.sources import Recipe, SourceFiles
from prelnx.data.textio import DataError, parallel_lines, read_lines, sha256_file, write_lines
from prelnx.data.workers import MosesSteps, Workers


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


def write_text(sources: SourceFiles, folder: Path, workers: Workers, *, corpus: CustomCorpus) -> None:
    for split in corpus.splits:
        inputs = {lang: sources.paths[f"{split}.{lang}"] for lang in corpus.languages}
        total = parallel_lines(*inputs.values())
        for lang, path in inputs.items():
            lines = read_lines(path)  # validated UTF-8, '\n' line ends
            if corpus.tokenize or corpus.lowercase:
                steps = MosesSteps(lang, tokenize=corpus.tokenize, lowercase=corpus.lowercase)
                lines = workers.map(steps, lines, desc=f"{split}.{lang}", total=total)
            write_lines(tok_path(folder, split, lang), lines)


def recipe(corpus: CustomCorpus) -> Recipe:
    for split in ("train", "valid"):
        if split not in corpus.files:
            raise DataError(f"custom data needs --{split}-src and --{split}-tgt (fairseq-train validates every epoch)")
    if corpus.source_lang == corpus.target_lang:
        raise DataError(f"--source-lang and --target-lang are both {corpus.source_lang!r}; they must differ")
    paths: dict[str, Path] = {}  # the inputs by their name in the recipe, {split}.{lang}
    for split, pair in corpus.files.items():
        for flag, lang, path in zip(("src", "tgt"), corpus.languages, pair):
            if not path.is_file():
                raise DataError(f"--{split}-{flag} {path}: no such file")
            paths[f"{split}.{lang}"] = path
    settings = {
        "files": {split: [str(path.resolve()) for path in pair] for split, pair in corpus.files.items()},
        "inputs_sha256": {str(path.resolve()): sha256_file(path) for path in paths.values()},
        **{key: value for key, value in asdict(corpus).items() if key != "files"},
    }
    return Recipe("custom", corpus.languages, corpus.splits, settings,
                  gather=lambda work: SourceFiles.given("custom files", paths, settings["inputs_sha256"]),
                  write=partial(write_text, corpus=corpus), joined_dictionary=corpus.joined_dictionary)
