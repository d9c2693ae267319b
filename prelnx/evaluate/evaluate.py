"""`prelnx evaluate`: a run's test (or valid) BLEU, tokenized as the paper reports it and detokenized as SacreBLEU
does (with its signature), of the translations fairseq's own generator (`fairseq-generate`, a child process) makes
from a checkpoint or the average of the last ones."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sacrebleu

from prelnx.atomic import write_text_atomic
from prelnx.exits import Exit, Refusal
from prelnx.data.check import sentence_count
from prelnx.machine import usable_cores
from prelnx.plan.data import data_dir, languages
from prelnx.plan.launch import fairseq_program, use_cuda
from prelnx.plugin_path import PLUGIN_DIR
from prelnx.records.checkpoints import CheckpointChoice, epoch_checkpoints, parse_checkpoints
from prelnx.records.outcome import RunStatus
from prelnx.records.run_config import read_run_config, refuse_changed_layout_file
from prelnx.records.status import read_status

RUN_DIR_AS = "prelnx evaluate RUN_DIR"  # how evaluate is given its run dir, for --checkpoint's refusals
_LINE = re.compile(r"^([HT])-(\d+)\t(.*)$")


class EvaluationError(Refusal):
    pass


@dataclass
class BleuScores:
    bleu_tokenized: float  # on BPE-removed, tokenized text, as multi-bleu.perl / fairseq-generate (the paper)
    sacrebleu: float  # on detokenized text, SacreBLEU's default 13a tokenization
    sacrebleu_signature: str


def score(hypotheses: list[str], references: list[str], *, target_lang: str | None,
          compound_split: bool = False) -> BleuScores:  # fmt: skip
    """`hypotheses`/`references`: tokenized, BPE removed. `target_lang` None means the text needs no detokenizing."""
    # fairseq's WMT14 En-De convention for tokenized BLEU: 'a-b' -> 'a ##AT##-##AT## b'
    split = (lambda line: re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)) if compound_split else str
    # force: the text is tokenized on purpose here (sacrebleu would warn about it)
    tokenized = sacrebleu.corpus_bleu([split(h) for h in hypotheses], [[split(r) for r in references]],
                                      tokenize="none", force=True)  # fmt: skip
    if target_lang is not None:  # SacreBLEU scores detokenized text
        from sacremoses import MosesDetokenizer

        detokenize = MosesDetokenizer(lang=target_lang).detokenize
        hypotheses, references = ([detokenize(line.split()) for line in text] for text in (hypotheses, references))
    metric = sacrebleu.BLEU()
    detok = metric.corpus_score(hypotheses, [references])
    return BleuScores(round(tokenized.score, 2), round(detok.score, 2), str(metric.get_signature()))


class GenerationError(Refusal):
    exit_code = Exit.FAILED  # fairseq-generate failed: not bad input


def generate(plan: dict[str, Any], batch_size: int) -> tuple[list[str], list[str]]:
    """fairseq-generate of the plan's split (plan_evaluation): (hypotheses, references), in the split's order."""
    config, data, split = plan["config"], plan["data"], plan["split"]
    source_lang, target_lang = languages(config)
    bleu, threads = config.eval.bleu, str(config.train.threads or usable_cores())
    argv = [
        sys.executable, *fairseq_program("fairseq_cli.generate"), str(data),
        "--user-dir", str(PLUGIN_DIR), "--task", "translation",
        "--source-lang", source_lang, "--target-lang", target_lang,
        "--path", str(plan["path"]), "--gen-subset", split,
        "--beam", str(plan["beam"]), "--lenpen", str(plan["lenpen"]), "--batch-size", str(batch_size),
        "--max-len-a", str(bleu.max_len_a), "--max-len-b", str(bleu.max_len_b),
        # fairseq's default (batch sizes rounded to multiples of 8) silently drops sentences when batching by
        # --batch-size: measured 496 of 500 translated on the synthetic test split. 1 keeps every sentence.
        "--required-batch-size-multiple", "1",
    ]  # fmt: skip
    if bleu.remove_bpe is not None:
        argv += ["--remove-bpe", bleu.remove_bpe]
    if not use_cuda(config):
        argv.append("--cpu")
    env = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-8:])
        raise GenerationError(f"fairseq-generate failed (exit code {completed.returncode}):\n{tail}")
    texts: dict[str, dict[int, str]] = {"H": {}, "T": {}}  # hypotheses, references by sentence id
    for match in filter(None, map(_LINE.match, completed.stdout.splitlines())):
        kind, index, rest = match.groups()  # H-<id>\t<score>\t<text>, T-<id>\t<text>
        texts[kind][int(index)] = rest.partition("\t")[2] if kind == "H" else rest
    hypotheses, references = texts["H"], texts["T"]
    if not hypotheses or set(hypotheses) != set(references):
        raise GenerationError(f"fairseq-generate printed {len(hypotheses)} hypotheses for {len(references)} references")
    expected = sentence_count(data / f"{split}.{source_lang}-{target_lang}.{source_lang}")
    if expected is None:
        raise GenerationError(f"{data}: no binarized {split} split for {source_lang}-{target_lang}")
    if sorted(hypotheses) != list(range(expected)):
        missing = sorted(set(range(expected)) - set(hypotheses))
        raise GenerationError(f"fairseq-generate translated {len(hypotheses)} of the {expected} sentences of {split} "
                              f"(missing ids {missing[:10]}{' ...' if len(missing) > 10 else ''})")  # fmt: skip
    return [hypotheses[i] for i in range(expected)], [references[i] for i in range(expected)]


def _check_loadable(path: Path) -> None:
    """Refuse a planted or damaged checkpoint here, with one message, before fairseq-generate loads it."""
    from prelnx.records.checkpoints import load_checkpoint

    try:
        load_checkpoint(path, mmap=True)
    except Refusal as error:  # CheckpointRefused, CheckpointDamaged
        raise EvaluationError(str(error)) from None


def average_checkpoints(paths: list[Path], output: Path) -> Path:
    """Write a checkpoint whose model weights are the element-wise mean of (one or more) `paths`' (the rest from the
    last), as the Admin and fairseq WMT recipes average the last N epochs. Read with fairseq's loader: torch's safe
    (weights_only) loading and the plugin's allowlist apply."""
    import torch
    from omegaconf import DictConfig, OmegaConf

    from prelnx.launch.inprocess import load_plugin

    load_plugin()  # the safe-loading allowlist
    from fairseq import checkpoint_utils

    total: dict[str, torch.Tensor] = {}
    for path in paths:
        state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
        model = state["model"]
        if total and set(model) != set(total):
            raise EvaluationError(f"{path}: its parameters differ from {paths[0]}'s; cannot average")
        for key, tensor in model.items():
            value = tensor.double() if tensor.is_floating_point() else tensor
            total[key] = total[key] + value if key in total and tensor.is_floating_point() else value.clone()
    state["model"] = {
        key: (value / len(paths)).to(state["model"][key].dtype) if value.is_floating_point() else value
        for key, value in total.items()
    }
    if isinstance(state.get("cfg"), DictConfig):
        # fairseq's loader turned it into an OmegaConf object; store plain containers, as fairseq's own saver
        # does, so the averaged file loads under safe (weights_only) loading like any other checkpoint.
        state["cfg"] = OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(output)
    return output


