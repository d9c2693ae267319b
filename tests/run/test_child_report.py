"""A fairseq child reports how it ended as typed events (prelnx/child_report.py), and the parent decides the run's end
state from them: a real child (through launch/fairseq_entry.py) that returns, raises each kind of error, or is
killed; the parent's Watch reads its output as it reads fairseq's. No product module matches fairseq's wording."""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from prelnx import child_report
from prelnx.child_report import Done, Kind, Raised
from prelnx.launch.events import Event
from prelnx.launch.watch import Watch
from prelnx.records.grain import Grain
from prelnx.records.outcome import Failure, RunStatus, Signal
from tests.helpers import logged

ROOT = Path(__file__).resolve().parents[2]

# A fairseq program stand-in: what it does is its first argument. Messages are deliberately not fairseq's: the
# parent must decide by type.
PROGRAM = """
import atexit, os, signal, sys
what = sys.argv[1]
if what == "done_then_abort":  # training returned, then the interpreter dies on its way out (a C++ abort)
    atexit.register(os.abort)
if what == "diverged":
    raise FloatingPointError("REWORDED")
if what == "diverged_then_raised":  # fairseq's NaN detector re-runs the step and may raise again (StopIteration)
    try:
        raise FloatingPointError("REWORDED")
    except FloatingPointError:
        next(iter(()))
if what == "disk_full":  # a real full device; torch.save raises a RuntimeError over the OSError, as in fairseq's save
    import torch
    with open("/dev/full", "wb") as handle:
        torch.save({"w": torch.zeros(100_000)}, handle)
if what == "out_of_memory":
    bytearray(1 << 62)
if what == "failed":
    {}["REWORDED"]
if what == "killed":  # its last line a progress record (the OOM killer strikes mid-epoch): no cause of its end
    print('| INFO | train_inner | {"epoch": 1, "update": 0.392, "loss": "7.107", "num_updates": "20"}', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
if what == "wording":  # fairseq's old words, then an error exit without an exception: nothing to decide from
    print("| INFO | fairseq_cli.train | done training in 1.0 seconds", flush=True)
    print("FloatingPointError: Minimum loss scale reached (0.0001).", flush=True)
    sys.exit(3)
"""


def run_child(tmp_path: Path, what: str) -> tuple[int, Path]:
    """Run the stand-in through the child's entry as prelnx runs fairseq (output to a log file); (exit code, log)."""
    (tmp_path / "stand_in.py").write_text(PROGRAM)
    log = tmp_path / f"{what}.log"
    paths = [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]
    with open(log, "wb") as handle:
        code = subprocess.run([sys.executable, "-u", "-m", "prelnx.launch.fairseq_entry", "stand_in", what],
                              stdout=handle, stderr=subprocess.STDOUT, timeout=120,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}).returncode  # fmt: skip
    return code, log


def events_of(log: Path) -> list[child_report.Event]:
    return [event for line in log.read_text().splitlines() if (event := child_report.parse(line)) is not None]


def parent_outcome(tmp_path: Path, what: str, *others: str):
    """What the parent records of the child: its Watch follows the log as it follows fairseq's. `others`: more
    children (torchrun's workers) whose output the same log holds after the first's."""
    code, log = run_child(tmp_path, what)
    for other in others:
        with open(log, "a") as shared:
            shared.write(run_child(tmp_path, other)[1].read_text())
    seen: list[Event] = []
    watch = Watch(tmp_path / "run", Grain.EPOCH, [], seen.append, None, {})
    (tmp_path / "run").mkdir(exist_ok=True)
    with subprocess.Popen(["true"]) as done:  # an exited process: follow reads the whole log, then returns
        done.wait()
        watch.follow(done, log, 0)
    return code, watch.outcome(code, None)


