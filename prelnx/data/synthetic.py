"""The offline synthetic translation task: generated from a seed, binarized for fairseq, cached.

A "sentence" is a sequence of pseudo-words drawn from a Zipf distribution over a source vocabulary. Its
"translation" maps every source word to its own target word (a fixed random bijection) and swaps each
neighbouring pair of words (local reordering), so the model must learn a lexicon and a reordering rule,
as in real translation, but with nothing to download. The same settings always give the same files.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from prelnx.data.binarize import binarize
from prelnx.data.output import build_cached
from prelnx.data.textio import write_lines

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


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
    """Generate and binarize the task into `out_dir` unless it is there (prelnx.data.output.build_cached)."""

    def build(staging: Path) -> dict:
        pairs = generate_pairs(task)
        for split, split_pairs in pairs.items():
            write_lines(staging / "text" / f"{split}.src", (src for src, _ in split_pairs))
            write_lines(staging / "text" / f"{split}.tgt", (tgt for _, tgt in split_pairs))
        binarize(staging / "text", staging, source_lang="src", target_lang="tgt", splits=list(pairs))
        return {"dataset": "synthetic", "task": asdict(task), "lines": {split: len(p) for split, p in pairs.items()}}

    return build_cached(out_dir, {"task": asdict(task)}, build)
