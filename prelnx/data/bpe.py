"""Joint BPE with subword-nmt: learn the merges on the training text of both sides, or take a given code file."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

from prelnx.data.output import text_path
from prelnx.data.textio import DataError, count_lines, read_lines, sha256_file, tok_path, write_lines
from prelnx.data.workers import BpeStep, Workers


def learn_joint_bpe(texts: list[Path], code: Path, *, merges: int, workers: int = 1) -> None:
    """subword-nmt learn_bpe.py -s MERGES < (cat TEXTS) > CODE, as fairseq's recipes run it (min frequency 2)."""
    from subword_nmt import learn_bpe as subword
    from tqdm import tqdm

    subword.tqdm = partial(tqdm, disable=None)  # its bar on a terminal only, as Workers.map's

    joint = code.with_name(code.name + ".joint-input")
    with open(joint, "wb") as out:
        for text in texts:
            with open(text, "rb") as handle:
                shutil.copyfileobj(handle, out)
    try:
        with open(joint, encoding="utf-8") as infile, open(code, "w", encoding="utf-8") as outfile:
            subword.learn_bpe(infile, outfile, merges, min_frequency=2, num_workers=max(1, workers))
    finally:
        joint.unlink(missing_ok=True)


def encode(folder: Path, *, splits: list[str], languages: tuple[str, ...], given: Path | None, merges: int,
           workers: Workers) -> dict:  # fmt: skip
    """Write `folder/code` (learned jointly on text/tok/train.* of every side, or `given` checked and copied:
    prepare.make_recipe saw it exists), then subword-nmt apply_bpe.py -c code < text/tok/{split}.{lang} >
    text/{split}.{lang} for every split and side; returns the code's manifest entry."""
    code = folder / "code"
    if given is not None:
        lines = list(read_lines(given))
        if not lines:
            raise DataError(f"--bpe-code {given} is empty")
        header = 1 if lines[0].startswith("#version") else 0
        for number, line in enumerate(lines[header:], start=header + 1):
            if len(line.split(" ")) != 2:
                raise DataError(f"--bpe-code {given}: line {number} is not a BPE merge ('left right'): {line[:60]!r}")
        shutil.copyfile(given, code)
        entry = {"merges": len(lines) - header, "from": str(given)}
    else:
        learn_joint_bpe([tok_path(folder, "train", lang) for lang in languages], code, merges=merges,
                        workers=workers.count)  # fmt: skip
        entry = {"merges": count_lines(code) - 1, "learned_on": "train"}
    step = BpeStep(str(code))
    for split in splits:
        for lang in languages:
            lines = workers.map(step, read_lines(tok_path(folder, split, lang)), desc=f"bpe {split}.{lang}")
            write_lines(text_path(folder, split, lang), lines)
    return {"code": "code", "sha256": sha256_file(code), **entry}
