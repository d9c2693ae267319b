"""The datasets' names (those a config trains on, those `prelnx data prepare` prepares) and where prepared
(binarized) datasets live by default, shared by `prelnx data prepare` and `prelnx train`."""

from __future__ import annotations

import enum
from pathlib import Path

# The data.dataset values a config trains on (synthetic: generated offline; custom: a prepared folder of yours).
TRAINED: tuple[str, ...] = ("synthetic", "iwslt14", "wmt14", "multi30k", "custom")


class Dataset(enum.StrEnum):
    """What `prelnx data prepare` prepares (its DATASET argument's choices)."""

    iwslt14 = "iwslt14"
    wmt14 = "wmt14"
    multi30k = "multi30k"
    custom = "custom"
    text = "text"  # monolingual text, for task: masked_lm


# Folders relative to the working directory, named as fairseq's own recipes name them.
DEFAULT_DATA_DIRS: dict[str, Path] = {
    "iwslt14": Path("data-bin/iwslt14.tokenized.de-en"),
    "wmt14": Path("data-bin/wmt14_en_de"),
    "multi30k": Path("data-bin/multi30k.de-en"),
}
# (source, target) languages per dataset.
DEFAULT_LANGUAGES: dict[str, tuple[str, str]] = {
    "iwslt14": ("de", "en"),
    "wmt14": ("en", "de"),
    "multi30k": ("de", "en"),
    "synthetic": ("src", "tgt"),
}
# `prelnx data prepare text`: the last lines of the text held out for validation.
DEFAULT_VALID_LINES = 1000
