"""`prelnx evaluate`: a run's test (or valid) BLEU, tokenized as in the paper and detokenized with SacreBLEU."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.config.errors import Refusal
from prelnx.evaluate.average import CheckpointError, average_checkpoints, epoch_checkpoints
from prelnx.evaluate.bleu import score
from prelnx.evaluate.generate import generate
from prelnx.machine import usable_cores
from prelnx.plan.data import data_dir, languages
from prelnx.plan.launch import use_cuda
from prelnx.records.checkpoints import CheckpointChoice, parse_checkpoint
from prelnx.records.outcome import RunStatus
from prelnx.records.run_config import read_run_config
from prelnx.records.status import read_status


# Text the synthetic task writes is already "detokenized" (space-separated pseudo-words).
NO_DETOKENIZER = {"synthetic"}


RUN_DIR_AS = "prelnx evaluate RUN_DIR"  # how evaluate is given its run dir, for --checkpoint's refusals


class EvaluationError(Refusal):
    pass


def _check_loadable(path: Path) -> None:
    """Refuse a planted or damaged checkpoint here, with one message, before fairseq-generate loads it."""
    from prelnx.records.checkpoints import load_checkpoint

    try:
        load_checkpoint(path, mmap=True)
    except ValueError as error:  # CheckpointRefused, CheckpointDamaged
        raise EvaluationError(str(error)) from None


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
        if dry_run:
            return checkpoints / f"averaged_last{average_last}.pt", f"average of {', '.join(p.name for p in chosen)}"
        try:
            averaged = average_checkpoints(chosen, checkpoints / f"averaged_last{average_last}.pt")
        except CheckpointError as error:
            raise EvaluationError(str(error)) from None
        return averaged, f"average of {', '.join(p.name for p in chosen)}"
    choice = parse_checkpoint(checkpoint, run_dir_as=RUN_DIR_AS) if isinstance(checkpoint, str) else checkpoint
    recorded = read_status(run_dir) or {}
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
    content. dry_run: returns the plan (plan_evaluation) and does nothing.

    Holds the run dir's lock meanwhile (one writer per run dir): RunLocked while the run trains or another
    evaluation of it runs.
    """
    from prelnx.records.lock import RunLock

    if dry_run:
        return plan_evaluation(run_dir, split, checkpoint, average_last, beam, lenpen, out, dry_run=True)
    read_run_config(run_dir)  # a folder that is not a run dir gets no lock file
    with RunLock(run_dir).acquire():
        return _evaluate_locked(run_dir, split, checkpoint, average_last, beam, lenpen, batch_size, out)


def plan_evaluation(run_dir: Path, split: str, checkpoint: str | CheckpointChoice, average_last: int | None,
                    beam: int | None, lenpen: float | None, out: Path | None, dry_run: bool = False) -> dict[str, Any]:  # fmt: skip
    """What an evaluation will do: split, checkpoint, decoding (the run's eval.bleu unless overridden), where."""
    config = read_run_config(run_dir)
    if config.task != "translation":
        raise EvaluationError(f"{run_dir}: a {config.task} run; prelnx evaluate scores translations (BLEU). A masked-LM "
                              f"run's result is its validation loss (metrics.jsonl); fine-tune it with prelnx finetune")  # fmt: skip
    data = data_dir(config)
    source, target = languages(config)
    if not (data / f"{split}.{source}-{target}.{source}.idx").is_file():
        raise EvaluationError(f"split {split!r} is not prepared in {data} (no {split}.{source}-{target}.{source}.idx)")
    path, described = resolve_checkpoint(run_dir, checkpoint, average_last, dry_run=dry_run)
    bleu, test = config.eval.bleu, config.eval.test  # test decoding: eval.test, else validation's eval.bleu
    beam = beam or test.beam or bleu.beam
    lenpen = lenpen if lenpen is not None else test.lenpen if test.lenpen is not None else bleu.lenpen
    return {"split": split, "checkpoint": described, "path": path, "data": data, "config": config,
            "beam": beam, "lenpen": lenpen,
            "out": out or run_dir / "eval"}  # fmt: skip


def _evaluate_locked(run_dir: Path, split: str, checkpoint: str | CheckpointChoice, average_last: int | None,
                     beam: int | None, lenpen: float | None, batch_size: int,
                     out: Path | None) -> dict[str, Any]:  # fmt: skip
    plan = plan_evaluation(run_dir, split, checkpoint, average_last, beam, lenpen, out)
    config, data, path, described = plan["config"], plan["data"], plan["path"], plan["checkpoint"]
    source, target = languages(config)
    beam, lenpen, out = plan["beam"], plan["lenpen"], plan["out"]
    compound_split = config.eval.bleu.compound_split
    if compound_split is None:
        compound_split = config.data.dataset == "wmt14"  # see the schema: fairseq's WMT14 En-De convention
    generation = generate(
        data, path, split=split, source_lang=source, target_lang=target, beam=beam, lenpen=lenpen,
        batch_size=batch_size, remove_bpe=config.eval.bleu.remove_bpe, cuda=use_cuda(config),
        threads=config.train.threads or usable_cores(),
        max_len_a=config.eval.bleu.max_len_a, max_len_b=config.eval.bleu.max_len_b,
    )  # fmt: skip
    scores = score(generation.hypotheses, generation.references,
                   target_lang=None if config.data.dataset in NO_DETOKENIZER else target,
                   compound_split=compound_split)  # fmt: skip
    result = {
        "split": split,
        "checkpoint": described,
        "beam": beam,
        "lenpen": lenpen,
        **asdict(scores),
        "compound_split": compound_split,
        "sentences": len(generation.hypotheses),
    }
    write_text_atomic(out / f"{split}.hyp", "".join(h + "\n" for h in generation.hypotheses))
    write_text_atomic(out / f"{split}.ref", "".join(r + "\n" for r in generation.references))
    write_text_atomic(out / f"{split}.json", json.dumps(result, indent=2) + "\n")
    _log_to_tensorboard(run_dir, split, result)
    return result


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
    """For sweeps: evaluate with the defaults; a failure is written to eval/test.error, not raised.

    Skipped when eval/test.json is newer than the best checkpoint, or while another process holds the run.
    """
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
