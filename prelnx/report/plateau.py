"""The unigram plateau: the loss (bits per token) of a model that learned only the target side's word frequencies,
the line below which a run counts as trained (prelnx.report.arms). Found from, in this order: the sweep's own copy of
the target dictionary (`<sweep dir>/data/<dict name>`, so that a report rebuilds to the same bytes anywhere); fairseq's
dictionary in the run's data folder; the binarized training set there, read in fairseq's mmap format
(prelnx.data.check.split_tokens) without importing fairseq (12 s). None: no plateau."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prelnx.config.schema import Config
from prelnx.data.check import split_tokens
from prelnx.plan.data import MONOLINGUAL, languages


@dataclass(frozen=True)
class Plateau:
    bits: float
    source: str  # what it was computed from, in words (the report's provenance)


def entropy_bits(counts: np.ndarray | list[int]) -> float | None:
    counts = np.asarray([c for c in counts if c > 0], dtype=float)
    total = counts.sum()
    if not total:
        return None
    p = counts / total
    return float(-(p * np.log2(p)).sum())


def dictionary_entropy(path: Path) -> float | None:
    try:
        counts = [int(line.split()[1]) for line in path.read_text().splitlines() if len(line.split()) >= 2]
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return entropy_bits(counts)


def binarized_entropy(stem: Path) -> float | None:
    """The unigram entropy of a fairseq mmap dataset `<stem>.bin` / `<stem>.idx` (None: absent or not that format)."""
    tokens = split_tokens(stem)
    if tokens is None or tokens.size == 0 or tokens.dtype.kind == "f" or tokens.min() < 0:
        return None
    return entropy_bits(np.bincount(tokens.astype(np.int64, copy=False)))


def dictionary_name(config: Config) -> str:
    """fairseq's target dictionary: dict.txt, or dict.<target>.txt with the dataset's own target language unless
    data.target_lang names another (prelnx.plan.data.languages: IWSLT14's is dict.en.txt)."""
    return "dict.txt" if config.task in MONOLINGUAL else f"dict.{languages(config)[1]}.txt"


def find_plateau(config: Config, data_folder: Path | None, sweep_dir: Path | None = None) -> Plateau | None:
    """The run's unigram plateau from the first source that has it (the module's docstring), or None."""
    name = dictionary_name(config)
    sources = [(dictionary_entropy, sweep_dir / "data" / name, f"{name}, the sweep's copy")] if sweep_dir else []
    if data_folder is not None:
        src, tgt = languages(config)
        stem = data_folder / ("train" if config.task in MONOLINGUAL else f"train.{src}-{tgt}.{tgt}")
        sources += [(dictionary_entropy, data_folder / name, name),
                    (binarized_entropy, stem, f"the binarized training set's tokens ({stem.name}.bin)")]
    for entropy, path, source in sources:
        if (bits := entropy(path)) is not None:
            return Plateau(bits, source)
    return None
