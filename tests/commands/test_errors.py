"""The one error handler (prelnx/commands/options.py): a refusal is one line and its exit code, anything else is a bug
that says so (exit 70), never bad input (exit 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import prelnx
from prelnx.cli import app
from prelnx.exits import Exit

runner = CliRunner()


def test_an_unexpected_error_inside_a_command_is_reported_as_a_bug_with_its_location(monkeypatch, tmp_path):
    """A plain ValueError deep inside a command (what several commands once turned into exit 2, bad input)."""
    import prelnx.reproduce.plan as plan

    def broken_plan(*args, **kwargs):
        return {}["no such stage"] if kwargs.get("jobs") == 1 else int("not a number")

    monkeypatch.setattr(plan, "plan", broken_plan)
    result = runner.invoke(app, ["reproduce", "--scale", "demo", "--dry-run", "--out", str(tmp_path / "r")])
    assert result.exit_code == Exit.BUG == 70, result.output
    assert "this is a bug in prelnx (ValueError: invalid literal for int()" in result.output
    assert "test_errors.py" in result.output and "in broken_plan" in result.output  # the traceback has every frame
    # the error line says where in prelnx (the deepest frame in the package: the command that called the broken
    # function), never a frame of the caller's own code, even in a checkout whose folder is itself named prelnx
    where = re.search(r"\) at (.+):\d+ in (\w+); please report", result.output)
    assert where and Path(prelnx.__file__).parent in Path(os.path.abspath(where[1])).parents, result.output
    assert "Traceback (most recent call last)" in result.output
    assert not (tmp_path / "r").exists()


def test_a_refusal_stays_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("optimizer: {lr: -1}\n")
    result = runner.invoke(app, ["reproduce", "--scale", "demo", "--seeds", "0", "--dry-run"])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        "error: --seeds: need at least 1 seed, got 0"], result.output
    # a closed choice is its Enum's: click names the option and every valid value, before the command runs
    result = runner.invoke(app, ["reproduce", "--scale", "huge", "--dry-run"])
    assert result.exit_code == 2 and "'--scale'" in result.output and "'demo', 'cpu', 'paper'" in result.output
    result = runner.invoke(app, ["sweep", "--config", str(bad), "--grid", "train.seed=1,2", "--dry-run"])
    assert result.exit_code == 2 and "bug" not in result.output and "Traceback" not in result.output, result.output


def test_a_full_disk_or_a_refused_path_is_not_a_bug(tmp_path):
    """An OSError (a path under a file) is the machine's state: one line, exit 1."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = runner.invoke(app, ["theory", "--hidden-size", "8", "--layers", "2", "--seeds", "1", "--tokens", "2",
                                 "--scales", "1", "--out", str(blocker / "out")])  # fmt: skip
    assert result.exit_code == 1 and "bug" not in result.output, result.output
    assert str(blocker) in result.output and "Traceback" not in result.output


def test_an_interrupt_exits_130_and_says_how_to_resume(monkeypatch, tmp_path):
    import prelnx.reproduce.plan as plan

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plan, "plan", interrupted)
    result = runner.invoke(app, ["reproduce", "--scale", "demo", "--dry-run", "--out", str(tmp_path / "r")])
    assert result.exit_code == 130 and "run the same command again" in result.output, result.output


def test_the_installed_entry_point_has_the_same_handler(tmp_path):
    """`prelnx` as a user runs it (cli.main builds only the command it runs): the same line and code."""
    done = subprocess.run([sys.executable, "-m", "prelnx.cli", "reproduce", "--scale", "demo", "--seeds", "0",
                           "--dry-run"], capture_output=True, text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.returncode == 2 and done.stderr.strip() == "error: --seeds: need at least 1 seed, got 0", done.stderr


def test_a_reader_that_leaves_early_ends_the_command_silently(tmp_path):
    """`prelnx configs show NAME | head -1`: the pipe's reader is gone before the answer is written; no message, and
    the exit code of its own (141, 128 + SIGPIPE, as a Unix tool's), never 1's "failed"."""
    for argv in (["configs", "show", "demo/preln_nowarmup"], ["configs", "list"]):
        child = subprocess.Popen([sys.executable, "-m", "prelnx.cli", *argv], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=tmp_path)  # fmt: skip
        child.stdout.close()  # no reader left: the command's first write meets a broken pipe
        stderr = child.stderr.read()
        assert child.wait(timeout=120) == Exit.PIPE_CLOSED == 141 and stderr == "", (argv, stderr)


def test_sigterm_interrupts_a_command_as_ctrl_c_does(tmp_path):
    """`kill` (SIGTERM: a scheduler's stop) is Ctrl-C to every command: exit 130, its clean-up done. Here data prepare
    waits inside its staging folder, hashing a source that is a named pipe nobody writes, until the signal."""
    import time

    source = tmp_path / "multi30k"
    source.mkdir()
    os.mkfifo(source / "train.de.gz")
    child = subprocess.Popen([sys.executable, "-m", "prelnx.cli", "data", "prepare", "multi30k", "--source", str(source),
                              "--out", str(tmp_path / "bin"), "--jobs", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tmp_path)  # fmt: skip
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".bin.staging-*")) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.terminate()
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["multi30k"]  # no staging folder left behind


