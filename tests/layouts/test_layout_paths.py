"""The one rule for a relative layout path (docs/your_layout.md, prelnx.layouts.absolute_spec): relative to the file
that names it (a config, its base:, a sweep spec's grid:, set:, arms: or exclude:), and to the working directory where the
command line names it (--set, --grid). Each place is tested from a working directory that holds a decoy file of
the same name, so a reading against the wrong folder takes the wrong file."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from prelnx.config.load import load_config
from prelnx.sweep.spec import expand, expand_arms, load_spec, resolve_spec

from tests.conftest import REPO, TINY

EXAMPLE = REPO / "examples" / "gated_preln.py"
SPEC = "./gated_preln.py:GatedPreLN"


def folders(tmp_path: Path, monkeypatch) -> tuple[str, str]:
    """project/ (a config and the file) and elsewhere/ (a decoy of the file), the working directory: the two specs."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    for folder in (project, elsewhere):
        folder.mkdir()
        shutil.copy(EXAMPLE, folder / "gated_preln.py")
    data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in TINY.items()}
    (project / "tiny.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(elsewhere)
    return (f"{(project / 'gated_preln.py').resolve()}:GatedPreLN", f"{(elsewhere / 'gated_preln.py').resolve()}:GatedPreLN")


def test_set_on_the_command_line_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    beside_config, here = folders(tmp_path, monkeypatch)
    assert load_config(tmp_path / "project" / "tiny.yaml", [f"model.layout={SPEC}"])[0].model.layout == here
    config_naming = tmp_path / "project" / "mine.yaml"
    config_naming.write_text(f"base: tiny.yaml\nmodel: {{layout: '{SPEC}'}}\n")
    assert load_config(config_naming)[0].model.layout == beside_config  # the config's folder, not ours


def test_a_sweep_specs_grid_set_and_arms_are_relative_to_the_spec(tmp_path, monkeypatch):
    beside_spec, here = folders(tmp_path, monkeypatch)
    project = tmp_path / "project"
    (project / "grid.yaml").write_text(f"name: g\nbase: tiny.yaml\ngrid: {{model.layout: [pre, '{SPEC}']}}\n")
    (project / "set.yaml").write_text(f"name: s\nbase: tiny.yaml\nset: {{model.layout: '{SPEC}'}}\n"
                                      "grid: {train.seed: [1, 2]}\n")  # fmt: skip
    (project / "arms.yaml").write_text(f"name: a\nbase: tiny.yaml\narms: {{mine: {{model.layout: '{SPEC}'}}, "
                                       "pre: {model.layout: pre}}\n")  # fmt: skip
    assert [p.config.model.layout for p in expand(load_spec(project / "grid.yaml"))] == ["pre", beside_spec]
    assert {p.config.model.layout for p in expand(load_spec(project / "set.yaml"))} == {beside_spec}
    assert {p.config.model.layout for p in expand_arms(load_spec(project / "arms.yaml"))} == {beside_spec, "pre"}
    # exclude: names the grid's file as the grid does (was: taken as is, so it excluded nothing, silently)
    (project / "exclude.yaml").write_text(f"name: x\nbase: tiny.yaml\ngrid: {{model.layout: [pre, '{SPEC}'], "
                                          f"train.seed: [1, 2]}}\nexclude: [{{model.layout: '{SPEC}', train.seed: 2}}]\n")
    assert [p.name for p in expand(load_spec(project / "exclude.yaml"))] == [
        "layout-pre_seed-1", "layout-pre_seed-2", "layout-GatedPreLN_seed-1"]
    # --grid on the command line, on that spec or on a training config: the working directory
    cli = resolve_spec(project / "set.yaml", [f"model.layout={SPEC}"], [], None)
    assert {p.config.model.layout for p in expand(cli)} == {here}
    cli = resolve_spec(project / "tiny.yaml", [f"model.layout=pre,{SPEC}"], [], None)
    assert [p.config.model.layout for p in expand(cli)] == ["pre", here]
