"""One exit-code table (prelnx/exits.py) across every command and every outcome: finished, diverged, failed,
running, bad input and a bug. Runs are real run dirs (a copy of the session's tiny training, or hand-made records
through tests/report/runs.py); a bug is a plain RuntimeError planted in the function a command calls. Where an outcome
cannot happen to a command (theory has no run to diverge), the table says why instead of an exit code.

The slow tier pins the same codes on fresh trainings: diverged 3 (tests/run/test_train_e2e.py), failed 1
(tests/run/test_faults.py), a running run 5 and an interrupted one 130 (tests/commands/test_status.py); reproduce's
planned dry run exits 0 in tests/reproduce/test_reproduce.py (test_paper_dry_run_plans_with_iwslt14...).
"""

from __future__ import annotations

import json
import os
import time

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.exits import STATUS_EXIT, Exit, Refusal, exit_for
from prelnx.records.outcome import RunStatus
from tests.report.runs import Sweep

runner = CliRunner()


def test_every_status_has_one_code_and_no_code_two_meanings():
    assert set(STATUS_EXIT) == {status.value for status in RunStatus}
    assert len({code.value for code in Exit}) == len(Exit)  # an IntEnum alias would share a value silently
    assert Exit.RUNNING != Exit.DIVERGED and Exit.BUG not in (Exit.FAILED, Exit.BAD_INPUT)


@pytest.mark.parametrize(("statuses", "code"), [
    ([], Exit.FINISHED),
    (["finished", "finished"], Exit.FINISHED),
    (["finished", "diverged"], Exit.DIVERGED),  # a diverged run is a result: it exits 3 from a sweep too
    (["diverged", "pending"], Exit.INTERRUPTED),  # something is left to train
    (["interrupted", "failed", "diverged"], Exit.FAILED),
    (["failed", "running elsewhere"], Exit.BUSY),
    (["finished", "refused", "pending"], Exit.BAD_INPUT),  # a sweep's run left alone: its run dir holds another run
    (["running", "failed", "running elsewhere"], Exit.RUNNING),  # the answer is not in yet
])  # fmt: skip
def test_a_set_of_runs_exits_with_the_one_most_in_need(statuses, code):
    assert exit_for(statuses) is code
    assert exit_for(RunStatus(status) for status in statuses) is code  # the enum and its values alike


def test_a_refusal_is_no_value_error():
    """`except ValueError` around a refusal would read a bug as bad input; every folder raises Refusal itself."""
    from prelnx.data.check import DataDamaged
    from prelnx.data.textio import DataError
    from prelnx.evaluate.evaluate import GenerationError

    assert not issubclass(Refusal, ValueError)
    assert issubclass(DataError, Refusal) and issubclass(DataDamaged, Refusal) and issubclass(GenerationError, Refusal)
    assert GenerationError("x").exit_code is Exit.FAILED and DataError("x").exit_code is Exit.BAD_INPUT


# --- bad input (2) and a bug (70): every command ----------------------------------------------------------------
BAD_INPUT = {
    "train": ["train", "--config", "no_such_config"],
    "finetune": ["finetune", "--config", "no_such_config", "--pretrained", "."],
    "status": ["status", "."],  # a folder that is no run, sweep or reproduction
    "evaluate": ["evaluate", ".", "--checkpoint", "checkpoint_nope"],
    "reproduce": ["reproduce", "--scale", "huge"],
    "grads": ["grads", "--config", "grads/figure3_synthetic", "--out", "g", "--depths", "six"],
    "theory": ["theory", "--scales", "one"],
    "report": ["report", "."],  # no sweep.json
    "sweep": ["sweep", "--config", "no_such_spec"],
    "plot": ["plot", "."],
    "configs": ["configs", "show", "no_such_config"],
    "data": ["data", "prepare", "no_such_dataset"],
    "env": ["env", "--no-such-option"],
    "layouts": ["layouts", "show", "no_such_layout"],
}
# where each command hands its work to a plain function: a RuntimeError there is a bug in prelnx
BUG_AT = {
    "train": ("prelnx.commands.train.load_config", ["train", "--config", "demo/preln_nowarmup"]),
    "finetune": ("prelnx.config.load.load_config", ["finetune", "--config", "x", "--pretrained", "."]),
    "status": ("prelnx.sweep.status.is_run_dir", ["status", "."]),
    "evaluate": ("prelnx.commands.evaluate.evaluate", ["evaluate", "."]),
    "reproduce": ("prelnx.reproduce.run.reproduce", ["reproduce", "--scale", "demo"]),
    "grads": ("prelnx.commands.grads.load_config", ["grads", "--config", "x", "--out", "g"]),
    "theory": ("prelnx.analysis.theory.run_theory", ["theory"]),
    "report": ("prelnx.report.report.report_path", ["report", "."]),
    "env": ("prelnx.launch.environment.environment", ["env"]),
    "layouts": ("prelnx.commands.layouts.layout_rows", ["layouts", "list"]),
}


@pytest.mark.parametrize("command", sorted(BAD_INPUT))
def test_bad_input_exits_2_in_one_line(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, BAD_INPUT[command])
    assert result.exit_code == Exit.BAD_INPUT, result.output
    assert "Traceback" not in result.output and "bug" not in result.output, result.output


@pytest.mark.parametrize("command", sorted(BUG_AT))
def test_a_bug_exits_70_and_says_so(command, tmp_path, monkeypatch):
    target, argv = BUG_AT[command]

    def planted(*args, **kwargs):
        raise RuntimeError("planted")

    monkeypatch.setattr(target, planted)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, argv)
    assert result.exit_code == Exit.BUG, result.output
    assert "this is a bug in prelnx (RuntimeError: planted)" in result.output, result.output