def resolve_checkpoint(run_dir: Path, checkpoint: str | CheckpointChoice, average_last: int | None,
                       dry_run: bool = False) -> tuple[Path, str]:  # fmt: skip
    """The checkpoint file to decode with (--checkpoint's one grammar, records/checkpoints.py), and how to describe it
    in the results (dry_run: averages nothing)."""
    checkpoints = run_dir / "checkpoints"
    if average_last:
        epochs = epoch_checkpoints(checkpoints)
        if len(epochs) < average_last:
            raise EvaluationError(
                f"--average-last {average_last}: {checkpoints} holds {len(epochs)} epoch checkpoint(s) "
                f"({', '.join(p.name for p in epochs) or 'none'}); train.keep_last_epochs limits how many are kept"
            )
        chosen = epochs[-average_last:]
        for path in chosen:
            _check_loadable(path)
        averaged = checkpoints / f"averaged_last{average_last}.pt"
        if not dry_run:
            average_checkpoints(chosen, averaged)
        return averaged, f"average of {', '.join(p.name for p in chosen)}"
    (choice,) = parse_checkpoints([checkpoint], run_dir_as=RUN_DIR_AS)  # a CheckpointChoice passes as it is
    recorded = read_status(run_dir)
    if choice.in_run and RunStatus.of(recorded) in (RunStatus.DIVERGED, RunStatus.FAILED) and not any(
            checkpoints.glob("checkpoint*.pt")):  # fmt: skip
        raise EvaluationError(f"{run_dir}: the run {recorded['status']} at update {recorded.get('update', 0)} "
                              f"({recorded.get('reason') or 'see its train.log'}) before its first checkpoint: it "
                              f"has no model to evaluate")  # fmt: skip
    (path,) = choice.files(run_dir)
    _check_loadable(path)
    return path, path.name if choice.in_run else str(path)


