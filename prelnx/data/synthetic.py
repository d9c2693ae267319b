"""The offline tasks, generated from a seed (the same settings always give the same files), binarized for fairseq
and cached (prelnx.data.output.build_cached): the Zipf pseudo-word translation task (a lexicon and a reordering
rule), its masked-LM text (`source words = target words`, `--only-source`) and the fine-tuning pairs in fairseq's
GLUE layout (is the second sentence the first's translation?): docs/usage.md, docs/studies.md.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from prelnx.data.output import binarize, build_cached
from prelnx.data.textio import write_lines

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
PARTS = ("input0", "input1", "label")  # of the fine-tuning pairs
TRAIN_PAIRS, VALID_PAIRS = 2000, 500


@dataclass(frozen=True)
class SyntheticTask:
    vocab_size: int = 500  # distinct words per side
    min_words: int = 3  # words per sentence, inclusive bounds
    max_words: int = 15
    zipf_exponent: float = 1.0  # word frequency ~ 1 / rank**exponent
    train_pairs: int = 10_000
    valid_pairs: int = 500
    test_pairs: int = 500
    seed: int = 1

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:10]


def _pseudo_words(count: int, rng: random.Random, prefix: str) -> list[str]:
    """`count` distinct pronounceable words, e.g. 'kalimo'; the prefix keeps the two sides' words apart."""
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.randint(2, 4)
        words.add(prefix + "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables)))
    return sorted(words)


def generate_pairs(task: SyntheticTask) -> dict[str, list[tuple[str, str]]]:
    """Split name -> list of (source sentence, target sentence)."""
    rng = random.Random(task.seed)
    source_words = _pseudo_words(task.vocab_size, rng, "")
    target_words = _pseudo_words(task.vocab_size, rng, "")
    rng.shuffle(target_words)
    lexicon = dict(zip(source_words, target_words))
    weights = [1.0 / (rank + 1) ** task.zipf_exponent for rank in range(task.vocab_size)]

    def sentence_pair() -> tuple[str, str]:
        length = rng.randint(task.min_words, task.max_words)
        source = rng.choices(source_words, weights=weights, k=length)
        target = [lexicon[word] for word in source]
        for i in range(0, length - 1, 2):
            target[i], target[i + 1] = target[i + 1], target[i]
        return " ".join(source), " ".join(target)

    sizes = {"train": task.train_pairs, "valid": task.valid_pairs, "test": task.test_pairs}
    return {split: [sentence_pair() for _ in range(size)] for split, size in sizes.items()}


def prepare_synthetic(task: SyntheticTask, out_dir: Path) -> Path:
    """Generate and binarize the translation task into `out_dir` unless it is there."""

    def build(staging: Path) -> dict:
        pairs = generate_pairs(task)
        for split, split_pairs in pairs.items():
            write_lines(staging / "text" / f"{split}.src", (src for src, _ in split_pairs))
            write_lines(staging / "text" / f"{split}.tgt", (tgt for _, tgt in split_pairs))
        binarize(staging / "text", staging, source_lang="src", target_lang="tgt", splits=list(pairs))
        return {"dataset": "synthetic", "task": asdict(task), "lines": {split: len(p) for split, p in pairs.items()}}

    return build_cached(out_dir, {"task": asdict(task)}, build)


def prepare_synthetic_text(task: SyntheticTask, out_dir: Path) -> Path:
    """Generate and binarize the masked_lm text into `out_dir` unless it is there."""
    identity = {"dataset": "synthetic-text", "task": asdict(task)}

    def build(staging: Path) -> dict:
        pairs = generate_pairs(task)  # the test split is not used by masked_lm
        lines = {split: [f"{src} = {tgt}" for src, tgt in pairs[split]] for split in ("train", "valid")}
        for split, split_lines in lines.items():
            write_lines(staging / "text" / f"{split}.txt", split_lines)
        binarize(staging / "text", staging, source_lang="txt", target_lang="txt", splits=list(lines), monolingual=True)
        return {**identity, "lines": {split: len(split_lines) for split, split_lines in lines.items()}}

    return build_cached(out_dir, identity, build)


def pairs_problem(folder: Path, *, generated: bool) -> str | None:
    """Why `folder` cannot be fine-tuned on (not in the GLUE layout, damaged), or None."""
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


def prepare_synthetic_pairs(task: SyntheticTask, dictionary: Path, out_dir: Path) -> Path:
    """Generate and binarize the pair task into `out_dir` unless it is there."""
    manifest = {"dataset": "synthetic-pairs", "task": asdict(task), "train": TRAIN_PAIRS, "valid": VALID_PAIRS}

    def build(staging: Path) -> dict:
        extended = replace(task, train_pairs=task.train_pairs + TRAIN_PAIRS + VALID_PAIRS)
        fresh = generate_pairs(extended)["train"][task.train_pairs:]  # after the pre-training text's sentences
        rng = random.Random(task.seed + 1)
        lines: dict[str, dict[str, list[str]]] = {}  # split -> part -> lines: first sentence, second sentence, label
        for split, pairs in {"train": fresh[:TRAIN_PAIRS], "valid": fresh[TRAIN_PAIRS:]}.items():
            lines[split] = {part: [] for part in PARTS}
            for index, (source, target) in enumerate(pairs):
                label = rng.random() < 0.5
                other = pairs[(index + rng.randrange(1, len(pairs))) % len(pairs)][1]
                lines[split]["input0"].append(source)
                lines[split]["input1"].append(target if label else other)
                lines[split]["label"].append(str(int(label)))
        for part in PARTS:
            for split in lines:
                write_lines(staging / "text" / part / f"{split}.txt", lines[split][part])
            binarize(staging / "text" / part, staging / part, source_lang="txt", target_lang="txt", splits=list(lines),
                     monolingual=True, dictionary=None if part == "label" else dictionary)  # fmt: skip
        return manifest

    return build_cached(out_dir, manifest, build)
