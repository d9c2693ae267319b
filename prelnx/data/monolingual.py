"""The offline text for task: masked_lm: the synthetic translation task's pairs, each written as one line.

A line is `source words = target words` (prelnx.data.synthetic: Zipf-distributed pseudo-words, a fixed
lexicon, neighbouring pairs swapped). A masked word is predictable only through its counterpart on the
other side of `=` and the lexicon, so the encoder has to learn real dependencies across positions, as BERT
does on natural text, and nothing is downloaded. Generated from the seed, binarized with fairseq's
`--only-source`, cached like the translation task (same settings, same files).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from prelnx.data.binarize import binarize
from prelnx.data.cache import build_cached
from prelnx.data.synthetic import SyntheticTask, generate_pairs

SEPARATOR = "="
SPLITS = ("train", "valid")


def text_lines(task: SyntheticTask) -> dict[str, list[str]]:
    """Split name -> lines `source = target` (the test split is not used by masked_lm)."""
    pairs = generate_pairs(task)
    return {split: [f"{src} {SEPARATOR} {tgt}" for src, tgt in pairs[split]] for split in SPLITS}


def _is_built(out_dir: Path, task: SyntheticTask) -> bool:
    try:
        manifest = json.loads((out_dir / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return manifest.get("task") == asdict(task) and manifest.get("dataset") == "synthetic-text"


def prepare_synthetic_text(task: SyntheticTask, out_dir: Path) -> Path:
    """Generate and binarize the text into `out_dir` unless it is there (prelnx.data.cache)."""

    def build(staging: Path) -> None:
        (staging / "text").mkdir()
        lines = text_lines(task)
        for split, split_lines in lines.items():
            (staging / "text" / f"{split}.txt").write_text("".join(line + "\n" for line in split_lines))
        binarize(staging / "text", staging, source_lang="txt", target_lang="txt", splits=list(SPLITS),
                 joined_dictionary=False, monolingual=True)  # fmt: skip
        manifest = {"dataset": "synthetic-text", "task": asdict(task), "lines": {s: len(v) for s, v in lines.items()}}
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    return build_cached(out_dir, lambda folder: _is_built(folder, task), build)
