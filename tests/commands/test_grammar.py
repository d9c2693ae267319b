"""One grammar for every command: --seeds a count or a list everywhere, a run's Slurm resources under the same
names on train, sweep and reproduce, one --checkpoint on evaluate, grads and finetune, defaults in the help read
from their owner."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.exits import Refusal
from prelnx.records.checkpoints import checkpoint_grammar, parse_checkpoints

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
    empty = runner.invoke(app, ["sweep", "--config", base, "--seeds", "", "--dry-run"])  # was: the spec's own seeds
    assert empty.exit_code == 2 and empty.output.startswith("error: --seeds: expected a count N"), empty.output
    assert not (tmp_path / "s").exists()


def test_every_command_that_takes_seeds_says_the_same_grammar():
    for command in ("sweep", "reproduce", "grads", "theory", "finetune"):
        result = runner.invoke(app, [command, "--help"], terminal_width=400)
        assert "a count N (seeds 1..N) or a list (3,7)" in result.output, command


RESOURCES = ("--partition", "--time-min", "--gpus-per-run", "--cpus-per-run", "--mem-gb-per-run")


def _helps(command: str) -> dict[str, str]:
    """option -> its help, as the command line has it."""
    import typer.main

    from prelnx.cli import build_app

    click_command = typer.main.get_command(build_app(command)).commands[command]
    return {opt: param.help or "" for param in click_command.params for opt in param.opts if opt.startswith("--")}


def test_train_sweep_and_reproduce_take_a_runs_slurm_resources_under_the_same_names():
    helps = {command: _helps(command) for command in ("train", "sweep", "reproduce")}
    for command, options in helps.items():
        assert set(RESOURCES) <= set(options), (command, sorted(set(RESOURCES) - set(options)))
        assert not {"--cpus-per-task", "--mem-gb", "--gpus"} & set(options), command
    for option in ("--partition", "--time-min", "--cpus-per-run", "--mem-gb-per-run"):  # the same words, all three
        assert len({options[option] for options in helps.values()}) == 1, option
    # --gpus-per-run means the same (the run's GPUs in all); only its default is the command's own
    assert {options["--gpus-per-run"].split(" [default")[0] for options in helps.values()} == {
        "Slurm: GPUs per run, in all (split evenly between its nodes)"}


def test_trains_slurm_resources_are_the_runs_split_between_its_tasks(tiny_config_file, tmp_path):
    base = ["train", "--config", str(tiny_config_file(train={"processes": 2})), "--run-dir", str(tmp_path / "r"),
            "--executor", "slurm", "--dry-run", "--partition", "cpu", "--time-min", "30"]  # fmt: skip
    asked = runner.invoke(app, [*base, "--cpus-per-run", "4", "--mem-gb-per-run", "6", "--gpus-per-run", "0"])
    assert asked.exit_code == 0, asked.output
    assert ("would submit one Slurm job (submitit): 1 node(s) x 2 task(s), 2 CPU(s) per task, 6 GB per node, "
            "partition cpu, time limit 30 min") in asked.output, asked.output  # fmt: skip
    for extra, line in ((["--cpus-per-run", "3"], "error: --cpus-per-run 3: the run is 1 node(s) x 2 task(s), and "
                                                  "each task gets the same share; give a multiple of 2"),
                        (["--gpus-per-run", "1", "--set", "train.device=cuda"],
                         "error: --gpus-per-run 1: train.device: cuda runs a worker per GPU, 2 in all (train.nodes 1 x "
                         "train.processes 2); ask at least 2")):  # fmt: skip
        refused = runner.invoke(app, [*base, *extra])
        assert refused.exit_code == 2 and refused.output.strip() == line, refused.output
    local = runner.invoke(app, base[:5] + ["--gpus-per-run", "1"])
    assert local.exit_code == 2 and local.output.strip() == (
        "error: --gpus-per-run: Slurm option(s); add --executor slurm, or leave them out"), local.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("argv", [
    ["reproduce", "--scale", "demo", "--partition", "gpu", "--dry-run"],
    ["sweep", "--config", "demo/preln_nowarmup", "--grid", "optimizer.lr=0.001", "--array-parallelism", "2", "--dry-run"],
])  # fmt: skip
def test_a_slurm_option_with_the_local_executor_is_refused_before_any_work(argv, tmp_path, monkeypatch):
    """Refused before the plan is made (its lines, reproduce's probe of this machine's speed), so before any work."""
    monkeypatch.chdir(tmp_path)
    local = runner.invoke(app, argv)
    assert local.exit_code == 2 and local.output.strip() == (
        f"error: {argv[-3]}: Slurm option(s); add --executor slurm, or leave them out"), local.output
    assert not list(tmp_path.iterdir())  # nothing planned, probed or trained


def test_trains_per_task_spellings_name_the_per_run_ones(tmp_path):
    for old, line in (("--cpus-per-task", "error: train --cpus-per-task: renamed --cpus-per-run (the run's CPUs in "
                                          "all, split evenly between its tasks); use that name"),
                      ("--mem-gb", "error: train --mem-gb: renamed --mem-gb-per-run (the run's memory in all, split "
                                   "evenly between its nodes); use that name")):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "prelnx.cli", "train", "--config", "x.yaml", old, "2"],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)  # fmt: skip
        assert done.returncode == 2 and done.stderr.strip() == line, done.stderr


# --checkpoint: one grammar (records/checkpoints.py), each command given its run dir its own way
CHECKPOINT_COMMANDS = ("evaluate", "grads", "finetune")


def test_the_checkpoint_grammar():
    as_ = "--run-dir RUN_DIR"
    assert [(c.kind, c.in_run) for c in parse_checkpoints(["best", "last", "checkpoint2.pt", "./m.pt", "/a/b.pt"],
                                                          run_dir_as=as_, many=True)] == [
        ("best", True), ("last", True), ("name", True), ("path", False), ("path", False)]  # fmt: skip
    assert parse_checkpoints(["stages"], run_dir_as=as_, many=True)[0].kind == "stages"
    refusals = {
        "runs/x:best": "--checkpoint runs/x:best: renamed --run-dir runs/x --checkpoint best (same meaning); use that "
                       "spelling",
        "stages": f"--checkpoint stages: several checkpoints, and this command takes one: {checkpoint_grammar()}",
        "bset": f"--checkpoint 'bset': expected {checkpoint_grammar()}",
        "": f"--checkpoint '': expected {checkpoint_grammar()}",
    }  # fmt: skip
    for value, line in refusals.items():
        with pytest.raises(Refusal) as refused:
            parse_checkpoints([value], run_dir_as=as_)
        assert str(refused.value) == line and refused.value.exit_code == 2
    with pytest.raises(Refusal, match=r"^--checkpoint: one checkpoint here, got 2$"):
        parse_checkpoints(["best", "last"], run_dir_as=as_)
    with pytest.raises(Refusal, match=r"^--checkpoint best: a checkpoint of a run dir; give the run dir \(--run-dir "
                                      r"RUN_DIR\), or a path to a .pt \(./model.pt\)$"):  # fmt: skip
        parse_checkpoints(["best"], run_dir_as=as_)[0].files(None)


def test_evaluate_grads_and_finetune_say_the_same_checkpoint_grammar():
    helps = {command: _helps(command)["--checkpoint"] for command in CHECKPOINT_COMMANDS}
    for command, text in helps.items():
        assert checkpoint_grammar(many=command == "finetune") in text, (command, text)
    assert "repeatable" in helps["finetune"] and "RUN_DIR:" not in "".join(helps.values())


def _checkpoint_commands(tiny_run, tmp_path: Path) -> dict[str, tuple[Path, str, bool, list[str], str]]:
    """command -> (its run dir, how it is given one, takes several, its dry run's argv less --checkpoint, the word
    its dry run puts before a checkpoint's path). finetune's run dir is a masked-LM run: the tiny run's checkpoints
    beside a masked-LM config.yaml (a dry run reads no weights)."""
    from prelnx.commands.grads import RUN_DIR_AS as GRADS
    from prelnx.config.load import load_config
    from prelnx.evaluate.evaluate import RUN_DIR_AS as EVALUATE
    from prelnx.finetune.plan import RUN_DIR_AS as FINETUNE
    from prelnx.records.run_config import write_run_config
    from tests.bert.conftest import TINY_MLM

    config, run = tiny_run
    (tmp_path / "mlm.yaml").write_text(yaml.safe_dump(TINY_MLM))
    pretrained = tmp_path / "pretrained"
    write_run_config(pretrained, load_config(tmp_path / "mlm.yaml")[0])
    shutil.copytree(run / "checkpoints", pretrained / "checkpoints")
    finetune = tmp_path / "ft.yaml"
    finetune.write_text(yaml.safe_dump({"task": "sentence_prediction", "data": {"dataset": "synthetic"},
                                        "model": {"arch": "roberta_base"}, "train": {"max_update": 8}}))  # fmt: skip
    return {
        "evaluate": (run, EVALUATE, False, ["evaluate", str(run), "--dry-run"], "with "),
        "grads": (run, GRADS, False, ["grads", "--config", str(config), "--out", str(tmp_path / "g"), "--depths", "2",
                                      "--seeds", "1", "--run-dir", str(run), "--dry-run"], "and "),
        "finetune": (pretrained, FINETUNE, True, ["finetune", "--config", str(finetune), "--pretrained", str(pretrained),
                                                  "--seeds", "1", "--out", str(tmp_path / "f"), "--dry-run"], "from "),
    }  # fmt: skip


def _grammars_answer(value: str, run_dir: Path, run_dir_as: str, many: bool) -> list[Path] | str:
    try:
        return [path for choice in parse_checkpoints([value], run_dir_as=run_dir_as, many=many)
                for path in choice.files(run_dir)]  # fmt: skip
    except Refusal as error:
        return f"error: {error}"


@pytest.mark.slow
def test_evaluate_grads_and_finetune_parse_every_checkpoint_alike(tiny_run, tmp_path):
    """Each command answers each --checkpoint value as the one grammar does (the file, or its one refusal line and
    exit 2, before anything runs), and the three answers are one answer but for the run dir each was given."""
    commands = _checkpoint_commands(tiny_run, tmp_path)
    run = tiny_run[1]
    elsewhere = tmp_path / "elsewhere" / "model.pt"  # a path: the same file for every command
    elsewhere.parent.mkdir()
    shutil.copyfile(run / "checkpoints" / "checkpoint2.pt", elsewhere)
    values = ["best", "last", "checkpoint1.pt", "checkpoint_best.pt", str(elsewhere),
              "checkpoint9.pt", str(tmp_path / "nowhere" / "model.pt"), "bset", "", f"{run}:best", f"{run}:last",
              str(run), "stages"]  # fmt: skip
    for value in values:
        answers = set()
        for command, (run_dir, run_dir_as, many, argv, before) in commands.items():
            expected = _grammars_answer(value, run_dir, run_dir_as, many)
            result = runner.invoke(app, [*argv, "--checkpoint", value])
            if isinstance(expected, str):
                assert result.exit_code == 2 and result.output.strip() == expected, (command, value, result.output)
                assert not (tmp_path / "g").exists() and not (tmp_path / "f").exists()
            else:
                assert result.exit_code == 0, (command, value, result.output)
                assert [f"{before}{path}" in result.output for path in expected] == [True] * len(expected), (
                    command, value, result.output)  # fmt: skip
            answer = str(expected).replace(str(run_dir), "RUN").replace(str(run), "RUN")
            answers.add(answer.replace(run_dir_as.replace("RUN_DIR", "RUN"), "AS").replace(run_dir_as, "AS")
                        .replace(checkpoint_grammar(many), "GRAMMAR"))  # finetune's also names stages
        assert len(answers) == (2 if value == "stages" else 1), (value, answers)  # stages: finetune's alone


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


def test_finetune_refuses_overrides_the_pretrained_run_decides(tmp_path):
    """The fine-tuning's model and sample length are the pre-trained run's: a --set of them was silently dropped."""
    for item in ("model.dropout=0.1", "data.tokens_per_sample=64"):
        result = runner.invoke(app, ["finetune", "--config", "bert_cpu/finetune_synthetic", "--pretrained", str(tmp_path),
                                     "--set", item, "--dry-run"])  # fmt: skip
        assert result.exit_code == 2 and result.output.startswith(f"error: --set {item}: the model and"), result.output


def test_evaluate_refuses_a_checkpoint_and_an_average_at_once(tmp_path):
    """--average-last names the weights as --checkpoint does: both given is one line, not one silently ignored."""
    both = runner.invoke(app, ["evaluate", str(tmp_path), "--checkpoint", "last", "--average-last", "2", "--dry-run"])
    assert both.exit_code == 2, both.output
    assert both.output.strip().startswith("error: --checkpoint last and --average-last 2: give one of them"), both.output
    for value in ("nan", "inf"):  # were decoded with and written to eval/<split>.json as NaN / Infinity
        bad = runner.invoke(app, ["evaluate", str(tmp_path), "--lenpen", value, "--dry-run"])
        assert bad.exit_code == 2 and f"error: --lenpen {value}: expected a finite number" in bad.output, bad.output


def test_out_is_a_folder_in_every_command_and_a_file_there_is_bad_input(tmp_path):
    """--out names the folder a command writes (docs/usage.md): an existing file there is exit 2 before anything
    runs, where `layouts new`, `plot` and `report` answered exit 1 (`file exists`, `not a directory`) after starting,
    and `report --dry-run` said it would write into it."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    (tmp_path / "sweep.json").write_text('{"name": "s", "runs": []}')
    for argv in (["layouts", "new", "mine"], ["plot", str(tmp_path)], ["report", str(tmp_path), "--dry-run"],
                 ["theory", "--dry-run"], ["sweep", "--config", "demo/preln_nowarmup", "--dry-run"]):  # fmt: skip
        done = runner.invoke(app, [*argv, "--out", str(a_file)])
        assert done.exit_code == 2 and "is a file" in done.output, (argv, done.output)
    assert a_file.read_text() == "mine"


@pytest.mark.parametrize("argv", [
    ["theory", "--seeds", "1", "--layers", "1", "--hidden-size", "4", "--scales", "1"],
    ["grads", "--config", "grads/figure3_synthetic", "--dry-run"],
])  # fmt: skip
def test_an_out_that_is_a_file_is_refused_before_any_work(argv, tmp_path):
    """--out is a folder on every command: a file there is bad input at once, not a failure after the computing."""
    taken = tmp_path / "taken.txt"
    taken.write_text("mine\n")
    result = runner.invoke(app, [*argv, "--out", str(taken)])
    assert result.exit_code == 2 and "is a file" in result.output, result.output
    assert "would measure" not in result.output and "theory:" not in result.output, result.output
    assert taken.read_text() == "mine\n"


@pytest.mark.slow  # the session's tiny training
def test_evaluate_says_when_bleu_scores_subword_units(tiny_run, tmp_path):
    """A run on BPE'd data (data prepare writes its `code`) without eval.bleu.remove_bpe scores subword units: evaluate
    says so, and its line no longer calls that BLEU 'BPE removed, comparable to the paper'."""
    from prelnx.config.load import load_config
    from prelnx.plan.data import data_dir

    run = tiny_run[1]
    config = yaml.safe_load((run / "config.yaml").read_text())
    data = tmp_path / "bped"
    shutil.copytree(data_dir(load_config(run / "config.yaml")[0]), data)
    (data / "code").write_text("#version: 0.2\na b\n")  # as if prepared with BPE
    config["data"]["path"] = str(data)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    planned = runner.invoke(app, ["evaluate", str(run), "--dry-run"])
    assert planned.exit_code == 0 and "holds BPE'd text but the run's eval.bleu.remove_bpe is null" in planned.output
    done = runner.invoke(app, ["evaluate", str(run), "--beam", "1"])
    assert done.exit_code == 0 and "(the text as binarized)" in done.output and "comparable" not in done.output
    assert json.loads((run / "eval" / "test.json").read_text())["remove_bpe"] is None
