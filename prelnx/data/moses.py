"""The Moses perl scripts of fairseq's recipes, in Python: tokenizer, punctuation normalizer, non-printing
character removal, lowercasing, and clean-corpus-n.

Tokenizing and normalizing are sacremoses, patched where sacremoses 0.2 differs from the perl scripts fairseq's
recipes clone (mosesdecoder master), so the output is the perl output (docs/data.md, 'Checked against fairseq's own
output'): tokenizer.perl splits a final "X." into "X ." unconditionally (sacremoses keeps "U.S." or German "70.");
normalize-punctuation.perl turns ‘ ‚ ’ (when not between letters) into a double quote, not an apostrophe, keeps a
space around French quotes, and sees each line's newline (see `normalize`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import regex
from sacremoses import MosesPunctNormalizer, MosesTokenizer

_ENDS_WITH_PERIOD = re.compile(r"^(\S+)\.$")
_NON_PRINTING = regex.compile(r"\p{C}")
_WHITESPACE = re.compile(r"\s+")


class PerlMosesTokenizer(MosesTokenizer):
    """sacremoses' tokenizer with tokenizer.perl's handling of a period at the end of the line."""

    def handles_nonbreaking_prefixes(self, text: str) -> str:
        # sacremoses may keep the last token's period ("U.S.", a prefix, a lowercase word next); the perl script
        # keeps one only before another token, so the last token's is always split off.
        tokens = super().handles_nonbreaking_prefixes(text).split(" ")
        tokens[-1] = _ENDS_WITH_PERIOD.sub(r"\1 .", tokens[-1])
        return " ".join(tokens)


class PerlPunctNormalizer(MosesPunctNormalizer):
    """sacremoses' normalizer with normalize-punctuation.perl's (default, non-Penn) substitution table."""

    def __init__(self, lang: str) -> None:
        # The perl turns ‘ and ‚ (when not between letters) into a double quote, not an apostrophe; perl_parity=True
        # does the same for ’ and spaces French quotes as the perl does (on a copy of the table, made here first).
        # penn=True in sacremoses adds the `` -> ' and '' -> " rules the perl script applies when *not* -penn.
        self.NORMALIZE_UNICODE = [*self.NORMALIZE_UNICODE[:9], ("‘", '"'), ("‚", '"'), *self.NORMALIZE_UNICODE[11:]]
        super().__init__(lang=lang, penn=True, perl_parity=True)
        # sacremoses' table, each pattern compiled once: its normalize passes the pattern's text to re.sub, a lookup
        # in re's cache for each of ~45 patterns on every line (a third of its time)
        self._compiled = [(re.compile(pattern), substitution) for pattern, substitution in self.substitutions]

    def normalize(self, text: str) -> str:
        # The perl script keeps each line's "\n", which its non-English rule `(\.+)"(\s*[^<])` -> `"$1$2` can
        # match: a German `."` at the end of a line becomes `".`. (sacremoses strips the result either way.)
        # sacremoses' normalize as built here (no unicode-punctuation pre-pass, no control-character post-pass).
        text += "\n"
        for pattern, substitution in self._compiled:
            text = pattern.sub(substitution, text)
        return text.strip()


def tokenize(moses: MosesTokenizer, line: str, *, aggressive_dash: bool = False) -> str:
    """tokenizer.perl -l LANG [-a] on one line: XML escaping on (the perl default); blank lines pass as they are."""
    if not line.strip():
        return line
    return moses.tokenize(line, aggressive_dash_splits=aggressive_dash, return_str=True, escape=True)


def remove_non_printing(line: str) -> str:
    """remove-non-printing-char.perl: every control, format, private-use or unassigned character -> a space."""
    return _NON_PRINTING.sub(" ", line)


def lowercase(line: str) -> str:
    """lowercase.perl (perl's lc): like str.lower, but lc has no final-sigma rule (Σ -> σ everywhere)."""
    return line.replace("Σ", "σ").lower() if "Σ" in line else line.lower()


def clean_pairs(
    pairs: Iterable[tuple[str, str]], *, ratio: float, min_len: int, max_len: int, max_word_length: int = 1000
) -> Iterator[tuple[str, str]]:
    """clean-corpus-n.perl -ratio RATIO corpus l1 l2 out MIN MAX: the kept (l1, l2) pairs, whitespace-normalized."""
    too_long_word = re.compile(rf"[^\s|]{{{max_word_length + 1}}}")
    factored: bool | None = None
    for first, second in pairs:
        if factored is None:  # as the perl script: '|' in the first pair means factored input, else '|' is dropped
            factored = "|" in first or "|" in second
        if not factored:
            first, second = first.replace("|", ""), second.replace("|", "")
        first, second = _WHITESPACE.sub(" ", first).strip(" "), _WHITESPACE.sub(" ", second).strip(" ")
        if not first or not second:
            continue
        first_count, second_count = len(first.split(" ")), len(second.split(" "))
        if not (min_len <= first_count <= max_len and min_len <= second_count <= max_len):
            continue
        if first_count / second_count > ratio or second_count / first_count > ratio:
            continue
        if too_long_word.search(first) or too_long_word.search(second):
            continue
        yield first, second
