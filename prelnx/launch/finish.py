"""The end of an attempt: reconcile the run dir with its last checkpoint and record the outcome (status.json,
metrics.jsonl, TensorBoard with the results). On a full disk the outcome is still recorded `failed` if it fits."""

from __future__ import annotations

import dataclasses
from typing import Any

from prelnx.atomic import io_reason
from prelnx.launch.events import Listener, Note
from prelnx.launch.watch import Watch
from prelnx.plan.launch import RunPlan
from prelnx.records import grain
from prelnx.records.checkpoints import CheckpointInfo, checkpoint_info, remove_partial_writes
from prelnx.records.diagnostics import reconcile_diagnostics
from prelnx.records.grain import Grain
from prelnx.records.outcome import Failure, Outcome, RunStatus, io_failure
from prelnx.records.reconcile import LOG_NAME, reconcile_run
from prelnx.records.results import best_and_final
from prelnx.records.rows import Row
from prelnx.records.status import write_status
from prelnx.records.tensorboard import rebuild


def status_counts(run_grain: Grain, rows: list[Row], checkpoint: CheckpointInfo | None) -> dict[str, int]:
    """status.json's `epochs` (rows, at the epoch grain) and, at the update grain, `validations` (rows)."""
    if run_grain is Grain.UPDATE:
        return {"epochs": checkpoint.epoch if checkpoint else 0, "validations": len(rows)}
    return {"epochs": len(rows)}


def finish(plan: RunPlan, watch: Watch, outcome: Outcome, hparams: dict[str, Any], listener: Listener) -> Outcome:
    """Reconcile with the last checkpoint and write the final status; returns the outcome as recorded."""
    run_dir = plan.run_dir
    remove_partial_writes(plan.checkpoints)  # the child is gone: a *.pt.tmp is a save it never finished
    last = plan.checkpoints / "checkpoint_last.pt"
    unreadable = ""
    try:
        info = checkpoint_info(last) if last.is_file() else None
    except (ValueError, OSError) as error:  # damaged, refused or unreadable: the next start deals with it
        info, unreadable = None, str(error)
        listener(Note(f"warning: {error}"))
    extra: dict[str, Any] = {}
    rows, diagnostics = watch.rows, watch.diagnostics
    try:
        if unreadable:  # nothing to reconcile against: keep what was seen, and do not call the run finished
            if outcome.status is RunStatus.FINISHED:
                outcome = Outcome(RunStatus.INTERRUPTED, outcome.update, Failure.UNREADABLE_CHECKPOINT, detail=unreadable)
        else:
            reconciled = reconcile_run(run_dir, watch.grain, grain.stride(plan.config), watch.rows, info)
            rows = reconciled.rows
            if reconciled.lost:
                extra["lost_validations" if watch.grain is Grain.UPDATE else "lost_epochs"] = reconciled.lost
            # a diverged run is never resumed: its diagnostics up to the divergence stay (records/diagnostics.py)
            upto = info.update if info else 0
            if outcome.status is RunStatus.DIVERGED:  # this attempt's rows, which may run a little past its last progress line
                upto = max([upto, outcome.update] + [row["num_updates"] for row in watch.diagnostics or []])
            kept = reconcile_diagnostics(run_dir, run_dir / LOG_NAME, upto)
            diagnostics = kept if diagnostics is not None or kept else None
        rebuild(run_dir, rows, hparams, best_and_final(rows), watch.grain, diagnostics)
    except OSError as error:
        rows = watch.rows
        if not (outcome.status is RunStatus.FAILED and outcome.failure is Failure.DISK_FULL):  # keep fairseq's own path
            kind, detail = io_failure(error, run_dir)
            outcome = Outcome(RunStatus.FAILED, outcome.update, kind, detail=detail)
    if info is not None:
        extra["checkpoint"] = {"epoch": info.epoch, "update": info.update}
        update = info.update if outcome.status is RunStatus.FINISHED else max(outcome.update, info.update)
        outcome = dataclasses.replace(outcome, update=update)
    try:
        write_status(run_dir, outcome.status, update=outcome.update, **outcome.record(),
                     **status_counts(watch.grain, rows, info), **best_and_final(rows), **extra)  # fmt: skip
    except OSError as error:
        listener(Note(f"warning: status.json could not be written ({io_reason(error, run_dir)})"))
    return outcome
