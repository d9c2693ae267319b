"""Per-line text processing (Moses steps, BPE) run on `--workers` processes, in order, with a progress bar.

A step is a small frozen (picklable, hashable) description; each worker builds what it describes once. Chunks are
submitted a few at a time, so a corpus of millions of lines streams through in bounded memory.
"""

from __future__ import annotations

import functools
import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Self

from tqdm import tqdm

from prelnx.data import moses
from prelnx.data.textio import check_aligned_segments, parallel_lines, read_lines, seg_lines, tok_path, write_lines
from prelnx.machine import usable_cores

CHUNK_LINES = 1000  # lines per task: large enough that pickling is cheap next to tokenizing


@dataclass(frozen=True)
class MosesSteps:
    """The Moses scripts a recipe pipes each line through, in this order (each flag is one script)."""

    lang: str
    lowercase_first: bool = False  # lowercase.perl before everything (Multi30k's official order)
    normalize_punctuation: bool = False  # normalize-punctuation.perl -l LANG
    remove_non_printing: bool = False  # remove-non-printing-char.perl
    tokenize: bool = True  # tokenizer.perl -l LANG (escaping on)
    aggressive_dash: bool = False  # tokenizer.perl -a: "a-b" -> "a @-@ b"
    lowercase: bool = False  # lowercase.perl after tokenizing

    def build(self) -> Callable[[str], str]:
        normalizer = moses.PerlPunctNormalizer(self.lang) if self.normalize_punctuation else None
        tokenizer = moses.PerlMosesTokenizer(lang=self.lang) if self.tokenize else None

        def process(line: str) -> str:
            if self.lowercase_first:
                line = moses.lowercase(line)
            if normalizer is not None:
                line = normalizer.normalize(line)
            if self.remove_non_printing:
                line = moses.remove_non_printing(line)
            if tokenizer is not None:
                line = moses.tokenize(tokenizer, line, aggressive_dash=self.aggressive_dash)
            if self.lowercase:
                line = moses.lowercase(line)
            return line

        return process


@dataclass(frozen=True)
class BpeStep:
    """subword-nmt apply_bpe.py -c CODE (separator '@@')."""

    code: str  # path of the merges file

    def build(self) -> Callable[[str], str]:
        from subword_nmt.apply_bpe import BPE

        with open(self.code, encoding="utf-8") as handle:
            bpe = BPE(handle)
        return bpe.process_line


Step = MosesSteps | BpeStep


@functools.lru_cache(maxsize=16)
def _built(step: Step) -> Callable[[str], str]:
    return step.build()


def _process_chunk(step: Step, lines: list[str]) -> list[str]:
    return list(map(_built(step), lines))


class Workers:
    """A pool of `count` processes (default: the usable cores; none for 1: the work runs in this process); use as a
    context manager."""

    def __init__(self, count: int | None = None) -> None:
        self.count = max(1, count or usable_cores())
        self._pool: Pool | None = None

    def __enter__(self) -> Self:
        if self.count > 1:
            # spawn, not fork: the parent may hold torch/fairseq threads, which a forked child must not inherit.
            self._pool = multiprocessing.get_context("spawn").Pool(self.count)
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def map(self, step: Step, lines: Iterable[str], *, desc: str, total: int | None = None) -> Iterator[str]:
        """`step` applied to every line, in input order."""
        iterator = iter(lines)
        chunks = iter(lambda: list(islice(iterator, CHUNK_LINES)), [])
        with tqdm(
            total=total, desc=desc, unit=" lines", unit_scale=True, file=sys.stderr, disable=None, mininterval=1.0
        ) as bar:
            for done in self._processed(step, chunks):
                bar.update(len(done))
                yield from done

    def _processed(self, step: Step, chunks: Iterator[list[str]]) -> Iterator[list[str]]:
        """The chunks processed in order; at most 4 per worker in flight."""
        if self._pool is None:
            yield from (_process_chunk(step, chunk) for chunk in chunks)
            return
        pending: deque = deque()
        for chunk in chunks:
            pending.append(self._pool.apply_async(_process_chunk, (step, chunk)))
            if len(pending) >= 4 * self.count:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def tokenize_parallel(splits: dict[str, dict[str, list[Path]]], folder: Path, workers: Workers,
                      steps: Callable[[str], Step] | None, *, segments: bool = False) -> dict[str, int]:  # fmt: skip
    """Each split's sides (every pair of files checked parallel first, before any work): their lines (`segments`: the
    `<seg>` lines of XML/SGML files, checked aligned) through steps(lang) (None: as they are), concatenated in order
    into text/tok/{split}.{lang}; returns each split's number of lines."""
    count = check_aligned_segments if segments else parallel_lines
    totals = {split: sum(count(*pair) for pair in zip(*sides.values())) for split, sides in splits.items()}
    for split, sides in splits.items():
        for lang, paths in sides.items():
            lines = (line for path in paths for line in read_lines(path))
            if segments:
                lines = seg_lines(lines)
            if steps is not None:
                lines = workers.map(steps(lang), lines, desc=f"tokenize {split}.{lang}", total=totals[split])
            write_lines(tok_path(folder, split, lang), lines)
    return totals
