"""Where a config's data is, and why it cannot be trained on (not prepared, damaged): read-only checks (the
launch, `prelnx.launch.prepare.ensure_data`, generates the synthetic task).
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.data.check import DataDamaged, check_binarized, check_monolingual, longest_sentence
from prelnx.data.locations import DATASETS, data_home, default_folder
from prelnx.data.synthetic import SyntheticTask, pairs_problem
from prelnx.exits import Refusal

MONOLINGUAL = ("masked_lm", "language_model")  # the tasks trained on one text, no pair: dict.txt, train/valid.bin/.idx


class DataNotReady(Refusal):
    """The configured data folder is missing or not binarized; the message says how to prepare it."""


def languages(config: Config) -> tuple[str, str]:
    default = DATASETS[config.data.dataset].languages
    return config.data.source_lang or default[0], config.data.target_lang or default[1]


def data_dir(config: Config) -> Path:
    """Where the binarized data is (or, for synthetic, will be cached)."""
    if config.data.path is not None:
        return Path(config.data.path).expanduser()
    if config.data.dataset == "synthetic":
        return synthetic_dir(config.task, config.data.synthetic)
    return default_folder(config.data.dataset)


# a language model reads the masked LM's synthetic text (the same folder)
SYNTHETIC_KINDS = {"translation": "synthetic", "masked_lm": "synthetic-text", "sentence_prediction": "synthetic-pairs",
                   "language_model": "synthetic-text"}


def synthetic_dir(task: str, synthetic: SyntheticTask) -> Path:
    """Where a task's synthetic data is cached: one folder per kind and generator settings."""
    return data_home() / f"{SYNTHETIC_KINDS[task]}-{synthetic.fingerprint()}"


def data_problem(config: Config) -> str | None:
    """Why the config's data cannot be trained on (not prepared, damaged), or None. Generates nothing."""
    folder = data_dir(config)
    if config.task == "sentence_prediction":
        return pairs_problem(folder, generated=config.data.dataset == "synthetic")
    text = config.task in MONOLINGUAL
    source, target = languages(config)
    needed = ("dict.txt", "train.idx") if text else (f"dict.{source}.txt", f"dict.{target}.txt")
    if config.data.dataset == "synthetic" and not (folder / needed[0]).is_file():
        return None  # generated on demand
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing and text:
        return (f"data.path: {folder} holds no binarized text for {config.task} (needs dict.txt, train.bin/.idx, "
                f"valid.bin/.idx). Prepare it with `prelnx data prepare text --source <your text> --out <folder>` "
                f"(see docs/studies.md, 'BERT pre-training without warm-up') and point data.path at the output folder.")  # fmt: skip
    held = sorted(path.name for path in folder.glob("dict.*.txt"))
    if held and len(missing) == len(needed):  # none of these languages, but some
        return (f"data.path: {folder} holds {', '.join(held)}, not {', '.join(missing)}: set data.source_lang and "
                f"data.target_lang to the languages it was prepared for")  # fmt: skip
    if missing:
        return (f"data.path: {folder} holds no binarized {config.data.dataset} data (missing {', '.join(missing)}). "
                f"Prepare it with `prelnx data prepare {config.data.dataset}` (see docs/data.md) and point data.path "
                f"at the output folder.")  # fmt: skip
    try:
        if text:
            check_monolingual(folder)
        else:
            check_binarized(folder, source, target)
    except DataDamaged as error:
        return str(error)
    d = config.data
    # sample_break_mode complete packs whole lines: one longer than a sample makes fairseq's validation fail
    for split in ("train", "valid") if text and d.sample_break_mode == "complete" else ():
        longest = longest_sentence(folder / split)
        if longest is not None and longest > d.tokens_per_sample - 1:
            return (f"{folder / split}.bin: a line of {longest} tokens (end of line included) does not fit in a "
                    f"sample of data.tokens_per_sample {d.tokens_per_sample} (with its start token); set "
                    f"data.tokens_per_sample to at least {longest + 1}, or data.sample_break_mode: none to cut the "
                    f"text into samples across lines")  # fmt: skip
    return None
