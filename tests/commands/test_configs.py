"""`prelnx configs list | show | copy`, and `--config NAME` finding a shipped config from any folder."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.config.load import CONFIGS_DIR, find_config, load_config

runner = CliRunner()


def test_a_shipped_config_is_found_by_its_name_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("demo/preln_nowarmup", "demo/preln_nowarmup.yaml", "iwslt_preln", "iwslt_preln.yaml"):
        assert find_config(name).resolve().is_relative_to(CONFIGS_DIR.resolve()), name
    assert find_config("demo/preln_nowarmup") == CONFIGS_DIR / "demo" / "preln_nowarmup.yaml"
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "preln_nowarmup.yaml").write_text("base: demo/base\nname: mine\n")
    assert find_config("demo/preln_nowarmup.yaml").resolve() == tmp_path / "demo" / "preln_nowarmup.yaml"  # a path wins
    assert load_config("demo/preln_nowarmup.yaml")[0].name == "mine"  # and its base: is a shipped name


def test_configs_list_names_every_shipped_config_with_its_task_and_purpose(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["configs", "list"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in result.output.splitlines()[1:]}
    shipped = {path.relative_to(CONFIGS_DIR).with_suffix("").as_posix() for path in CONFIGS_DIR.rglob("*.yaml")}
    assert set(rows) == shipped and len(shipped) > 40
    assert rows["iwslt_preln"][0] == "translation" and "headline run" in rows["iwslt_preln"][1]
    assert rows["bert/base"][0] == "masked_lm"
    assert rows["sweeps/demo"][0] == "sweep" and rows["sweeps/demo"][1].startswith("of translation")
    as_json = runner.invoke(app, ["configs", "list", "--json"])
    assert as_json.exit_code == 0, as_json.output
    listed = {row["name"]: row for row in json.loads(as_json.output)}  # the same rows, unrendered
    assert set(listed) == shipped and listed["sweeps/demo"]["task"] == "sweep of translation"
    assert listed["iwslt_preln"]["task"] == "translation" and listed["iwslt_preln"]["purpose"] == rows["iwslt_preln"][1]


def test_configs_show_resolves_the_base_chain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["configs", "show", "iwslt_preln"])
    assert result.exit_code == 0, result.output
    first, *rest = result.output.splitlines()
    assert first == "# base: chain: iwslt_preln -> iwslt14/preln_nowarmup -> iwslt14/base"
    shown = yaml.safe_load("\n".join(rest))
    assert shown["name"] == "iwslt_preln" and shown["model"]["layout"] == "pre"  # from iwslt14/preln_nowarmup
    assert shown["data"]["dataset"] == "iwslt14" and "lr" in shown["optimizer"]  # from iwslt14/base, defaults filled
    missing = runner.invoke(app, ["configs", "show", "iwslt_prelm"])
    assert missing.exit_code == 2 and "did you mean" in missing.output and "iwslt_preln" in missing.output


def test_configs_copy_gives_a_file_to_edit_whose_base_still_resolves(tmp_path, monkeypatch):
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(app, ["configs", "copy", "demo/preln_nowarmup", "mine.yaml"])
    assert result.exit_code == 0, result.output
    text = (elsewhere / "mine.yaml").read_text()
    assert "base: demo/base\n" in text and text.startswith("# prelnx train")  # the comments kept, the base a name
    (elsewhere / "mine.yaml").write_text(text.replace("layout: pre", "layout: post"))
    monkeypatch.chdir(tmp_path)  # from another folder still
    mine, _ = load_config(elsewhere / "mine.yaml")
    shipped, _ = load_config("demo/preln_nowarmup")
    assert mine.model.layout == "post" and mine.optimizer == shipped.optimizer and mine.data == shipped.data
    again = runner.invoke(app, ["configs", "copy", "demo/preln_nowarmup", str(elsewhere / "mine.yaml")])
    assert again.exit_code == 2 and "exists" in again.output and "--force" in again.output
    into = runner.invoke(app, ["configs", "copy", "sweeps/demo", str(elsewhere)])  # a folder: the file's own name
    assert into.exit_code == 0 and "base: demo/base" in (elsewhere / "demo.yaml").read_text()
    new = runner.invoke(app, ["configs", "copy", "demo/base", f"{elsewhere / 'new'}/"])  # a folder to make: not a file
    assert new.exit_code == 0 and (elsewhere / "new" / "base.yaml").is_file(), new.output
