"""The torch floor at run time: on a torch older than 2.10, every checkpoint load is refused, naming the advisories.

The refusal is decided by safe_loading.py from torch's version when a load happens, so a faked `torch.__version__`
exercises the real decision; the loads themselves (prelnx's, fairseq's, the commands') are real.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from prelnx.records.checkpoints import CheckpointRefused, load_checkpoint, safe_loading

ADVISORIES = ("CVE-2025-32434", "CVE-2026-24747")
# The real CLI in a process whose torch says it is 2.5.1 (the last torch CVE-2025-32434 affects).
OLD_TORCH_CLI = ("import sys, torch; torch.__version__ = '2.5.1'; sys.argv = ['prelnx', *sys.argv[1:]]; "
                 "from prelnx.cli import main; main()")  # fmt: skip


@pytest.fixture
def plain_checkpoint(tmp_path) -> Path:
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {"w": torch.ones(2)}, "args": None}, path)
    return path


@pytest.mark.parametrize("old", ["2.5.1", "2.9.1+cu126", "2.4.0", "1.13.1", "2.10.0a0+git1234", "2.10.0rc1"])
def test_every_load_is_refused_on_an_older_torch_naming_the_advisories(monkeypatch, plain_checkpoint, old):
    safe_loading()  # torch.load in this process is the plugin's wrapper, as in fairseq's process
    monkeypatch.setattr(torch, "__version__", old)
    with pytest.raises(CheckpointRefused) as error:
        load_checkpoint(plain_checkpoint)  # prelnx's own loader
    message = str(error.value)
    assert message.startswith(f"{plain_checkpoint}: refused: torch {old} is older than 2.10")
    assert all(advisory in message for advisory in ADVISORIES) and "install torch >= 2.10" in message
    with pytest.raises(safe_loading().CheckpointRefused, match="CVE-2025-32434"):
        torch.load(plain_checkpoint, weights_only=False)  # any other caller of torch.load (fairseq's loader)


@pytest.mark.parametrize("recent", ["2.10.0", "2.10.1+cu128", "2.13.0+cpu", "2.14.0.dev20260101", "3.0.0"])
def test_a_recent_torch_loads(monkeypatch, plain_checkpoint, recent):
    safe_loading()
    monkeypatch.setattr(torch, "__version__", recent)
    assert torch.equal(load_checkpoint(plain_checkpoint)["model"]["w"], torch.ones(2))


def test_fairseqs_own_loader_is_refused_through_the_plugin(monkeypatch, plain_checkpoint):
    from prelnx.launch.inprocess import load_plugin

    load_plugin()
    from fairseq import checkpoint_utils

    monkeypatch.setattr(torch, "__version__", "2.5.1")
    with pytest.raises(Exception, match="CVE-2026-24747") as error:
        checkpoint_utils.load_checkpoint_to_cpu(str(plain_checkpoint))
    assert type(error.value).__name__ == "CheckpointRefused"


@pytest.mark.slow
def test_evaluate_and_resume_on_an_old_torch_say_one_line_and_exit_2(tiny_run):
    config_path, run_dir = tiny_run  # a finished run
    (run_dir / "status.json").write_text(json.dumps({"status": "interrupted", "update": 1}))  # so train resumes

    for what, args in {
        "evaluate": ["evaluate", str(run_dir), "--checkpoint", "last"],
        "resume": ["train", "--config", str(config_path), "--run-dir", str(run_dir)],
    }.items():
        done = subprocess.run([sys.executable, "-c", OLD_TORCH_CLI, *args], capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, (what, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, (what, done.stderr)
        assert done.stderr.startswith(f"error: {run_dir / 'checkpoints'}") and "refused: torch 2.5.1" in done.stderr
        assert all(advisory in done.stderr for advisory in ADVISORIES), (what, done.stderr)
    assert not (run_dir / "eval").exists()


@pytest.mark.parametrize(("content", "said"), [(b"junk\n", "(KeyError: 174812789)"), (b"", "(EOFError)")])
def test_a_few_bytes_that_are_no_checkpoint_say_what_failed_in_words(tmp_path, content, said):
    """torch's legacy unpickler fails on junk with a KeyError whose text is a bare number: the error's name says it."""
    from prelnx.records.checkpoints import CheckpointDamaged, load_checkpoint

    (junk := tmp_path / "junk.pt").write_bytes(content)
    with pytest.raises(CheckpointDamaged) as raised:
        load_checkpoint(junk)
    assert str(raised.value) == f"{junk}: damaged or not a checkpoint {said}"
