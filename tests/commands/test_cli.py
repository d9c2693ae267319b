"""The command line itself: help, dry-run, and bad input as one message with exit code 2 (no traceback)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from prelnx.cli import app

runner = CliRunner()


def test_help_lists_train():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "train" in result.output
    result = runner.invoke(app, ["train", "--help"])
    assert result.exit_code == 0 and "--dry-run" in result.output and "--set" in result.output


def test_dry_run_prints_config_and_plain_fairseq_command_and_refuses_as_the_run_would(tmp_path):
    result = runner.invoke(app, ["train", "--config", "iwslt_preln.yaml", "--dry-run", "--run-dir", str(tmp_path / "r"),
                                 "--set", f"data.path={tmp_path / 'no-data'}"])  # fmt: skip
    assert "layout: pre" in result.output and "mask_prob" not in result.output  # the translation task's keys only
    assert f"fairseq-train {tmp_path / 'no-data'}" in result.output
    assert "--encoder-normalize-before" in result.output
    # the data is not prepared: the real run would stop with exit 2, so does the dry run
    assert result.exit_code == 2 and "holds no binarized iwslt14 data" in result.output, result.output
    assert not (tmp_path / "r").exists()


def test_a_dry_run_on_a_run_dir_of_another_config_says_the_run_would_be_refused(tiny_config_file, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    other = runner.invoke(app, ["train", "--config", str(tiny_config_file()), "--dry-run", "--run-dir", str(run_dir)])
    assert other.exit_code == 0, other.output
    (run_dir / "config.yaml").write_text((tmp_path / "tiny.yaml").read_text().replace("lr: 0.003", "lr: 0.5"))
    refused = runner.invoke(app, ["train", "--config", str(tiny_config_file()), "--dry-run", "--run-dir", str(run_dir)])
    assert refused.exit_code == 2 and "holds a run of a different config (optimizer.lr: 0.5 -> 0.003)" in refused.output


def test_bad_config_is_one_message_and_exit_code_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model: {layout: middle}\ntrain: {max_epoch: 1}\n")
    result = runner.invoke(app, ["train", "--config", str(path)])
    assert result.exit_code == 2
    assert f"{path}: model.layout: expected one of 'post', 'pre', 'deepnorm', 'admin', 'tfixup', 'rezero', 'rezero_postln', 'b2t', 'peri', 'reorder', 'mixln', 'residual', 'lnscale', got 'middle'" in result.output
    assert "Traceback" not in result.output


def test_missing_data_says_how_to_prepare_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["train", "--config", "iwslt_preln.yaml"])
    assert result.exit_code == 2
    assert "holds no binarized iwslt14 data" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def test_help_lists_every_command_with_its_whole_summary():
    from prelnx.cli import SHORT_HELP

    result = runner.invoke(app, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    for name, summary in SHORT_HELP.items():
        assert f"  {name}" in result.output and summary in result.output, (name, result.output)  # one line, uncut
    commands = result.output.split("Commands:")[1]
    assert "..." not in commands and "…" not in commands


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"prelnx {version('prelnx')}\n"


def test_a_bad_lr_is_reported_once_not_again_through_the_keys_it_bounds():
    result = runner.invoke(app, ["train", "--config", "demo/preln_nowarmup.yaml", "--set", "optimizer.lr=-1",
                                 "--set", "schedule.warmup_init_lr=0.001", "--dry-run"])  # fmt: skip
    assert result.exit_code == 2
    assert result.output == "error: invalid config:\n  --set optimizer.lr=-1: optimizer.lr: must be > 0, got -1.0\n"
    result = runner.invoke(app, ["train", "--config", "demo/preln_nowarmup.yaml", "--set", "schedule.warmup_init_lr=-1",
                                 "--dry-run"])  # fmt: skip
    assert result.exit_code == 2
    assert "schedule.warmup_init_lr: must be in [0, optimizer.lr=0.002], got -1" in result.output


def test_refusals_of_paths_and_keys_are_one_line_with_a_suggestion(tmp_path):
    result = runner.invoke(app, ["train", "--config", "demo/preln_nowarmpu.yaml", "--dry-run"])
    assert result.exit_code == 2 and "no such config file" in result.output
    assert "did you mean" in result.output and "demo/preln_nowarmup.yaml" in result.output
    result = runner.invoke(app, ["train", "--config", "demo/preln_nowarmup.yaml", "--set",
                                 "optimizer.learning_rate=1e-3"])  # fmt: skip
    assert result.exit_code == 2 and "did you mean optimizer.lr?" in result.output
    secret = tmp_path / "secret"
    secret.write_text("alice:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n")
    child = tmp_path / "child.yaml"
    child.write_text(f"base: {secret}\n")
    for config in (child, secret):
        result = runner.invoke(app, ["train", "--config", str(config), "--dry-run"])
        assert result.exit_code == 2 and f"{secret}: not a prelnx config" in result.output
        assert "hashhash" not in result.output and "alice" not in result.output and "Traceback" not in result.output


def test_a_command_imports_only_its_own_module(tmp_path):
    """`prelnx train` never pays for the report's scipy.stats, the plots' matplotlib or another command's module;
    on a machine that cannot have a GPU, not even torch (the parent only plans and watches: fairseq is the child)."""
    import json
    import subprocess
    import sys

    from prelnx.machine import may_have_gpu

    probe = ("import atexit, json, sys\n"
             "atexit.register(lambda: print(json.dumps(sorted(sys.modules))))\n"
             "from prelnx.cli import main\nmain()\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe, "train", "--config", "demo/preln_nowarmup.yaml", "--dry-run",
                           "--run-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "fairseq-train" in done.stdout, done.stdout + done.stderr[-2000:]
    names = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "prelnx.commands.train" in names
    never = {"scipy.stats", "matplotlib", "prelnx.commands.sweep", "prelnx.commands.report", "prelnx.report.report"}
    assert not never & names, never & names
    if not may_have_gpu():
        assert "torch" not in names


@pytest.mark.parametrize(("argv", "says"), [
    (["env", "--no-such"], "error: No such option: --no-such (`prelnx env --help` says what is valid)"),
    (["configs", "show"], "error: Missing argument 'name' (`prelnx configs show --help`"),
    (["reproduce", "--scale", "huge"], "'huge' is not one of 'demo', 'cpu', 'paper' (`prelnx reproduce --help`"),
    (["--no-such"], "error: No such option: --no-such (`prelnx --help`"),
    (["configs", "nosuch"], "error: No such command 'nosuch' (`prelnx configs --help`"),
])  # fmt: skip
def test_a_usage_error_is_one_error_line_as_a_refusal_is(argv, says):
    """click's own usage errors (an unknown option or command, a missing argument, a bad choice) read as prelnx's
    refusals: one `error:` line on stderr, pointing at the command's --help, exit 2; a bare group shows its help."""
    result = runner.invoke(app, argv, prog_name="prelnx")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr
    bare = runner.invoke(app, ["configs"], prog_name="prelnx")
    assert "Usage: prelnx configs" in bare.output and "error" not in bare.output, bare.output