def evaluate(
    run_dir: Path,
    *,
    split: str = "test",
    checkpoint: str | CheckpointChoice = "best",
    average_last: int | None = None,
    beam: int | None = None,
    lenpen: float | None = None,
    batch_size: int = 64,
    out: Path | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Generate the split, score it, write <out>/<split>.json and .hyp (out: RUN_DIR/eval); returns the JSON's
    content (dry_run: the plan, and does nothing). Holds the run dir's lock meanwhile (one writer per run dir):
    RunLocked while the run trains or another evaluation of it runs."""
    from prelnx.launch.local import sigterm_interrupts
    from prelnx.records.lock import RunLock

    if dry_run:
        return plan_evaluation(run_dir, split, checkpoint, average_last, beam, lenpen, out, dry_run=True)
    read_run_config(run_dir)  # a folder that is not a run dir gets no lock file
    with RunLock(run_dir).acquire(), sigterm_interrupts():  # kill as Ctrl-C: fairseq-generate stopped, exit 130
        plan = plan_evaluation(run_dir, split, checkpoint, average_last, beam, lenpen, out)
        config, out = plan["config"], plan["out"]
        compound_split = config.eval.bleu.compound_split
        if compound_split is None:
            compound_split = config.data.dataset == "wmt14"  # see the schema: fairseq's WMT14 En-De convention
        hypotheses, references = generate(plan, batch_size)
        # text the synthetic task writes is already "detokenized" (space-separated pseudo-words)
        target = None if config.data.dataset == "synthetic" else languages(config)[1]
        scores = score(hypotheses, references, target_lang=target, compound_split=compound_split)
        result = {
            "split": split,
            "checkpoint": plan["checkpoint"],
            "beam": plan["beam"],
            "lenpen": plan["lenpen"],
            "remove_bpe": config.eval.bleu.remove_bpe,
            **asdict(scores),
            "compound_split": compound_split,
            "sentences": len(hypotheses),
        }
        write_text_atomic(out / f"{split}.hyp", "".join(h + "\n" for h in hypotheses))
        write_text_atomic(out / f"{split}.ref", "".join(r + "\n" for r in references))
        write_text_atomic(out / f"{split}.json", json.dumps(result, indent=2) + "\n")
        _log_to_tensorboard(run_dir, split, result)
        return result


def plan_evaluation(run_dir: Path, split: str, checkpoint: str | CheckpointChoice, average_last: int | None,
                    beam: int | None, lenpen: float | None, out: Path | None, dry_run: bool = False) -> dict[str, Any]:  # fmt: skip
    """What an evaluation will do: split, checkpoint, decoding (the run's eval.bleu unless overridden), where."""
    config = read_run_config(run_dir)
    if config.task != "translation":
        raise EvaluationError(f"{run_dir}: a {config.task} run; prelnx evaluate scores translations (BLEU). A masked-LM "
                              f"run's result is its validation loss (metrics.jsonl); fine-tune it with prelnx finetune")  # fmt: skip
    refuse_changed_layout_file(run_dir)  # its checkpoints' code: the file as the run trained it
    data = data_dir(config)
    source, target = languages(config)
    if not (data / f"{split}.{source}-{target}.{source}.idx").is_file():
        raise EvaluationError(f"split {split!r} is not prepared in {data} (no {split}.{source}-{target}.{source}.idx)")
    path, described = resolve_checkpoint(run_dir, checkpoint, average_last, dry_run=dry_run)
    bleu, test = config.eval.bleu, config.eval.test  # test decoding: eval.test, else validation's eval.bleu
    if bleu.remove_bpe is None and (data / "code").is_file():  # data prepare's BPE code: the text is subword units
        logging.getLogger(__name__).warning(f"{data} holds BPE'd text but the run's eval.bleu.remove_bpe is null: its "
                                            f"BLEU scores subword units (train with --set eval.bleu.remove_bpe='@@ ')")
    beam = beam or test.beam or bleu.beam
    lenpen = lenpen if lenpen is not None else test.lenpen if test.lenpen is not None else bleu.lenpen
    return {"split": split, "checkpoint": described, "path": path, "data": data, "config": config,
            "beam": beam, "lenpen": lenpen,
            "out": out or run_dir / "eval"}  # fmt: skip


def _log_to_tensorboard(run_dir: Path, split: str, result: dict[str, Any]) -> None:
    """The scores as scalars the run's HParams entry lists (test/bleu_tokenized, test/sacrebleu)."""
    from torch.utils.tensorboard import SummaryWriter

    from prelnx.records.metrics import read_metrics

    rows = read_metrics(run_dir)
    step = rows[-1]["epoch"] if rows else 0
    writer = SummaryWriter(str(run_dir))  # beside the run's own events: TensorBoard shows them as one run
    for key in ("bleu_tokenized", "sacrebleu"):
        if isinstance(result[key], float) and math.isfinite(result[key]):
            writer.add_scalar(f"{split}/{key}", result[key], global_step=step)
    writer.close()


def evaluate_quietly(run_dir: Path) -> None:
    """For sweeps: evaluate with the defaults; a failure is written to eval/test.error, not raised."""
    from prelnx.records.lock import RunLocked

    done, best = run_dir / "eval" / "test.json", run_dir / "checkpoints" / "checkpoint_best.pt"
    if done.is_file() and best.is_file() and done.stat().st_mtime >= best.stat().st_mtime:
        return
    try:
        evaluate(run_dir)
    except RunLocked:
        return  # another process trains or evaluates it
    except Exception as error:  # noqa: BLE001 - one run's evaluation never stops a sweep
        write_text_atomic(run_dir / "eval" / "test.error", f"{type(error).__name__}: {error}\n")
