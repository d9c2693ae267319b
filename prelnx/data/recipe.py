"""What a dataset module hands to `prepare`: languages, splits, settings, and how to gather and build its text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prelnx.data.sources import SourceFiles
from prelnx.data.workers import Workers


@dataclass(frozen=True)
class Recipe:
    dataset: str
    languages: tuple[str, str]  # (source, target)
    splits: list[str]  # binarized splits; the first one builds the dictionaries
    joined_dictionary: bool  # one dictionary for both sides (fairseq-preprocess --joined-dictionary)
    settings: dict  # everything that decides the output; the same settings give the same data
    gather: Callable[[Path], SourceFiles]  # work folder -> the located input files
    build: Callable[[SourceFiles, Path, Workers], dict]  # inputs, output folder -> BPE entry of the manifest
    monolingual: bool = False  # one side (task: masked_lm), binarized with fairseq-preprocess --only-source

    def describe(self) -> str:
        if self.monolingual:
            return f"{self.dataset} (monolingual)"
        return f"{self.dataset} {self.languages[0]}->{self.languages[1]}"
