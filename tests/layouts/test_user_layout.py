"""A researcher's own placement in one file (examples/gated_preln.py), named by a config in an empty folder outside
the checkout: it trains in a sweep against Pre-LN, runs the gradient study and is reported; a bad file is one line
and exit 2 before anything is created. Every command is prelnx's CLI in a child process whose working directory is
that folder (the bad files' refusals but one: the same app in this process, in that folder). The trainings are in
the slow tier."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.cli import app

from tests.conftest import REPO, TINY

EXAMPLE = REPO / "examples" / "gated_preln.py"
SPEC = "./gated_preln.py:GatedPreLN"


def prelnx(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prelnx.cli", *args], cwd=folder, capture_output=True, text=True,
                          timeout=1200)  # fmt: skip


def write_config(folder: Path, layout: str = SPEC, name: str = "tiny.yaml") -> Path:
    data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in TINY.items()}
    data["model"] = {**data["model"], "layout": layout}
    data["train"] = {**data["train"], "max_epoch": 1}
    (folder / name).write_text(yaml.safe_dump(data))
    return folder / name


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An empty folder outside the checkout with the example's file and a tiny config naming it."""
    return _folder(tmp_path)


def _folder(path: Path) -> Path:
    assert not path.resolve().is_relative_to(REPO)
    shutil.copy(EXAMPLE, path / "gated_preln.py")
    write_config(path)
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder after `prelnx sweep` of the example against Pre-LN (2 jobs): one sweep trains the example for the
    tests that read its run (a `prelnx train` of it would be the same training, and two processes more)."""
    folder = _folder(tmp_path_factory.mktemp("swept"))
    done = prelnx(folder, "sweep", "-c", "tiny.yaml", "--grid", f"model.layout=pre,{SPEC}", "--jobs", "2",
                  "--name", "mine")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return folder


def swept_run(folder: Path, layout: str) -> Path:
    """The run dir of the sweep's arm whose model.layout is `layout`."""
    rows = list(csv.DictReader((folder / "runs" / "mine" / "summary.csv").open()))
    (row,) = [row for row in rows if row["model.layout"] == layout]
    return folder / "runs" / "mine" / row["run"]


@pytest.mark.slow  # a real training (sweep, gradient study) in a child process
def test_the_example_trains_with_its_gates_learned(swept):
    run = swept_run(swept, f"{swept / 'gated_preln.py'}:GatedPreLN")
    assert json.loads((run / "status.json").read_text())["status"] == "finished"
    # fairseq's process was given the file by its absolute path and built the class in it
    assert f"--layout-file {swept / 'gated_preln.py'}:GatedPreLN" in (run / "command.txt").read_text()
    from prelnx.records.checkpoints import load_checkpoint

    model = load_checkpoint(run / "checkpoints" / "checkpoint_last.pt")["model"]
    gates = {key: value for key, value in model.items() if key.endswith("branch_gates")}
    assert len(gates) == 4 and gates["decoder.layers.0.branch_gates"].shape == (3, 32)  # 2+2 layers; 3 sublayers
    assert all(value.abs().max() > 0 for value in gates.values())  # trained from 0: the residual hook used them
    assert "decoder.layer_norm.weight" in model  # Pre-LN's final norm (pre_ln = True)


@pytest.mark.slow  # a real training (sweep, gradient study) in a child process
def test_the_example_sweeps_against_pre_ln_and_is_reported(swept):
    sweep = swept / "runs" / "mine"
    rows = list(csv.DictReader((sweep / "summary.csv").open()))
    assert sorted(row["status"] for row in rows) == ["finished", "finished"]
    assert {row["model.layout"] for row in rows} == {"pre", f"{swept / 'gated_preln.py'}:GatedPreLN"}
    report = (sweep / "report.md").read_text()
    assert "Gated Pre-LN" in report  # an arm of its own, by its class's display_name (prelnx.layouts.display_name)


