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
    assert f"{path}: model.layout: expected one of 'post', 'pre', 'deepnorm', 'admin', 'tfixup', 'rezero', 'b2t', got 'middle'" in result.output
    assert "Traceback" not in result.output


def test_missing_data_says_how_to_prepare_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["train", "--config", "iwslt_preln.yaml"])
    assert result.exit_code == 2
    assert "holds no binarized iwslt14 data" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()
