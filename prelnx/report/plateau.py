"""The unigram plateau: the loss (bits per token) of a model that learned only the target side's word frequencies,
the line below which a run counts as trained (prelnx.report.arms). Found from, in this order: the sweep's own copy of
the target dictionary (`<sweep dir>/data/<dict name>`, so that a report rebuilds to the same bytes anywhere); fairseq's
dictionary in the run's data folder; the binarized training set there, read in fairseq's mmap format
(fairseq/data/indexed_dataset.py, MMapIndexedDataset) with numpy, without importing fairseq (12 s). None: no plateau."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prelnx.config.schema import Config

MMAP_MAGIC = b"MMIDIDX\x00\x00"  # fairseq's MMapIndexedDataset.Index._HDR_MAGIC
MMAP_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float64,
               8: np.uint16}  # fairseq's indexed_dataset._code_to_dtype (6 is float, never a token file)  # fmt: skip
MONOLINGUAL = ("masked_lm", "language_model")


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
    try:
        with open(stem.with_name(stem.name + ".idx"), "rb") as index:
            if index.read(len(MMAP_MAGIC)) != MMAP_MAGIC:
                return None
            (_version,) = struct.unpack("<Q", index.read(8))
            (code,) = struct.unpack("<B", index.read(1))
        tokens = np.fromfile(stem.with_name(stem.name + ".bin"), dtype=MMAP_DTYPES[code])
    except (OSError, KeyError, struct.error, ValueError):
        return None
    if tokens.size == 0 or tokens.dtype.kind == "f" or tokens.min() < 0:
        return None
    return entropy_bits(np.bincount(tokens))


def dictionary_name(config: Config) -> str:
    return "dict.txt" if config.task in MONOLINGUAL else f"dict.{config.data.target_lang or 'tgt'}.txt"


def find_plateau(config: Config, data_folder: Path | None, sweep_dir: Path | None = None) -> Plateau | None:
    """The run's unigram plateau from the first source that has it (the module's docstring), or None."""
    name = dictionary_name(config)
    if sweep_dir is not None and (bits := dictionary_entropy(sweep_dir / "data" / name)) is not None:
        return Plateau(bits, f"{name}, the sweep's copy")
    if data_folder is None:
        return None
    if (bits := dictionary_entropy(data_folder / name)) is not None:
        return Plateau(bits, name)
    src, tgt = config.data.source_lang or "src", config.data.target_lang or "tgt"
    stem = data_folder / ("train" if config.task in MONOLINGUAL else f"train.{src}-{tgt}.{tgt}")
    if (bits := binarized_entropy(stem)) is not None:
        return Plateau(bits, f"the binarized training set's tokens ({stem.name}.bin)")
    return None
