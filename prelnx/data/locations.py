"""The datasets: one row each (the names a config trains on, those `prelnx data prepare` prepares, their languages,
default BPE and where they are prepared by default), read by `prelnx data prepare`, the config and `prelnx train`."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path


def data_home() -> Path:
    """prelnx's own cache (downloads, generated data): $PRELNX_DATA_HOME, default ~/.cache/prelnx."""
    return Path(os.environ.get("PRELNX_DATA_HOME", Path.home() / ".cache" / "prelnx"))


@dataclass(frozen=True)
class Named:
    languages: tuple[str, str] = ("src", "tgt")  # (source, target)
    folder: Path | None = None  # relative to the working directory, named as fairseq's own recipes name them
    bpe_merges: int | None = None  # joint BPE merges learned unless --bpe-merges/--bpe-code say otherwise; None: no BPE
    trained: bool = True  # a data.dataset value a config trains on
    prepared: bool = True  # a DATASET of `prelnx data prepare`


DATASETS: dict[str, Named] = {
    "synthetic": Named(prepared=False),  # generated offline
    "iwslt14": Named(("de", "en"), Path("data-bin/iwslt14.tokenized.de-en"), 10_000),
    "wmt14": Named(("en", "de"), Path("data-bin/wmt14_en_de"), 40_000),
    "multi30k": Named(("de", "en"), Path("data-bin/multi30k.de-en"), 10_000),
    "custom": Named(),  # a prepared folder of yours
    "text": Named(trained=False),  # monolingual text, for task: masked_lm
}
# The data.dataset values a config trains on.
TRAINED: tuple[str, ...] = tuple(name for name, row in DATASETS.items() if row.trained)
# What `prelnx data prepare` prepares (its DATASET argument's choices).
Dataset = enum.StrEnum("Dataset", [name for name, row in DATASETS.items() if row.prepared])
# `prelnx data prepare text`: the last lines of the text held out for validation.
DEFAULT_VALID_LINES = 1000


def default_folder(dataset: str) -> Path:
    """Where `prelnx data prepare` writes and `prelnx train` looks when --out / data.path is not set."""
    return DATASETS[dataset].folder or Path("data-bin") / dataset
