"""`prelnx layouts list | show | new`: the table as the code holds it, and a starting file that trains as written."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.layouts import LAYOUTS

runner = CliRunner()


def test_list_and_show_are_the_table(tmp_path):
    listed = runner.invoke(app, ["layouts", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [row["name"] for row in rows] == list(LAYOUTS) and rows[0]["display"] == "Post-LN"
    table = runner.invoke(app, ["layouts", "list"])
    assert [line.split()[0] for line in table.output.splitlines()[1:]] == list(LAYOUTS), table.output
    mixln = runner.invoke(app, ["layouts", "show", "mixln", "--json"])
    assert json.loads(mixln.output)["reference"]["repo"] == "pixeli99/MixLN"
    shown = runner.invoke(app, ["layouts", "show", "pre"])
    assert "display:   Pre-LN" in shown.output and "pre_ln:    yes" in shown.output, shown.output
    mixln = runner.invoke(app, ["layouts", "show", "mixln"]).output  # words, not Python's reprs
    assert "reference: pixeli99/MixLN peft_pretraining/modeling_llama.py @ ff458269" in mixln and "{" not in mixln, mixln


def test_new_refuses_a_shipped_name_or_an_existing_file(tmp_path):
    for name in ("pre", "Post"):  # Post.py was written, then refused by every command: display 'Post' is Post-LN's
        taken = runner.invoke(app, ["layouts", "new", name, "--out", str(tmp_path)])
        assert taken.exit_code == 2 and "no shipped layout has" in taken.output and not list(tmp_path.iterdir())
    assert runner.invoke(app, ["layouts", "new", "mine", "--out", str(tmp_path)]).exit_code == 0
    again = runner.invoke(app, ["layouts", "new", "mine", "--out", str(tmp_path)])
    assert again.exit_code == 2 and "--force" in again.output


def _new(tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    written = runner.invoke(app, ["layouts", "new", "scaled_preln"])
    assert written.exit_code == 0 and "scaled_preln.py:ScaledPreln" in written.output, written.output
    return "./scaled_preln.py:ScaledPreln"


def test_a_new_layout_file_is_a_row_and_builds_as_written(tmp_path, tiny_config_file, monkeypatch):
    """The written file is a layout row (`show`) and the model the plan builds from it has its hooks' parameters."""
    from prelnx.config.load import load_config
    from tests.plugin import build

    spec = _new(tmp_path, monkeypatch)
    shown = json.loads(runner.invoke(app, ["layouts", "show", spec, "--json"]).output)
    assert shown["display"] == "Scaled preln" and shown["pre_ln"] and shown["file"].endswith(spec[1:])
    config, _ = load_config(tiny_config_file(), [f"model.layout={spec}"])
    _, _, model = build.translation(config)
    assert [tuple(layer.branch_scales.shape) for layer in (*model.encoder.layers, *model.decoder.layers)] == [
        (2,), (2,), (3,), (3,)]  # one scale per sublayer: self-attention, (cross-attention,) FFN
    assert model.encoder.layers[0].normalize_before and model.decoder.layer_norm is not None  # pre_ln = True


@pytest.mark.slow
def test_a_new_layout_file_trains_as_written(tmp_path, tiny_config_file, monkeypatch):
    """A tiny real training of the file as written, with its declared option set (model.init_scale 0.5): its branch
    scales start there and learn, saved beside Pre-LN's final norms."""
    spec = _new(tmp_path, monkeypatch)
    config = tiny_config_file(train={"max_epoch": 1, "max_update": 6})
    run_dir = tmp_path / "run"
    trained = runner.invoke(app, ["train", "--config", str(config), "--run-dir", str(run_dir),
                                  "--set", f"model.layout={spec}", "--set", "model.init_scale=0.5"])  # fmt: skip
    assert trained.exit_code == 0, trained.output + (run_dir / "train.log").read_text()[-2000:]
    state = torch.load(run_dir / "checkpoints" / "checkpoint_last.pt", map_location="cpu", weights_only=False)["model"]
    scales = {key: value for key, value in state.items() if key.endswith("branch_scales")}
    assert len(scales) == 4 and {tuple(v.shape) for v in scales.values()} == {(2,), (3,)}  # 2 encoder, 2 decoder layers
    assert any(not torch.equal(v, torch.full_like(v, 0.5)) for v in scales.values())  # they trained
    assert all(torch.allclose(v, torch.full_like(v, 0.5), atol=0.05) for v in scales.values())  # from 0.5, not 1
    assert """--layout-options '{"init_scale": 0.5}'""" in (run_dir / "command.txt").read_text()
    assert "encoder.layer_norm.weight" in state and "decoder.layer_norm.weight" in state  # pre_ln: the final norms