# --- a run's outcomes: train, status ------------------------------------------------------------------------------
# (The tests on a copy of the session's tiny training share one pytest-xdist worker: tests/conftest.py.)


def _as(run_dir, status: str) -> None:
    record = json.loads((run_dir / "status.json").read_text())
    (run_dir / "status.json").write_text(json.dumps({**record, "status": status, "diverged_at": record["update"]}))


@pytest.mark.parametrize(("recorded", "code"), [("finished", Exit.FINISHED), ("diverged", Exit.DIVERGED)])
def test_train_on_a_run_that_already_ended_exits_with_its_outcome(tiny_run, recorded, code):
    """The real command on a real run dir: nothing left to train, the exit code is the run's outcome's."""
    config, run_dir = tiny_run
    _as(run_dir, recorded)
    result = runner.invoke(app, ["train", "--config", str(config), "--run-dir", str(run_dir)])
    assert result.exit_code == code, result.output
    assert f"already {recorded}" in result.output
    status = runner.invoke(app, ["status", str(run_dir)])
    assert status.exit_code == code, status.output


def test_train_on_a_run_another_process_trains_exits_busy(tiny_run):
    from prelnx.records.lock import RunLock

    config, run_dir = tiny_run
    _as(run_dir, "running")
    lock = RunLock(run_dir)
    lock.acquire()
    try:
        result = runner.invoke(app, ["train", "--config", str(config), "--run-dir", str(run_dir)])
        status = runner.invoke(app, ["status", str(run_dir)])  # its owner (this process) is alive: running
    finally:
        lock.release()
    assert result.exit_code == Exit.BUSY, result.output
    assert status.exit_code == Exit.RUNNING, status.output


@pytest.mark.parametrize(("statuses", "code"), [
    (["finished"], Exit.FINISHED), (["finished", "diverged"], Exit.DIVERGED), (["diverged", "failed"], Exit.FAILED),
    (["finished", "interrupted"], Exit.INTERRUPTED), (["failed", "running"], Exit.RUNNING),
])  # fmt: skip
def test_status_of_a_sweep_exits_with_its_runs_outcome(tmp_path, statuses, code):
    sweep = Sweep(tmp_path / "sweep")
    names = [sweep.run("pre", 0, [5.0, 4.0], seed=seed, status=status) for seed, status in enumerate(statuses, 1)]
    for name, status in zip(names, statuses):
        if status == "running":  # a run on another machine: running while its train.log moves
            (sweep.folder / name / "train.log").write_text("")
            os.utime(sweep.folder / name / "train.log", (time.time(), time.time()))
    sweep.save()
    table = runner.invoke(app, ["status", str(sweep.folder)])
    as_json = runner.invoke(app, ["status", str(sweep.folder), "--json"])
    assert table.exit_code == as_json.exit_code == code, table.output
    record = json.loads(as_json.stdout)
    assert record["exit_code"] == code and sorted(run["status"] for run in record["runs"]) == sorted(statuses)


def test_usage_documents_every_code():
    from tests.conftest import REPO

    usage = (REPO / "docs" / "usage.md").read_text()
    section = usage.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in Exit:
        assert f"| {code.value} | `{code.name}`" in section, f"docs/usage.md, Exit codes: no row for {code!r}"


def test_usage_tables_columns_are_the_codes_each_commands_help_lists():
    """docs/usage.md's exit-code table and each command's `Exit codes:` line (exits.documented) say the same codes."""
    import re

    import typer.main

    from tests.conftest import REPO

    section = (REPO / "docs" / "usage.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("|")]
    header, body = rows[0], rows[2:]
    commands = typer.main.get_command(app).commands
    listing = {name for name, command in commands.items() if "Exit codes:" in (command.help or "")}
    assert listing <= set(header), f"docs/usage.md, Exit codes: no column for {sorted(listing - set(header))}"
    for column, name in enumerate(header):
        if name not in commands:
            continue  # the column of several commands (grads, theory, report, ...): no `Exit codes:` line of one
        listed = re.findall(r"(\d+) [a-z]", commands[name].help.split("Exit codes:", 1)[1])
        every = (str(Exit.BUG), str(Exit.PIPE_CLOSED))  # every command's, listed by none
        marked = [row[0] for row in body if row[column] and row[0] not in every]
        assert sorted(map(int, listed)) == sorted(map(int, marked)), (name, listed, marked)


@pytest.mark.parametrize(("argv", "codes"), [
    (["train"], "0 finished, 1 failed (re-running resumes), 2 bad input, 3 diverged"),
    (["status"], "5 still running, 4 the run dir is in use by another process, 1 failed"),
    (["data", "prepare"], "0 finished, 2 bad input, 130 interrupted (the same command resumes)."),
    (["evaluate"], "2 bad input, 4 the run dir is in use by another process, 130"),  # 4: evaluating a training run
    (["sweep"], "3 diverged, 5 still running, 130"),  # 5: --executor slurm ends while a run's other job trains it
])  # fmt: skip
def test_help_lists_exit_codes_in_the_tables_words(argv, codes):
    """A command's --help says its exit codes as prelnx/exits.py's Exit words them (`says`), not in words of its own."""
    result = runner.invoke(app, [*argv, "--help"])
    assert result.exit_code == 0 and codes in " ".join(result.output.split()), result.output
