"""The fine-tunings `prelnx finetune` runs, one after the other: one per (pre-trained checkpoint, seed), each an
ordinary prelnx run (lock, records, resume); then the summary.

A fine-tuning is a config of task: sentence_prediction: optimisation, data and epochs from `--config`, the model
(layout, dimensions, sequence length) from the pre-trained run's config.yaml so that the weights fit. Runs live
under `<pre-trained run>/finetune/<config name>/update-<pre-training update>/seed-<n>`: re-running resumes, and a
checkpoint that moved on (best, last) gets its own folder. Each stage's folder holds the checkpoint it starts from
(`pretrained.pt`, made before training), so its weights stay those its name says while pre-training goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prelnx.exits import Exit, Refusal, exit_for
from prelnx.config.schema import Config, check_values
from prelnx.finetune.summary import SUMMARY_MD, summarize, write_summary
from prelnx.records.checkpoints import CheckpointChoice, checkpoint_info, parse_checkpoints
from prelnx.records.outcome import RunStatus
from prelnx.records.run_config import RunConfigError, read_run_config

log = logging.getLogger(__name__)
RUN_DIR_AS = "--pretrained RUN_DIR"  # how finetune is given its pre-trained run, for --checkpoint's refusals


class FinetunePlanError(Refusal):
    """The pre-trained run or a checkpoint cannot be fine-tuned; the message says which and why."""


@dataclass
class Finetuning:
    checkpoint: Path  # in the pre-trained run
    snapshot: Path  # its copy the fine-tuning starts from (stage folder / pretrained.pt)
    pretrain_update: int  # the update the checkpoint held when the fine-tuning was planned (it names the folder)
    seed: int
    run_dir: Path
    config: Config


def pretrained_config(run_dir: Path) -> Config:
    try:
        config = read_run_config(run_dir)
    except RunConfigError as error:
        raise FinetunePlanError(f"--pretrained: {error}") from None
    if config.task != "masked_lm":
        raise FinetunePlanError(f"--pretrained {run_dir}: a {config.task} run; fine-tuning starts from a masked_lm run")
    return config


def check_dictionaries(base: Config, pretrained: Config) -> None:
    """The fine-tuning's token ids must be the pre-training's: the same dictionary, or nothing starts."""
    from prelnx.plan.data import data_dir

    if base.data.dataset == "synthetic":
        if pretrained.data.dataset != "synthetic":
            raise FinetunePlanError("data.dataset: synthetic pairs are made with the synthetic pre-training text's "
                                    "dictionary, but this model was pre-trained on other data; give data.path to "
                                    "pair data binarized with its dict.txt")  # fmt: skip
        return
    ours, theirs = data_dir(base) / "input0" / "dict.txt", data_dir(pretrained) / "dict.txt"
    if ours.is_file() and theirs.is_file() and ours.read_bytes() != theirs.read_bytes():
        raise FinetunePlanError(f"{ours} differs from the pre-training dictionary {theirs}: binarize the pairs with "
                                f"`--srcdict {theirs}` (docs/studies.md, 'BERT pre-training without warm-up')")  # fmt: skip


def finetune_config(base: Config, pretrained: Config, checkpoint: Path, seed: int, name: str) -> Config:
    """The fine-tuning config: `base` with the pre-trained model, the checkpoint (its snapshot) and the seed."""
    data = dataclasses.replace(base.data, tokens_per_sample=pretrained.data.tokens_per_sample)
    if base.data.dataset == "synthetic":  # the pairs are made from the pre-training text's generator and dictionary
        data = dataclasses.replace(data, synthetic=pretrained.data.synthetic)
    config = dataclasses.replace(
        base, name=name, data=data, model=pretrained.model,
        finetune=dataclasses.replace(base.finetune, from_checkpoint=str(checkpoint.resolve())),
        train=dataclasses.replace(base.train, seed=seed),
    )  # fmt: skip
    problems = check_values(config)
    if problems:
        raise FinetunePlanError("; ".join(f"{key}: {message}" for key, message in problems))
    return config


def default_folder(base: Config, pretrained_run: Path) -> Path:
    """Where a pre-trained run's fine-tunings of `base` go unless told: <run>/finetune/<base's name>."""
    return pretrained_run / "finetune" / Path(base.name or "finetune").name


def plan(base: Config, pretrained_run: Path, chosen: Sequence[str | CheckpointChoice], seeds: Sequence[int],
         out: Path) -> list[Finetuning]:  # fmt: skip
    """A fine-tuning per seed and checkpoint `chosen` names, each once (--checkpoint values in its one grammar,
    records/checkpoints.py, with `stages`: every checkpoint_<epoch>_<update>.pt kept, in update order)."""
    choices = parse_checkpoints(chosen, run_dir_as=RUN_DIR_AS, many=True)  # a bad value first, before any file is read
    if base.task != "sentence_prediction":
        raise FinetunePlanError(f"--config: task is {base.task}; a fine-tuning config has task: sentence_prediction")
    pretrained = pretrained_config(pretrained_run)
    check_dictionaries(base, pretrained)
    runs = []
    for checkpoint in dict.fromkeys(path for choice in choices for path in choice.files(pretrained_run)):
        update = checkpoint_info(checkpoint).update  # best/last move on while pre-training goes on
        stage = f"update-{update}"
        snapshot = out / stage / "pretrained.pt"
        for seed in seeds:
            run_dir = out / stage / f"seed-{seed}"
            name = f"{pretrained_run.name}/{stage}/seed-{seed}"
            config = finetune_config(base, pretrained, snapshot, seed, name)
            runs.append(Finetuning(checkpoint, snapshot, update, seed, run_dir, config))
    return runs


def take_snapshot(run: Finetuning) -> None:
    """The stage's pretrained.pt: a hard link to the checkpoint (fairseq replaces checkpoint files by renaming, so
    the link keeps these weights), or a copy across file systems; refused if the checkpoint moved on meanwhile."""
    if run.snapshot.is_file():
        return
    run.snapshot.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(run.checkpoint, run.snapshot)
    except OSError:
        partial = run.snapshot.with_name(run.snapshot.name + ".tmp")
        shutil.copyfile(run.checkpoint, partial)
        os.replace(partial, run.snapshot)
    if checkpoint_info(run.snapshot).update != run.pretrain_update:
        run.snapshot.unlink()
        raise FinetunePlanError(f"{run.checkpoint} moved on past update {run.pretrain_update} while planning; run again")


def run_all(runs: list[Finetuning], folder: Path) -> Exit:
    """Train every fine-tuning not yet finished; write the summary; the exit code of their statuses (exits.py)."""
    from prelnx.launch.local import train
    from prelnx.records.lock import RunLocked

    statuses: list[RunStatus] = []
    for index, run in enumerate(runs, 1):
        take_snapshot(run)
        log.info(f"fine-tuning {index}/{len(runs)}: {run.checkpoint.name}, seed {run.seed} -> {run.run_dir}")
        try:
            statuses.append(train(run.config, run_dir=run.run_dir).status)
        except RunLocked as error:
            log.info(f"skipped: {error}")
            statuses.append(RunStatus.ELSEWHERE)
    log.info(write_summary(folder, summarize(runs)).rstrip())
    log.info(f"summary: {folder / SUMMARY_MD}")
    return exit_for(statuses)