def test_an_old_option_spelling_names_the_new_one(tmp_path):
    for argv, line in ((["theory", "--d", "8"], "error: theory --d: renamed --hidden-size (same meaning); use that name"),
                       (["data", "prepare", "iwslt14", "--workers=2"], "error: data --workers: renamed --jobs")):
        done = subprocess.run([sys.executable, "-m", "prelnx.cli", *argv], capture_output=True, text=True, cwd=tmp_path,
                              timeout=120)  # fmt: skip
        assert done.returncode == 2 and done.stderr.startswith(line), done.stderr
    assert not list(tmp_path.iterdir())


def test_the_folders_refusals_are_refusals():
    """Every folder raises a Refusal (data/ and the layout table too, through the bottom layer's exits.py), so the
    handler and rank 0 of a Slurm job render it alike, with its exit code; a plain ValueError is a bug."""
    import importlib

    from prelnx.exits import Refusal
    from prelnx.launch.errors import error_exit

    targets = ("prelnx.plan.data:DataNotReady", "prelnx.plan.parallel:BatchError",
               "prelnx.records.checkpoints:CheckpointRefused", "prelnx.records.checkpoints:CheckpointDamaged",
               "prelnx.launch.errors:RunConflict", "prelnx.launch.errors:SlurmUnavailable",
               "prelnx.evaluate.evaluate:EvaluationError", "prelnx.data.textio:DataError",
               "prelnx.data.check:DataDamaged", "prelnx.layouts:LayoutFileError",
               "prelnx.finetune.plan:FinetunePlanError", "prelnx.analysis.grads.study:GradsError",
               "prelnx.analysis.theory:TheoryError", "prelnx.report.report:ReportError")  # fmt: skip
    for target in targets:
        module, name = target.split(":")
        kind = getattr(importlib.import_module(module), name)
        assert isinstance(kind, type) and issubclass(kind, Refusal), target
        assert error_exit(kind("why")) == ("why", 2), target
    assert error_exit(ValueError("a bug")) is None


def test_a_gpu_asked_for_where_torch_sees_none_is_a_refusal(monkeypatch):
    import torch

    from prelnx.exits import Refusal
    from prelnx.config.load import load_config
    from prelnx.plan.launch import use_cuda

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config, _ = load_config(Path(__file__).parents[2] / "configs/demo/preln_nowarmup.yaml", ["train.device=cuda"])
    try:
        use_cuda(config)
    except Refusal as error:
        assert "train.device: cuda" in str(error)
    else:
        raise AssertionError("no refusal")


def test_a_trainings_warning_goes_to_stderr_and_the_rest_to_stdout(capsys):
    """A warning is a typed Note (warning=True), said `warning: ...` on stderr by the console; other notes on stdout."""
    from prelnx import console
    from prelnx.launch.events import Note, render
    from prelnx.launch.local import log_event

    console.configure()
    log_event(Note("checkpoint_last.pt is damaged", warning=True))
    log_event(Note("runs/x: already finished at update 6"))
    out, err = capsys.readouterr()
    assert err == "warning: checkpoint_last.pt is damaged\n" and out == "runs/x: already finished at update 6\n"
    assert render(Note("x")) == render(Note("x", warning=True)) == "x"  # the console says which is a warning


