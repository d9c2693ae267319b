"""diagnostics.jsonl's reconciliation with train.log and the checkpoint, on written files (no training)."""

from __future__ import annotations

import json

from prelnx import child_report
from prelnx.records.diagnostics import FILE, read_diagnostics, scalars
from prelnx.records.reconcile import read_log, reconcile_diagnostics


def row(update: int, attempt: int) -> dict:
    return {"num_updates": update, "epoch": 1, "lr": 0.001, "grad_norm": {"decoder.1.ffn": float(attempt)},
           "update_ratio": {"decoder.1.ffn": 0.01}, "attn_logit_max": {"encoder.0.self_attn": 2.0},
           "lambda_c": 100.0 if update % 4 == 0 else None}  # fmt: skip


def record(update: int, attempt: int) -> str:
    """The child's event of one update, as train.log holds it."""
    return child_report.line(child_report.Diagnosed(row(update, attempt)))


def test_rows_follow_the_checkpoint_and_the_later_attempt(tmp_path):
    log = tmp_path / "train.log"
    # attempt 1 measured 2..12 and was killed with its checkpoint at 6; attempt 2 redid 8 and 10
    log.write_text("".join(record(u, 1) for u in (2, 4, 6, 8, 10, 12)) + "prelnx: resuming\n"
                   + "".join(record(u, 2) for u in (8, 10)))  # fmt: skip
    (tmp_path / FILE).write_text(json.dumps(row(2, 1)) + "\n" + '{"num_updates": 4, "ep')
    rows = reconcile_diagnostics(tmp_path, read_log(log)[1], upto=10)
    assert [row["num_updates"] for row in rows] == [2, 4, 6, 8, 10]  # the cut line rebuilt from the log, 12 dropped
    assert [row["grad_norm"]["decoder.1.ffn"] for row in rows] == [1.0, 1.0, 1.0, 2.0, 2.0]
    assert read_diagnostics(tmp_path) == rows
    assert [row["num_updates"] for row in reconcile_diagnostics(tmp_path, read_log(log)[1], upto=6)] == [2, 4, 6]


def test_a_run_without_diagnostics_gets_no_file(tmp_path):
    (tmp_path / "train.log").write_text("2026-12-01 | INFO | train_inner | {\"num_updates\": 2}\n")
    assert reconcile_diagnostics(tmp_path, read_log(tmp_path / "train.log")[1], upto=10) == []
    assert not (tmp_path / FILE).exists()


def test_tensorboard_scalars_skip_what_was_not_measured():
    tags = dict(scalars(row(4, 1)))
    assert tags["diagnostics/grad_norm/decoder.1.ffn"] == 1.0 and tags["diagnostics/lambda_c"] == 100.0
    assert tags["diagnostics/lr_lambda_c"] == 0.1
    assert "diagnostics/lambda_c" not in dict(scalars(row(2, 1)))
