"""Translations from a checkpoint with fairseq's own generator (`fairseq-generate`, as a child process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from prelnx.data.check import sentence_count
from prelnx.plan.launch import fairseq_program
from prelnx.plugin_path import PLUGIN_DIR

_LINE = re.compile(r"^([HT])-(\d+)\t(.*)$")


class GenerationError(RuntimeError):
    pass


@dataclass
class Generation:
    hypotheses: list[str]  # in the split's original order
    references: list[str]


def generate(
    data: Path,
    checkpoint: Path,
    *,
    split: str,
    source_lang: str,
    target_lang: str,
    beam: int,
    lenpen: float,
    batch_size: int,
    remove_bpe: str | None,
    cuda: bool,
    threads: int | None = None,
    max_len_a: float = 1.2,
    max_len_b: int = 10,
) -> Generation:
    argv = [
        sys.executable, *fairseq_program("fairseq_cli.generate"), str(data),
        "--user-dir", str(PLUGIN_DIR), "--task", "translation",
        "--source-lang", source_lang, "--target-lang", target_lang,
        "--path", str(checkpoint), "--gen-subset", split,
        "--beam", str(beam), "--lenpen", str(lenpen), "--batch-size", str(batch_size),
        "--max-len-a", str(max_len_a), "--max-len-b", str(max_len_b),
        # fairseq's default (batch sizes rounded to multiples of 8) silently drops sentences when batching by
        # --batch-size: measured 496 of 500 translated on the synthetic test split. 1 keeps every sentence.
        "--required-batch-size-multiple", "1",
    ]  # fmt: skip
    if remove_bpe is not None:
        argv += ["--remove-bpe", remove_bpe]
    if not cuda:
        argv.append("--cpu")
    env = dict(os.environ)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-8:])
        raise GenerationError(f"fairseq-generate failed (exit code {completed.returncode}):\n{tail}")
    hypotheses: dict[int, str] = {}
    references: dict[int, str] = {}
    for line in completed.stdout.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        kind, index, rest = match.group(1), int(match.group(2)), match.group(3)
        if kind == "H":  # H-<id>\t<score>\t<text>
            hypotheses[index] = rest.split("\t", 1)[1] if "\t" in rest else ""
        else:
            references[index] = rest
    if not hypotheses or set(hypotheses) != set(references):
        raise GenerationError(f"fairseq-generate printed {len(hypotheses)} hypotheses for {len(references)} references")
    expected = sentence_count(data / f"{split}.{source_lang}-{target_lang}.{source_lang}")
    if expected is None:
        raise GenerationError(f"{data}: no binarized {split} split for {source_lang}-{target_lang}")
    if sorted(hypotheses) != list(range(expected)):
        missing = sorted(set(range(expected)) - set(hypotheses))
        raise GenerationError(f"fairseq-generate translated {len(hypotheses)} of the {expected} sentences of {split} "
                              f"(missing ids {missing[:10]}{' ...' if len(missing) > 10 else ''})")  # fmt: skip
    order = sorted(hypotheses)
    return Generation([hypotheses[i] for i in order], [references[i] for i in order])

