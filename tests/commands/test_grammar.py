"""One grammar for every command: --seeds a count or a list everywhere, per-run Slurm resources on sweep and
reproduce, defaults in the help read from their owner."""

from __future__ import annotations

from typer.testing import CliRunner

from prelnx.cli import app

runner = CliRunner()


def test_sweep_takes_seeds_as_a_count_or_a_list(tiny_config_file, tmp_path):
    base = str(tiny_config_file())
    counted = runner.invoke(app, ["sweep", "--config", base, "--grid", "optimizer.lr=0.001,0.002", "--seeds", "2",
                                  "--out", str(tmp_path / "s"), "--dry-run"])  # fmt: skip
    assert counted.exit_code == 0, counted.output
    assert "4 runs" in counted.output and counted.output.count("train.seed=2") == 2, counted.output
    listed = runner.invoke(app, ["sweep", "--config", base, "--seeds", "3,7", "--out", str(tmp_path / "s"), "--dry-run"])
    assert listed.exit_code == 0 and "train.seed=3" in listed.output and "train.seed=7" in listed.output, listed.output
    bad = runner.invoke(app, ["sweep", "--config", base, "--seeds", "0", "--dry-run"])
    assert bad.exit_code == 2 and bad.output.strip() == "error: --seeds: need at least 1 seed, got 0", bad.output
    assert not (tmp_path / "s").exists()


def test_every_command_that_takes_seeds_says_the_same_grammar():
    for command in ("sweep", "reproduce", "grads", "theory", "finetune"):
        result = runner.invoke(app, [command, "--help"], terminal_width=400)
        assert "a count N (seeds 1..N) or a list (3,7)" in result.output, command


def test_sweep_and_reproduce_take_the_same_per_run_slurm_resources():
    for command in ("sweep", "reproduce"):
        result = runner.invoke(app, [command, "--help"], terminal_width=400)
        for option in ("--partition", "--time-min", "--gpus-per-run", "--cpus-per-run", "--mem-gb-per-run"):
            assert option in result.output, (command, option)


def test_help_defaults_are_their_owners():
    from prelnx.analysis.grads.study import QUICK, GradStudy
    from prelnx.analysis.theory import TheorySettings
    from prelnx.launch.slurm_task import DEFAULT_TIME_MIN

    theory = runner.invoke(app, ["theory", "--help"], terminal_width=400).output
    assert f"Hidden size d.  [default: {TheorySettings().d}]" in theory
    assert f"[default: {len(TheorySettings().seeds)}]" in theory
    grads = runner.invoke(app, ["grads", "--help"], terminal_width=400).output
    assert f"[default: {','.join(map(str, GradStudy.depths))}; --quick: {','.join(map(str, QUICK['depths']))}]" in grads
    for command in ("train", "sweep", "reproduce"):
        assert f"[default: {DEFAULT_TIME_MIN}]" in runner.invoke(app, [command, "--help"], terminal_width=400).output
