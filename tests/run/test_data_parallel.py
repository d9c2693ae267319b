"""Data parallelism through torchrun on CPU workers (gloo): the same optimisation as accumulation, and failures.

The proof of the distributed semantics: 2 workers x max_tokens 512 train exactly as 1 process with update_freq 2
(per-update losses, validation losses and the final weights).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prelnx import child_report
from prelnx.config.load import load_config
from prelnx.launch.local import train
from prelnx.records.checkpoints import checkpoint_info, load_checkpoint
from prelnx.records.diagnostics import read_diagnostics
from prelnx.records.metrics import read_metrics
from tests.helpers import FAR_EPOCHS, processes_mentioning, run_until_it_trains_past

pytestmark = pytest.mark.slow
NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}


def inner_losses(run_dir: Path) -> list[str]:
    """fairseq's per-update training losses as logged (log_interval 1)."""
    lines = [line for line in (run_dir / "train.log").read_text().splitlines() if "| train_inner |" in line]
    return [json.loads(line.split("| train_inner |", 1)[1])["loss"] for line in lines]


def reported(run_dir: Path) -> list[tuple[str, int | None]]:
    """(tag, update) of the records the child reported as events (prelnx/child_report.py)."""
    events = map(child_report.parse, (run_dir / "train.log").read_text().splitlines())
    return [(event.tag, event.step) for event in events if isinstance(event, child_report.Stats)]


def test_two_workers_train_exactly_as_one_process_accumulating_two_batches(tiny_config_file, tmp_path):
    common = {"max_epoch": 2, "log_interval": 1, "threads": 1, "max_tokens": 512,
              "diagnostics": {"every_updates": 1, "sharpness_every_updates": 2}}  # never change the training
    two, _ = load_config(tiny_config_file(model=NO_DROPOUT, train={**common, "processes": 2}))
    one, _ = load_config(tiny_config_file(model=NO_DROPOUT, train={**common, "update_freq": 2}))
    assert train(two, run_dir=tmp_path / "two").status == "finished"
    assert train(one, run_dir=tmp_path / "one").status == "finished"

    command = (tmp_path / "two" / "command.txt").read_text()
    assert "torchrun --standalone --nproc-per-node 2" in command and "--distributed-backend gloo" in command
    losses_two, losses_one = inner_losses(tmp_path / "two"), inner_losses(tmp_path / "one")
    assert len(losses_two) == len(losses_one) >= 4 and losses_two == losses_one
    # rank 0 alone reports the records (fairseq's other workers log at WARNING): each once, as the one process does
    assert reported(tmp_path / "two") == reported(tmp_path / "one") and len(reported(tmp_path / "one")) >= 6
    rows_two, rows_one = read_metrics(tmp_path / "two"), read_metrics(tmp_path / "one")
    assert [r["valid_loss"] for r in rows_two] == [r["valid_loss"] for r in rows_one]
    # diagnostics: rank 0 logs the gradients reduced over both workers, so one row per update, as the one process
    # measures them over its two accumulated batches (the attention logits are each worker's own batches: not compared)
    diag_two, diag_one = read_diagnostics(tmp_path / "two"), read_diagnostics(tmp_path / "one")
    assert [r["num_updates"] for r in diag_two] == [r["num_updates"] for r in diag_one] == list(range(1, len(losses_one) + 1))
    for two_row, one_row in zip(diag_two, diag_one):
        for key in ("grad_norm", "update_ratio"):
            assert two_row[key].keys() == one_row[key].keys()
            for group, value in one_row[key].items():
                assert (two_row[key][group] is None) == (value is None)
                if value is not None:
                    assert two_row[key][group] == pytest.approx(value, rel=1e-3, abs=1e-9), (key, group)
        if one_row["lambda_c"] is not None:
            assert two_row["lambda_c"] == pytest.approx(one_row["lambda_c"], rel=1e-3)
    a = load_checkpoint(tmp_path / "two" / "checkpoints" / "checkpoint_last.pt")["model"]
    b = load_checkpoint(tmp_path / "one" / "checkpoints" / "checkpoint_last.pt")["model"]
    assert max((a[key].float() - b[key].float()).abs().max().item() for key in a) < 1e-4


def rank_1_worker(run_dir: Path) -> int | None:
    """The pid of torchrun's worker of rank 1 of the run training in `run_dir` (None until it has started)."""
    for pid in processes_mentioning(str(run_dir / "checkpoints")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"RANK=1" in environ and b"LOCAL_RANK=1" in environ:
            return pid
    return None


def test_a_killed_worker_ends_the_group_failed_and_the_rerun_resumes(tiny_config_file, tmp_path):
    """One group of two workers (one torchrun) for three properties: the effective batch is kept by deriving
    update_freq (2048 tokens = 512 x 2 workers x update_freq 2, in the command and the recorded config); a worker
    killed by a signal is named with its rank and the signal, the group ends failed with no worker left behind; the
    re-run resumes and trains each epoch once."""
    run_dir = tmp_path / "run"
    config = tiny_config_file(train={"max_epoch": FAR_EPOCHS, "threads": 1, "processes": 2,
                                     "effective_batch_tokens": 2048})  # fmt: skip
    parent = subprocess.Popen([sys.executable, "-m", "prelnx.cli", "train", "--config", str(config),
                               "--run-dir", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while not read_metrics(run_dir):
        assert time.monotonic() < deadline and parent.poll() is None, "the first epoch never ended"
        time.sleep(0.2)
    command = (run_dir / "command.txt").read_text()
    assert command.startswith("# batch per update: 2048 tokens = max_tokens 512 x 2 worker(s) x update_freq 2")
    assert "--update-freq 2" in command and "torchrun --standalone --nproc-per-node 2" in command
    assert "update_freq: 2" in (run_dir / "config.yaml").read_text()
    workers = [pid for pid in processes_mentioning(str(run_dir / "checkpoints"))
               if "torch.distributed.run" not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")]
    assert len(workers) == 2, workers
    victim = rank_1_worker(run_dir)
    assert victim in workers, (victim, workers)
    os.kill(victim, signal.SIGKILL)
    output, _ = parent.communicate(timeout=120)
    assert parent.returncode == 1, output
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "failed" and "exited with code" in status["reason"], status
    assert status["failure"] == "crash" and "worker rank 1 was killed by signal 9 (SIGKILL)" in status["reason"]
    assert "worker rank 1 was killed by signal 9 (SIGKILL)" in output, output  # what the user is told
    assert not processes_mentioning(str(run_dir / "checkpoints"))  # no worker left behind

    failed_at = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch
    command = [sys.executable, "-m", "prelnx.cli", "train", "--config", str(config), "--run-dir", str(run_dir)]
    said = run_until_it_trains_past(command, run_dir, failed_at, tmp_path / "rerun.txt")
    assert "resuming" in said, said
    epochs = [row["epoch"] for row in read_metrics(run_dir)]
    assert epochs == list(range(1, len(epochs) + 1)) and epochs[-1] > failed_at  # each epoch once, trained on
