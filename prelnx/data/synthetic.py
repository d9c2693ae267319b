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
from prelnx.data.cache import build_cached

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


def _is_built(out_dir: Path, task: SyntheticTask) -> bool:
    manifest_path = out_dir / "manifest.json"
    try:
        return json.loads(manifest_path.read_text()).get("task") == asdict(task)
    except (OSError, json.JSONDecodeError):
        return False


def prepare_synthetic(task: SyntheticTask, out_dir: Path) -> Path:
    """Generate and binarize the task into `out_dir` unless it is already there; returns `out_dir`.

    Built in a temporary sibling folder and renamed at the end, so an interrupted build never looks finished.
    """

    def build(staging: Path) -> None:
        text_dir = staging / "text"
        text_dir.mkdir()
        pairs = generate_pairs(task)
        for split, split_pairs in pairs.items():
            (text_dir / f"{split}.src").write_text("".join(src + "\n" for src, _ in split_pairs))
            (text_dir / f"{split}.tgt").write_text("".join(tgt + "\n" for _, tgt in split_pairs))
        binarize(text_dir, staging, source_lang="src", target_lang="tgt", splits=list(pairs), joined_dictionary=False)
        manifest = {
            "dataset": "synthetic",
            "task": asdict(task),
            "lines": {split: len(split_pairs) for split, split_pairs in pairs.items()},
        }
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    return build_cached(out_dir, lambda folder: _is_built(folder, task), build)