@pytest.mark.slow  # the sweep's training; train and sweep in child processes
def test_a_layout_file_edited_since_its_run_started_is_refused_before_training(swept, tmp_path):
    """The run records its layout file's sha256: a resume (a grown budget) or a re-run sweep with the file edited is
    refused, naming it; a run dir from before layout.sha256 (docs/results' raw data) resumes unchecked, as it did."""
    gated = swept_run(swept, f"{swept / 'gated_preln.py'}:GatedPreLN")
    run, sweep = tmp_path / "run", tmp_path / "sweep"  # copies: the module's other tests read the sweep as trained
    shutil.copytree(gated, run)
    shutil.copytree(swept / "runs" / "mine", sweep)
    train = ("train", "-c", "tiny.yaml", "--run-dir", str(run), "--set", "train.max_epoch=2")
    metrics = [run / "metrics.jsonl", sweep / gated.name / "metrics.jsonl"]
    trained = [path.read_text() for path in metrics]
    file = swept / "gated_preln.py"
    source = file.read_text()
    file.write_text(source.replace("torch.sigmoid(layer.branch_gates[index]) * x", "x"))
    try:  # the module's other tests read this folder: the file restored whatever happens
        grown = prelnx(swept, *train)
        again = prelnx(swept, "sweep", "-c", "tiny.yaml", "--grid", f"model.layout=pre,{SPEC}", "--name", "mine",
                       "--out", str(sweep))  # fmt: skip
        unchanged = [path.read_text() for path in metrics]  # nothing trained with the edited file
        (run / "layout.sha256").unlink()  # as a run dir recorded before it existed
        older = prelnx(swept, *train)
    finally:
        file.write_text(source)
    assert grown.returncode == 2 and grown.stderr == (
        f"error: {file}: changed since the run in {run} started with it (layout.sha256 there); restore it, or train "
        f"into a new run dir (--run-dir, or --force to set the old run aside)\n")
    assert again.returncode == 2 and f"{file}: changed since the run in {sweep / gated.name} started" in again.stderr
    assert unchanged == trained
    assert older.returncode == 0, older.stderr
    assert [json.loads(line)["epoch"] for line in metrics[0].read_text().splitlines()] == [1, 2]


@pytest.mark.slow  # the sweep's training; evaluate and grads in child processes
def test_evaluate_and_grads_refuse_a_run_whose_layout_file_was_edited_since_it_started(swept, tmp_path):
    """Its checkpoints computed with code they were not trained with give a wrong BLEU or gradient norm: evaluate and
    grads --run-dir refuse before any work (one line, exit 2); a run dir without layout.sha256 evaluates as before."""
    run, file = swept_run(swept, f"{swept / 'gated_preln.py'}:GatedPreLN"), swept / "gated_preln.py"
    shutil.copytree(run, tmp_path / "older")
    (tmp_path / "older" / "layout.sha256").unlink()  # as a run dir recorded before it existed
    source = file.read_text()
    file.write_text(source.replace("torch.sigmoid(layer.branch_gates[index]) * x", "x"))
    try:  # the module's other tests read this folder: the file restored whatever happens
        evaluated = prelnx(swept, "evaluate", str(run))
        grads = prelnx(swept, "grads", "-c", "tiny.yaml", "--run-dir", str(run), "--layouts", "pre", "--depths", "2",
                       "--seeds", "1", "-o", str(tmp_path / "grads"))  # fmt: skip
        older = prelnx(swept, "evaluate", str(tmp_path / "older"), "--dry-run")
    finally:
        file.write_text(source)
    said = (f"error: {file}: changed since the run in {run} started with it (layout.sha256 there), so its checkpoints "
            f"were not trained with this code; restore the file as the run trained it\n")
    assert (evaluated.returncode, evaluated.stdout, evaluated.stderr) == (2, "", said)
    assert (grads.returncode, grads.stdout, grads.stderr) == (2, "", said) and not (tmp_path / "grads").exists()
    assert older.returncode == 0 and older.stdout.startswith("would translate test of"), older.stderr


@pytest.mark.slow  # the sweep's training; train and evaluate in child processes
def test_a_damaged_layout_record_is_refused_never_read_as_no_record(swept, tmp_path):
    """An empty, non-hex or truncated layout.sha256 cannot say which file the run trained with: a resume and evaluate
    refuse, saying so (a missing one is a run from before the record: the test above resumes it unchecked)."""
    run = tmp_path / "run"
    shutil.copytree(swept_run(swept, f"{swept / 'gated_preln.py'}:GatedPreLN"), run)
    trained = (run / "metrics.jsonl").read_text()
    said = (f"error: {run / 'layout.sha256'}: unreadable (no sha256 of the layout file the run started with); "
            f"restore it from a copy of the run dir, or train into a new run dir (--run-dir, or --force to set the "
            f"old run aside)\n")  # fmt: skip
    for damaged in ("", "not a sum\n", (run / "layout.sha256").read_text()[:40]):
        (run / "layout.sha256").write_text(damaged)
        resumed = prelnx(swept, "train", "-c", "tiny.yaml", "--run-dir", str(run))
        assert (resumed.returncode, resumed.stderr) == (2, said)
    evaluated = prelnx(swept, "evaluate", str(run), "--dry-run")  # evaluate reads the record as train does
    assert (evaluated.returncode, evaluated.stderr) == (2, said)
    assert (run / "metrics.jsonl").read_text() == trained
    sweep = tmp_path / "sweep"  # a re-run sweep leaves such a run alone (refused), never records it failed
    shutil.copytree(swept / "runs" / "mine", sweep)
    gated = swept_run(swept, f"{swept / 'gated_preln.py'}:GatedPreLN").name
    (sweep / gated / "layout.sha256").write_text("")
    status = (sweep / gated / "status.json").read_text()
    again = prelnx(swept, "sweep", "-c", "tiny.yaml", "--grid", f"model.layout=pre,{SPEC}", "--name", "mine", "--out",
                   str(sweep))  # fmt: skip
    assert again.returncode == 2 and f"{sweep / gated / 'layout.sha256'}: unreadable" in again.stderr, again.stderr
    assert (sweep / gated / "status.json").read_text() == status


