"""The console (prelnx/console.py), through the real command line: progress on stdout, every warning on stderr (a
sweep's too, as `prelnx train` says them), -q keeps warnings and errors only, -v adds fairseq's own INFO lines.

The sweep here trains nothing: its one run dir already holds that run, finished, so the test reads where each line
goes without a training."""

from __future__ import annotations

import logging
import subprocess
import sys

from prelnx import console
from prelnx.config.load import find_config
from prelnx.records.run_config import write_run_config
from prelnx.records.status import write_status
from prelnx.sweep.execute import plan_sweep
from prelnx.sweep.spec import resolve_spec

# schedule.decay inverse_sqrt without warm-up decays from update 1: legal, and warned of (config/schedule.py)
WARNS = ["--set", "schedule.decay=inverse_sqrt", "--grid", "train.seed=1"]
WARNING = "warning: schedule: warmup_updates 0 with decay inverse_sqrt decays from update 1"


def _sweep(tiny_config_file, tmp_path, *flags: str) -> subprocess.CompletedProcess:
    config, out = tiny_config_file(), tmp_path / "sweep"
    _, [point] = plan_sweep(resolve_spec(find_config(str(config)), ["train.seed=1"], ["schedule.decay=inverse_sqrt"],
                                         None, None), out)  # fmt: skip
    if not (out / point.name / "status.json").is_file():  # that run, finished: nothing to train
        write_run_config(out / point.name, point.config)
        write_status(out / point.name, "finished", update=4)
    command = [sys.executable, "-m", "prelnx.cli", *flags, "sweep", "--config", str(config), *WARNS, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_a_sweeps_warning_goes_to_stderr_and_its_progress_to_stdout(tiny_config_file, tmp_path):
    done = _sweep(tiny_config_file, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert WARNING in done.stderr and "warning:" not in done.stdout, (done.stdout, done.stderr)
    assert "sweep tiny-grid: 1 run in" in done.stdout and "already finished at update 4" in done.stdout, done.stdout
    assert "already finished" not in done.stderr and "report: " in done.stdout


def test_quiet_says_only_the_warnings_and_verbose_still_splits_the_streams(tiny_config_file, tmp_path):
    quiet = _sweep(tiny_config_file, tmp_path, "-q")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout + quiet.stderr  # no progress at all
    assert WARNING in quiet.stderr
    verbose = _sweep(tiny_config_file, tmp_path, "--verbose")
    assert verbose.returncode == 0 and WARNING in verbose.stderr and "warning:" not in verbose.stdout, verbose.stderr
    assert "already finished at update 4" in verbose.stdout


def test_verbose_shows_fairseqs_info_lines_and_the_default_only_its_warnings(capsys):
    """fairseq's level is the console's: INFO with -v, its warnings otherwise (fairseq logs under `fairseq.*`)."""
    said = {}
    for verbosity in (console.QUIET, console.NORMAL, console.VERBOSE):
        console.configure(verbosity)
        logging.getLogger("fairseq.trainer").info("no existing checkpoint found")
        logging.getLogger("fairseq.trainer").warning("a fairseq warning")
        logging.getLogger("prelnx.sweep.execute").debug("a debug line")
        logging.getLogger("prelnx.sweep.execute").info("a progress line")
        said[verbosity] = capsys.readouterr()
    assert said[console.QUIET].out == "" and said[console.NORMAL].out == "a progress line\n"
    assert said[console.VERBOSE].out == "fairseq.trainer: no existing checkpoint found\na debug line\na progress line\n"
    assert {said[v].err for v in said} == {"warning: fairseq.trainer: a fairseq warning\n"}


def test_quiet_takes_away_progress_never_the_result_asked_for():
    """-q on `prelnx theory` without --out: the seeds' progress goes, Lemma 1's table and verdicts stay (they are
    the command's answer; without them -q would print nothing at all). What it prints, not how a process splits its
    streams: the command in this process (CliRunner keeps stdout apart from stderr); the other tests here start one."""
    from typer.testing import CliRunner

    from prelnx.cli import build_app

    argv = ["-q", "theory", "--hidden-size", "16", "--layers", "2", "--seeds", "2", "--scales", "1"]
    done = CliRunner().invoke(build_app("theory"), argv)  # the command as `prelnx -q theory` runs it
    assert done.exit_code == 0, done.output
    assert "seed 1 done" not in done.stdout  # progress: gone under -q
    assert "Lemma 1 decided from every seed" in done.stdout and "verdict: " in done.stdout, done.stdout


def test_quiet_train_still_says_how_the_run_ended(tiny_run):
    """-q on `prelnx train`: the run's outcome is the command's answer (a failed run would otherwise end in silence,
    only its exit code saying so). No fairseq: prelnx was killed after the last checkpoint held the whole budget, so
    the re-run records it finished without training."""
    from typer.testing import CliRunner

    from prelnx.cli import build_app
    from prelnx.records.status import write_status

    config, run_dir = tiny_run
    write_status(run_dir, "running", update=4)
    done = CliRunner().invoke(build_app("train"), ["-q", "train", "--config", str(config), "--run-dir", str(run_dir)])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"{run_dir}: finished", done.stdout  # the answer, and no progress


def test_a_plot_with_nothing_to_draw_says_so_on_stderr(tmp_path):
    """A run that has recorded no validation yet draws no figure: `plot` said nothing at all (exit 0); now a warning."""
    write_status(tmp_path / "run", "running", update=0)
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    done = subprocess.run([sys.executable, "-m", "prelnx.cli", "plot", str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout == "", (done.stdout, done.stderr)
    assert "nothing to plot yet (no run has a validation row)" in done.stderr, done.stderr