@pytest.mark.slow  # the session's tiny training
def test_sigterm_interrupts_an_evaluation_as_ctrl_c_does(finished_tiny_run, tmp_path):
    """evaluate holds the run dir's lock and a fairseq child: `kill` stops it with exit 130, as Ctrl-C does. The last
    epoch checkpoint here is a named pipe nobody writes: the evaluation waits in it, lock held, until the signal."""
    import shutil
    import time

    run = tmp_path / "run"
    shutil.copytree(finished_tiny_run, run)
    (run / ".lock").unlink(missing_ok=True)
    os.mkfifo(run / "checkpoints" / "checkpoint9.pt")
    child = subprocess.Popen([sys.executable, "-m", "prelnx.cli", "evaluate", str(run), "--average-last", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    wchan = Path(f"/proc/{child.pid}/wchan")  # Linux's fifo_open waits in wait_for_partner: lock held, in the pipe
    while "partner" not in wchan.read_text() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # not a fixed sleep: under load, one second after the lock it could still import torch
    assert (run / ".lock").exists() and child.poll() is None, child.stderr.read()
    child.terminate()
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr


def _terminated(argv: list[str], cwd: Path, ready: str) -> tuple[subprocess.Popen, str, list[int]]:
    """`prelnx ARGV` in a real process, sent SIGTERM once it said a line starting with `ready` (it is then at work,
    where the signal is to land): the process, its stderr, and the pids of its children at that moment."""
    child = subprocess.Popen([sys.executable, "-m", "prelnx.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=cwd)  # fmt: skip
    while not (line := child.stdout.readline()).startswith(ready) and line:
        pass
    kids = [int(pid) for pid in Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()] if line else []
    child.terminate()
    _, stderr = child.communicate(timeout=120)
    return child, stderr, kids


@pytest.mark.slow  # generates the synthetic task first
def test_sigterm_interrupts_train_before_fairseq_starts(tmp_path):
    """Here the run dir's train.log is a named pipe nobody reads: train waits there, before its child starts."""
    from tests.conftest import TINY

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "train.log")
    child, stderr, _ = _terminated(["train", "--config", "tiny.yaml", "--run-dir", "run"], tmp_path, "starting")
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr


def test_sigterm_interrupts_theory_as_ctrl_c_does(tmp_path):
    child, stderr, _ = _terminated(["theory", "--layers", "5000", "--hidden-size", "256"], tmp_path, "theory:")
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr


@pytest.mark.slow  # the plan probes this machine's speed first (~20 s)
def test_sigterm_interrupts_a_reproduction_in_its_theory_stage(tmp_path):
    child, stderr, _ = _terminated(["reproduce", "--scale", "demo", "--out", "r", "--jobs", "1"], tmp_path, "theory:")
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr


@pytest.mark.slow  # a pool of workers measuring fairseq models
def test_sigterm_interrupts_grads_and_its_workers_end_quietly(tmp_path):
    """The pool's forked workers do not inherit the parent's SIGTERM-as-Ctrl-C: the pool's terminate() ends them, and
    none is left measuring on its own."""
    from tests.conftest import TINY

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    argv = ["grads", "--config", "tiny.yaml", "--out", "out", "--depths", "1,2,3", "--seeds", "30", "--jobs", "2",
            "--threads", "1"]  # fmt: skip
    child, stderr, workers = _terminated(argv, tmp_path, "[1/")
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr
    assert "Traceback" not in stderr and len(workers) == 2, stderr
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]


@pytest.mark.slow  # generates the pair data, imports fairseq
def test_sigterm_interrupts_finetune_before_a_training_as_ctrl_c_does(tmp_path):
    """Between trainings (here: the fine-tuning's train.log is a named pipe nobody reads, so it waits before fairseq
    starts), `kill` is Ctrl-C too."""
    import torch

    from prelnx.config.load import load_config
    from prelnx.records.run_config import write_run_config
    from tests.bert.conftest import TINY_MLM

    (tmp_path / "mlm.yaml").write_text(yaml.safe_dump(TINY_MLM))
    (tmp_path / "pre" / "checkpoints").mkdir(parents=True)
    write_run_config(tmp_path / "pre", load_config(tmp_path / "mlm.yaml")[0])
    torch.save({"extra_state": {"train_iterator": {"epoch": 2, "iterations_in_epoch": 0}},
                "optimizer_history": [{"num_updates": 5}]}, tmp_path / "pre" / "checkpoints" / "checkpoint_best.pt")
    (tmp_path / "out" / "update-5" / "seed-1").mkdir(parents=True)
    os.mkfifo(tmp_path / "out" / "update-5" / "seed-1" / "train.log")
    argv = ["finetune", "--config", "bert_cpu/finetune_synthetic", "--pretrained", "pre", "--seeds", "1", "--out", "out"]
    child, stderr, _ = _terminated(argv, tmp_path, "starting")
    assert child.returncode == Exit.INTERRUPTED and "interrupted: run the same command again" in stderr, stderr