@pytest.mark.slow  # real trainings in child processes
def test_seeds_trained_after_the_file_was_edited_are_an_arm_of_their_own_in_the_report(folder):
    """2 seeds, the file edited, the sweep re-run with 3 seeds into the same folder (seeds 1-2 refused, 3 trained
    with the new code): the report has one arm per version of the file, labelled by its short sum, never one arm of
    3 seeds of two codes."""
    sweep = ("sweep", "-c", "tiny.yaml", "--out", "sweep", "--jobs", "1")
    assert prelnx(folder, *sweep, "--seeds", "2").returncode == 0
    file = folder / "gated_preln.py"
    file.write_text(file.read_text().replace("torch.sigmoid(layer.branch_gates[index]) * x", "x"))
    assert prelnx(folder, *sweep, "--seeds", "3").returncode == 2  # seeds 1-2 refused: trained with the old file
    assert prelnx(folder, "report", "sweep").returncode == 0
    sums = [(folder / "sweep" / f"seed-{seed}" / "layout.sha256").read_text()[:8] for seed in (1, 3)]
    arms = [row.split("|")[1:3] for row in (folder / "sweep" / "report.md").read_text().splitlines()
            if row.startswith("| Gated Pre-LN adam")]  # fmt: skip
    assert sums[0] != sums[1] and arms == [[f" Gated Pre-LN adam lr 0.003, no warm-up (layout.sha256 {s}) ", f" {n} "]
                                           for s, n in zip(sums, (2, 1))]  # fmt: skip


@pytest.mark.slow  # a real training (sweep, gradient study) in a child process
def test_the_gradient_study_measures_the_example(folder):
    done = prelnx(folder, "grads", "-c", "tiny.yaml", "--layouts", f"pre,{SPEC}", "--depths", "2", "--seeds", "2",
                  "--max-tokens", "256", "--jobs", "1", "--threads", "1", "-o", "grads")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    out = folder / "grads"
    mine = f"{folder / 'gated_preln.py'}:GatedPreLN"
    rows = list(csv.DictReader((out / "grads.csv").open()))
    assert {row["layout"] for row in rows} == {"pre", mine}
    gated = [float(r["grad_norm"]) for r in rows if r["layout"] == mine and r["weight"] == "W2"]
    pre = [float(r["grad_norm"]) for r in rows if r["layout"] == "pre" and r["weight"] == "W2"]
    assert len(gated) == len(pre) > 0 and gated != pre  # a model of its own, not Pre-LN's
    assert {row["layout"] for row in csv.DictReader((out / "hidden.csv").open())} == {"pre", mine}
    assert (out / "figure3.png").stat().st_size > 0


