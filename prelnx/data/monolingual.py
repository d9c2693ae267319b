"""The offline text for task: masked_lm: the synthetic translation task's pairs, each written as one line.

A line is `source words = target words` (prelnx.data.synthetic). A masked word is predictable only through its
counterpart across `=` and the lexicon, so the encoder must learn dependencies across positions, as BERT does on
natural text, with nothing downloaded. Binarized with fairseq's `--only-source`, cached like the translation task.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from prelnx.data.binarize import binarize
from prelnx.data.output import build_cached
from prelnx.data.synthetic import SyntheticTask, generate_pairs
from prelnx.data.textio import write_lines

SEPARATOR = "="
SPLITS = ("train", "valid")


def prepare_synthetic_text(task: SyntheticTask, out_dir: Path) -> Path:
    """Generate and binarize the text into `out_dir` unless it is there (prelnx.data.output.build_cached)."""
    identity = {"dataset": "synthetic-text", "task": asdict(task)}

    def build(staging: Path) -> dict:
        pairs = generate_pairs(task)  # the test split is not used by masked_lm
        lines = {split: [f"{src} {SEPARATOR} {tgt}" for src, tgt in pairs[split]] for split in SPLITS}
        for split, split_lines in lines.items():
            write_lines(staging / "text" / f"{split}.txt", split_lines)
        binarize(staging / "text", staging, source_lang="txt", target_lang="txt", splits=list(SPLITS), monolingual=True)
        return {**identity, "lines": {split: len(split_lines) for split, split_lines in lines.items()}}

    return build_cached(out_dir, identity, build)
