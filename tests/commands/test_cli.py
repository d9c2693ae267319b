"""The command line itself: help, dry-run, and bad input as one message with exit code 2 (no traceback)."""

from __future__ import annotations

from typer.testing import CliRunner

from prelnx.cli import app

runner = CliRunner()


def test_help_lists_train():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "train" in result.output
    result = runner.invoke(app, ["train", "--help"])
    assert result.exit_code == 0 and "--dry-run" in result.output and "--set" in result.output


def test_dry_run_prints_config_and_plain_fairseq_command(tmp_path):
    result = runner.invoke(app, ["train", "--config", "iwslt_preln.yaml", "--dry-run", "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "layout: pre" in result.output
    assert "fairseq-train data-bin/iwslt14.tokenized.de-en" in result.output
    assert "--encoder-normalize-before" in result.output
    assert not (tmp_path / "r").exists()


def test_bad_config_is_one_message_and_exit_code_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model: {layout: middle}\ntrain: {max_epoch: 1}\n")
    result = runner.invoke(app, ["train", "--config", str(path)])
    assert result.exit_code == 2
    assert f"{path}: model.layout: expected one of 'post', 'pre', 'deepnorm', got 'middle'" in result.output
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
