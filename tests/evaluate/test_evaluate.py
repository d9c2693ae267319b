"""`prelnx evaluate` on a tiny trained run: real generation, real BLEU, real checkpoint averaging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.config.load import load_config
from prelnx.evaluate.evaluate import EvaluationError, average_checkpoints, evaluate, score
from prelnx.exits import Refusal
from prelnx.launch.local import train
from prelnx.plan.data import data_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, request) -> Path:
    from tests.conftest import TINY

    import yaml

    folder = tmp_path_factory.mktemp("evaluate")
    config_path = folder / "tiny.yaml"
    config_path.write_text(yaml.safe_dump({**TINY, "train": {**TINY["train"], "max_epoch": 3, "keep_last_epochs": 3}}))
    config, _ = load_config(config_path)
    run_dir = folder / "run"
    assert train(config, run_dir=run_dir).status == "finished"
    return run_dir


def test_scores_and_hypotheses_in_order(trained_run):
    result = evaluate(trained_run, beam=2)
    saved = json.loads((trained_run / "eval" / "test.json").read_text())
    assert saved == result
    assert {"split", "checkpoint", "beam", "lenpen", "bleu_tokenized", "sacrebleu", "sacrebleu_signature",
            "sentences"} <= set(saved)  # fmt: skip
    assert 0.0 <= saved["bleu_tokenized"] <= 100.0 and 0.0 <= saved["sacrebleu"] <= 100.0
    assert saved["beam"] == 2 and saved["lenpen"] == 1.0 and saved["checkpoint"] == "checkpoint_best.pt"
    assert "nrefs:1" in saved["sacrebleu_signature"]
    hypotheses = (trained_run / "eval" / "test.hyp").read_text().splitlines()
    assert len(hypotheses) == saved["sentences"] == 40
    # Same order as the split's own text: the references fairseq printed, sorted back by id, equal the file.
    config, _ = load_config(trained_run / "config.yaml")
    assert (trained_run / "eval" / "test.ref").read_text() == (data_dir(config) / "text" / "test.tgt").read_text()


def test_cli_prints_both_bleus(trained_run):
    result = CliRunner().invoke(app, ["evaluate", str(trained_run), "--split", "valid", "--checkpoint", "last"])
    assert result.exit_code == 0, result.output
    assert "tokenized BLEU" in result.output and "SacreBLEU" in result.output and "nrefs:1|case:mixed" in result.output
    assert (trained_run / "eval" / "valid.json").is_file()


def test_reference_against_itself_is_100():
    references = ["ein mann fährt fahrrad .", "zwei hunde spielen im schnee .", "eine frau liest ein buch ."]
    scores = score(references, references, target_lang="de")
    assert scores.bleu_tokenized == 100.0 and scores.sacrebleu == 100.0


def test_averaging_two_checkpoints_gives_the_mean(trained_run, tmp_path):
    from prelnx.launch.inprocess import load_plugin

    load_plugin()
    from fairseq import checkpoint_utils

    first, second = trained_run / "checkpoints" / "checkpoint2.pt", trained_run / "checkpoints" / "checkpoint3.pt"
    averaged = average_checkpoints([first, second], tmp_path / "avg.pt")
    a, b, mean = (checkpoint_utils.load_checkpoint_to_cpu(str(p))["model"] for p in (first, second, averaged))
    key = "encoder.layers.0.fc1.weight"
    assert not torch.equal(a[key], b[key])
    for name in a:
        if a[name].is_floating_point():
            assert torch.allclose(mean[name], (a[name] + b[name]) / 2, atol=1e-6), name
    result = evaluate(trained_run, average_last=2, beam=1)
    assert result["checkpoint"] == "average of checkpoint2.pt, checkpoint3.pt"


def test_missing_checkpoint_and_unprepared_split_are_clear_errors(trained_run, tmp_path):
    with pytest.raises(Refusal, match=r"--checkpoint .*nope.pt: no such file$"):
        evaluate(trained_run, checkpoint=str(tmp_path / "nope.pt"))
    with pytest.raises(Refusal, match=r"--checkpoint checkpoint9.pt: .*/checkpoints has no checkpoint9.pt \(it holds "
                                      r".*checkpoint1.pt, checkpoint2.pt, checkpoint3.pt, checkpoint_best.pt, .*\)$"):  # fmt: skip
        evaluate(trained_run, checkpoint="checkpoint9.pt")
    with pytest.raises(EvaluationError, match="split 'test2' is not prepared"):
        evaluate(trained_run, split="test2")
    with pytest.raises(EvaluationError, match="holds 3 epoch checkpoint"):
        evaluate(trained_run, average_last=5)
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path)])
    assert result.exit_code == 2 and "not a run dir" in result.output
