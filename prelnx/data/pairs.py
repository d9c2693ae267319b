"""Sentence-pair classification data for `prelnx finetune` (task: sentence_prediction; GLUE's MRPC and RTE).

The layout is fairseq's (examples/roberta/README.glue.md, preprocess_GLUE_tasks.sh): `input0/` and `input1/`
(first and second sentences) binarized with the *pre-training* dict.txt (`--srcdict`), `label/` with its own
dictionary; each holds train and valid splits.

The offline task, matched to the synthetic pre-training text: is the second sentence the translation of the
first (label 1) or of another sentence (label 0)? Paraphrase detection like MRPC, decided by the lexicon the
masked-LM pre-training had to learn, on new sentences drawn after the pre-training text's (same generator, seed).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from prelnx.data.binarize import binarize
from prelnx.data.output import build_cached
from prelnx.data.synthetic import SyntheticTask, generate_pairs
from prelnx.data.textio import write_lines

PARTS = ("input0", "input1", "label")
TRAIN_PAIRS, VALID_PAIRS = 2000, 500


def pairs_problem(folder: Path, *, generated: bool) -> str | None:
    """Why `folder` cannot be fine-tuned on, or None."""
    from prelnx.data.check import DataDamaged, check_monolingual

    if generated and not (folder / "manifest.json").is_file():
        return None  # generated on demand
    missing = [f"{part}/{name}" for part in PARTS for name in ("dict.txt", "train.idx", "valid.idx")
               if not (folder / part / name).is_file() and not (part == "input1" and not (folder / part).is_dir())]  # fmt: skip
    if missing:
        return (f"data.path: {folder} is not sentence-pair data for fine-tuning (missing {', '.join(missing[:4])}). "
                f"Expected fairseq's GLUE layout: input0/, input1/ (optional) binarized with the pre-training "
                f"dict.txt, label/ (docs/studies.md, 'BERT pre-training without warm-up').")  # fmt: skip
    try:
        for part in PARTS:
            if (folder / part).is_dir():
                check_monolingual(folder / part)
    except DataDamaged as error:
        return str(error)
    return None


def synthetic_pair_lines(task: SyntheticTask) -> dict[str, dict[str, list[str]]]:
    """split -> part -> lines: first sentence, second sentence, label."""
    extended = dataclasses.replace(task, train_pairs=task.train_pairs + TRAIN_PAIRS + VALID_PAIRS)
    fresh = generate_pairs(extended)["train"][task.train_pairs:]  # after the pre-training text's sentences
    rng = random.Random(task.seed + 1)
    splits = {"train": fresh[:TRAIN_PAIRS], "valid": fresh[TRAIN_PAIRS:]}
    lines: dict[str, dict[str, list[str]]] = {}
    for split, pairs in splits.items():
        lines[split] = {part: [] for part in PARTS}
        for index, (source, target) in enumerate(pairs):
            label = rng.random() < 0.5
            other = pairs[(index + rng.randrange(1, len(pairs))) % len(pairs)][1]
            lines[split]["input0"].append(source)
            lines[split]["input1"].append(target if label else other)
            lines[split]["label"].append(str(int(label)))
    return lines


def prepare_synthetic_pairs(task: SyntheticTask, dictionary: Path, out_dir: Path) -> Path:
    """Generate and binarize the pair task into `out_dir` unless it is there (prelnx.data.output.build_cached)."""
    manifest = {"dataset": "synthetic-pairs", "task": dataclasses.asdict(task), "train": TRAIN_PAIRS, "valid": VALID_PAIRS}

    def build(staging: Path) -> dict:
        lines = synthetic_pair_lines(task)
        for part in PARTS:
            for split in lines:
                write_lines(staging / "text" / part / f"{split}.txt", lines[split][part])
            binarize(staging / "text" / part, staging / part, source_lang="txt", target_lang="txt", splits=list(lines),
                     monolingual=True, dictionary=None if part == "label" else dictionary)  # fmt: skip
        return manifest

    return build_cached(out_dir, manifest, build)