BAD_FILES = {
    "missing": (None, "no such file"),
    "syntax": ("class GatedPreLN(:\n    pass\n", "line 1: invalid syntax"),
    "no_class": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass Other(LayoutScheme):\n"
                 "    def residual(self, layer, index, x, residual):\n        return residual + x\n",
                 "no class GatedPreLN (classes defined there: Other)"),
    "no_hook": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass GatedPreLN(LayoutScheme):\n"
                "    pre_ln = True\n", "overrides none of the hooks"),
    "clash": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass GatedPreLN(LayoutScheme):\n"
              "    name = 'pre'\n    def residual(self, layer, index, x, residual):\n        return residual + x\n",
              "clashes with the shipped layout pre (Pre-LN)"),
    "claim": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass GatedPreLN(LayoutScheme):\n"
              "    claims = ({'id': 'a', 'kind': 'faster', 'claim': 'x'},)\n"
              "    def residual(self, layer, index, x, residual):\n        return residual + x\n",
              "GatedPreLN.claims[0] (a): kind 'faster'"),
    # each was found by acceptance testing (e3): a bug's traceback, exit 70 / no allowed values named / a silent
    # Post-LN run, model.layout taken by the option
    "not_a_method": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme\n\nclass GatedPreLN(LayoutScheme):\n"
                     "    residual = 3\n", "GatedPreLN.residual must take (self, layer, index, x, residual), got residual = 3"),
    "bad_default": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme, Option\n\n"
                    "class GatedPreLN(LayoutScheme):\n    options = (Option('k', 5.0, 'h', low=0.0, high=1.0),)\n"
                    "    def residual(self, layer, index, x, residual):\n        return residual + x\n",
                    "GatedPreLN.options: k's default 5.0 is not allowed: expected a number in [0.0, 1.0], got 5.0"),
    "option_is_a_model_key": ("from prelnx_fairseq_plugin.models.schemes import LayoutScheme, Option\n\n"
                              "class GatedPreLN(LayoutScheme):\n    options = (Option('layout', 'x', 'h'),)\n"
                              "    def residual(self, layer, index, x, residual):\n        return residual + x\n",
                              "GatedPreLN's option 'layout' is the config's own model.layout; rename it"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_layout_file_is_one_line_and_exit_2_with_nothing_created(tmp_path, case, monkeypatch):
    source, words = BAD_FILES[case]
    if source is not None:
        (tmp_path / "gated_preln.py").write_text(source)
    write_config(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    if case == "missing":  # the installed entry point, in a child process in that folder
        done = prelnx(tmp_path, "train", "-c", "tiny.yaml")
        code, output = done.returncode, done.stdout + done.stderr
    else:  # the same app and handler in this process (a child's start costs seconds of fairseq imports per case)
        monkeypatch.chdir(tmp_path)
        done = CliRunner().invoke(app, ["train", "-c", "tiny.yaml"])
        code, output = done.exit_code, done.output
    assert code == 2 and "Traceback" not in output, output
    named = [line for line in output.splitlines() if "gated_preln.py" in line]
    assert len(named) == 1 and words in named[0] and "model.layout" in named[0], output
    assert sorted(tmp_path.rglob("*")) == before  # no run dir, no data, no __pycache__


def test_the_example_builds_as_the_plugins_language_model(tmp_path):
    """language_model = True in the file: the decoder-only model takes it (two sublayers a layer, no cross-attention)."""
    from prelnx.config.load import load_config
    from prelnx.launch.inprocess import build_task_and_model
    from tests.lm.conftest import TINY_LM

    data = {**TINY_LM, "model": {**TINY_LM["model"], "layout": f"{EXAMPLE}:GatedPreLN"}}
    (tmp_path / "lm.yaml").write_text(yaml.safe_dump(data))
    config, _ = load_config(tmp_path / "lm.yaml")
    _, _, model = build_task_and_model(config)
    assert [tuple(layer.branch_gates.shape) for layer in model.decoder.layers] == [(2, 32), (2, 32)]
    assert model.decoder.layers[0].normalize_before and model.decoder.layer_norm is not None  # pre_ln = True


def test_a_configs_layout_file_is_next_to_the_config_whatever_the_working_directory(tmp_path, monkeypatch):
    """`model.layout: ./gated_preln.py:GatedPreLN` means the file beside the config that names it (as `base:` does):
    loaded from another folder, and through a `base:` chain from a third, it is still that file."""
    from prelnx.config.load import load_config

    project, elsewhere, derived = tmp_path / "project", tmp_path / "elsewhere", tmp_path / "derived"
    for folder in (project, elsewhere, derived):
        folder.mkdir()
    shutil.copy(EXAMPLE, project / "gated_preln.py")
    shutil.copy(EXAMPLE, elsewhere / "gated_preln.py")  # the file a working-directory reading would wrongly take
    write_config(project)
    (derived / "longer.yaml").write_text("base: ../project/tiny.yaml\ntrain: {max_epoch: 2}\n")
    monkeypatch.chdir(elsewhere)
    mine = f"{(project / 'gated_preln.py').resolve()}:GatedPreLN"
    assert load_config(project / "tiny.yaml")[0].model.layout == mine
    assert load_config(Path("..") / "derived" / "longer.yaml")[0].model.layout == mine  # the base's folder, not ours
    assert load_config(project / "tiny.yaml", ["model.layout=pre"])[0].model.layout == "pre"