@pytest.mark.parametrize("event", [
    Done(),
    Raised("FloatingPointError", "gradients are Nan/Inf", Kind.DIVERGED),
    Raised("RuntimeError", "unexpected pos 704 vs 598", Kind.DISK_FULL, 28, "/runs/a/checkpoints/x.pt.tmp"),
    Raised("MemoryError", "", Kind.OUT_OF_MEMORY),
    Raised("KeyError", "'model'\nsecond line", Kind.FAILED),
    child_report.Stats("valid", {"epoch": 2, "valid_loss": 3.142, "valid_ppl": float("inf"), "note": "x"}, 40),
])  # fmt: skip
def test_events_round_trip_through_one_line(event):
    line = child_report.line(event)
    assert line.startswith(child_report.PREFIX) and line.count("\n") == 1
    assert child_report.parse(line) == event
    assert child_report.parse("[rank1]: " + line) == event  # a launcher's prefix before it
    assert child_report.parse(line[: len(line) // 2]) is None  # cut short by a kill


def test_other_lines_are_no_events():
    for text in ("| INFO | fairseq_cli.train | done training in 1.0 seconds", "FloatingPointError: x", "",
                 child_report.PREFIX + '{"event": "unknown"}', child_report.PREFIX + "[1, 2]",
                 child_report.PREFIX + '{"event": "raised", "type": "X"}',
                 child_report.PREFIX + '{"event": "stats", "tag": "valid", "stats": [1], "step": 3}',
                 '2026 | INFO | valid | {"epoch": 1, "valid_loss": "3.1", "valid_num_updates": "8"}'):  # fmt: skip
        assert child_report.parse(text) is None, text


def test_an_exception_is_classified_by_its_type_and_errno_never_by_its_message():
    assert child_report.raised(FloatingPointError("anything")).kind is Kind.DIVERGED
    assert child_report.raised(MemoryError()).kind is Kind.OUT_OF_MEMORY
    import torch  # its OutOfMemoryError is a RuntimeError: known by type where the child has torch

    assert child_report.raised(torch.OutOfMemoryError("REWORDED")).kind is Kind.OUT_OF_MEMORY
    assert child_report.raised(RuntimeError("No space left on device")).kind is Kind.FAILED  # words are no type
    assert child_report.raised(OSError(13, "Permission denied", "/x")).kind is Kind.FAILED
    try:
        try:
            raise OSError(28, "No space left on device", "/disk/run/checkpoints/checkpoint1.pt.tmp")
        except OSError:
            raise RuntimeError("file write failed")
    except RuntimeError as error:
        wrapped = child_report.raised(error)
    assert (wrapped.type, wrapped.kind, wrapped.errno, wrapped.path) == ("OSError", Kind.DISK_FULL, 28,
                                                                         "/disk/run/checkpoints/checkpoint1.pt.tmp")  # fmt: skip


def test_a_child_that_returns_reports_done_and_is_finished(tmp_path):
    code, outcome = parent_outcome(tmp_path, "done")
    assert code == 0 and events_of(tmp_path / "done.log") == [Done()]
    assert outcome.status is RunStatus.FINISHED and outcome.failure is None


def test_a_child_that_crashes_after_its_training_returned_is_finished_then_crashed(tmp_path):
    code, outcome = parent_outcome(tmp_path, "done_then_abort")
    assert code != 0 and events_of(tmp_path / "done_then_abort.log") == [Done()]
    assert outcome.status is RunStatus.FINISHED and outcome.failure is Failure.FINISHED_THEN_CRASHED


@pytest.mark.parametrize("what", ["diverged", "diverged_then_raised"])
def test_fairseqs_floating_point_error_is_a_divergence_whatever_it_says_or_raises_over_it(tmp_path, what):
    code, outcome = parent_outcome(tmp_path, what)
    assert code == 1 and events_of(tmp_path / f"{what}.log") == [Raised("FloatingPointError", "REWORDED", Kind.DIVERGED)]
    assert outcome.status is RunStatus.DIVERGED and outcome.divergence.signal is Signal.FAIRSEQ_NAN


@pytest.mark.parametrize("workers", [("failed", "diverged"), ("diverged", "failed")])
def test_one_workers_divergence_decides_over_the_errors_it_causes_in_the_others(tmp_path, workers):
    code, outcome = parent_outcome(tmp_path, *workers)
    assert [event.kind for event in events_of(tmp_path / f"{workers[0]}.log")] == [Kind(w) for w in workers]
    assert outcome.status is RunStatus.DIVERGED and outcome.divergence.signal is Signal.FAIRSEQ_NAN


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_real_full_device_under_torch_save_is_disk_full_with_the_run_dirs_path(tmp_path):
    code, outcome = parent_outcome(tmp_path, "disk_full")
    (event,) = events_of(tmp_path / "disk_full.log")
    assert code == 1 and event.kind is Kind.DISK_FULL and event.errno == 28, event
    assert outcome.status is RunStatus.FAILED and outcome.failure is Failure.DISK_FULL
    assert outcome.reason() == f"no space left on device: {tmp_path / 'run' / 'checkpoints'}"  # the OSError named no file


def test_any_other_error_is_a_crash_that_names_it(tmp_path):
    code, outcome = parent_outcome(tmp_path, "failed")
    (event,) = events_of(tmp_path / "failed.log")
    assert code == 1 and event.kind is Kind.FAILED
    assert outcome.status is RunStatus.FAILED and outcome.failure is Failure.CRASH
    assert outcome.reason() == "fairseq exited with code 1: KeyError: 'REWORDED'"


def test_a_real_memory_error_is_out_of_memory_with_what_to_change(tmp_path):
    code, outcome = parent_outcome(tmp_path, "out_of_memory")
    (event,) = events_of(tmp_path / "out_of_memory.log")
    assert code == 1 and event.kind is Kind.OUT_OF_MEMORY
    assert outcome.status is RunStatus.FAILED and outcome.failure is Failure.OUT_OF_MEMORY
    assert outcome.record()["failure"] == "out_of_memory"
    assert outcome.reason().startswith("out of memory (MemoryError): fewer tokens per batch (data.max_tokens)")


@pytest.mark.parametrize("what", ["killed", "wording"])
def test_a_child_that_reports_nothing_is_a_crash_even_with_fairseqs_old_words_in_its_log(tmp_path, what):
    code, outcome = parent_outcome(tmp_path, what)
    assert code == (-9 if what == "killed" else 3) and events_of(tmp_path / f"{what}.log") == []
    assert outcome.status is RunStatus.FAILED and outcome.failure is Failure.CRASH and outcome.divergence is None
    if what == "killed":  # the signal, as torchrun's workers are told (watch.torchrun_failure), not the last line
        assert outcome.reason() == "fairseq was killed by signal 9 (SIGKILL)", outcome.reason()


# fairseq's (and the OS's, torch's) wording that prelnx once matched in the child's log to decide a state: removed
# from launch/watch.py ("done training", the divergence messages, exception-name patterns, "[Errno 28]", "No space
# left on device", "file write failed") and launch/slurm_job.py (an exception-name regex over a trace).
MARKERS = ("done training", "minimum loss scale", "gradients are nan/inf", "[errno", "errno (?:", "file write failed",
           "error|exception", "floatingpointerror", "overflowerror", "memoryerror", "childfailederror")  # fmt: skip


def code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module's code (f-strings' parts too), not its docstrings or comments."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]  # fmt: skip


@functools.cache
def product_strings() -> tuple[tuple[str, int, str], ...]:
    """(file, line, text) of every string constant of the product's code, parsed once for the two checks below."""
    files = sorted((ROOT / "prelnx").rglob("*.py")) + sorted((ROOT / "prelnx_fairseq_plugin").rglob("*.py"))
    assert len(files) > 100
    return tuple((str(path.relative_to(ROOT)), line, text) for path in files for line, text in code_strings(path))


def test_no_product_module_matches_fairseqs_wording_for_a_state():
    found = [f"{path}:{line}: {text!r}" for path, line, text in product_strings()
             if any(marker in text.lower() for marker in MARKERS)]  # fmt: skip
    assert found == []


# How prelnx once rebuilt a record from fairseq's log line (records/rows.py's `| valid | {...}` regex): a string of
# product code holding a record's tag between the line's `|` separators, as text or as a regex (`\|\s*...valid`).
LOG_RECORD = re.compile(r"\|\s*(train_inner|train|valid)\s*\||\\\|\\s\*.*\b(train_inner|train|valid)\b")


def test_no_product_module_parses_fairseqs_log_line_for_a_record():
    assert LOG_RECORD.search(r"\|\s*(train_inner|train|valid)\s*\|\s*(\{.*\})\s*$")  # the regex it replaced
    assert LOG_RECORD.search("| valid |") and not LOG_RECORD.search(r"\|\s*prelnx_diagnostics\s*\|")
    found = [f"{path}:{line}: {text!r}" for path, line, text in product_strings() if LOG_RECORD.search(text)]
    assert found == []


def test_diagnostics_travel_as_an_event_not_as_a_log_line():
    """The plugin's diagnostics of an update reach the parent as a `diagnosed` event, read back as the same row."""
    row = {"num_updates": 4, "epoch": 1, "lr": 1e-3, "grad_norm": {"decoder.1.ffn": 0.5}, "lambda_c": None}
    event = child_report.parse("2026-12-01 | stray prefix " + child_report.line(child_report.Diagnosed(row)))
    assert event == child_report.Diagnosed(row)
    assert child_report.parse('prelnx-event {"event": "diagnosed"}') is None  # no row: no event



def test_the_parent_stores_each_diagnosed_row_and_skips_one_without_its_update(tmp_path):
    """launch/watch.py reads a `diagnosed` event as the restart does (records/reconcile.py): a row without its update
    is no row, and the good rows land in diagnostics.jsonl."""
    from prelnx.records.diagnostics import read_diagnostics

    rows = [{"num_updates": 2, "grad_norm": {"decoder.0.ffn": 0.5}}, {"epoch": 1}, {"num_updates": 4, "lr": 1e-3}]
    log = tmp_path / "train.log"
    log.write_text("".join(child_report.line(child_report.Diagnosed(row)) for row in rows))
    (tmp_path / "run").mkdir()
    watch = Watch(tmp_path / "run", Grain.EPOCH, [], lambda event: None, None, {})
    with subprocess.Popen(["true"]) as done:
        done.wait()
        watch.follow(done, log, 0)
    assert read_diagnostics(tmp_path / "run") == [rows[0], rows[2]] == watch.diagnostics

def test_a_slurm_jobs_rank_0_error_is_read_from_the_event_its_task_reported(tmp_path):
    """launch/slurm_job.py: rank 0's output is echoed without the event, and the error named is the event's, not a
    line picked from submitit's trace."""
    from types import SimpleNamespace

    from prelnx.launch import slurm_job

    log, event = tmp_path / "7_0_log.out", child_report.raised(KeyError("REWORDED"))
    log.write_text("starting tiny\n" + child_report.line(event) + "submitit ERROR (x) - Submitted job triggered an exception\n")
    output = slurm_job.Rank0Output(log)
    with logged() as shown:
        output.read()
    assert shown == ["starting tiny"] and output.raised == event

    def result():  # submitit's: the task's trace, then its own words
        raise RuntimeError("Traceback (most recent call last):\nKeyError: 'other'\nsubmitit: job failed")

    paths = SimpleNamespace(stdout=log, stderr=tmp_path / "7_0_log.err", result_pickle=tmp_path / "7_0_result.pkl")
    paths.result_pickle.write_bytes(b"")
    job = SimpleNamespace(job_id="7", task=lambda rank: SimpleNamespace(paths=paths, result=result))
    message, code = slurm_job.outcome(job, "COMPLETED", output.raised)
    assert code == 1 and "rank 0 failed (KeyError: 'REWORDED')" in message, message


def test_the_event_lines_are_a_stable_format_that_old_run_dirs_are_read_back_with():
    """train.log keeps these lines, and a resume or a report reads a run dir written by an older prelnx: each event's
    name and fields are a format, pinned here word for word (a renamed class must not rename its event)."""
    assert child_report.line(Done()) == 'prelnx-event {"event": "done"}\n'
    assert child_report.line(Raised("OSError", "No space left", Kind.DISK_FULL, 28, "/r/x.pt")) == (
        'prelnx-event {"event": "raised", "type": "OSError", "message": "No space left", "kind": "disk_full", '
        '"errno": 28, "path": "/r/x.pt"}\n')
    assert child_report.line(child_report.Stats("valid", {"loss": "2.5"}, 7)) == (
        'prelnx-event {"event": "stats", "tag": "valid", "stats": {"loss": 2.5}, "step": 7}\n')
    assert child_report.line(child_report.Diagnosed({"num_updates": 3})) == (
        'prelnx-event {"event": "diagnosed", "row": {"num_updates": 3}}\n')
