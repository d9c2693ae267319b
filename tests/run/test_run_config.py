"""A run dir's config.yaml has one writer and one reader (records/run_config.py): evaluate, finetune, the grain and
the identity check read the same Config from it, and a damaged file is one clear error naming it, everywhere."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prelnx.config.load import load_config
from prelnx.records.grain import Grain, of_run_dir
from prelnx.records.run_config import RunConfigError, read_run_config, saved_differences, write_run_config
from tests.bert.conftest import TINY_MLM
from tests.helpers import config_writer


@pytest.fixture
def mlm_run(tmp_path: Path):
    """(config, run dir): a masked-LM config (update grain) written into a run dir as `prelnx train` writes it."""
    config, _ = load_config(config_writer(TINY_MLM, tmp_path, "mlm.yaml")())
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_run_config(run_dir, config)
    return config, run_dir


def test_every_reader_of_a_run_dir_reads_the_config_it_trained(mlm_run):
    from prelnx.finetune.plan import pretrained_config

    config, run_dir = mlm_run
    assert read_run_config(run_dir) == config
    assert pretrained_config(run_dir) == config
    assert of_run_dir(run_dir) is Grain.UPDATE  # eval.every_updates, as the config says (the epoch grain otherwise)
    assert saved_differences(run_dir, config) == []
    other = dataclasses.replace(config, optimizer=dataclasses.replace(config.optimizer, lr=0.5))
    assert [str(d) for d in saved_differences(run_dir, other)] == ["optimizer.lr: 0.003 -> 0.5"]
    assert of_run_dir(run_dir.parent / "nothing") is Grain.EPOCH and saved_differences(run_dir.parent, config) is None


DAMAGES = {
    "not YAML": b"model: [layout: pre\n",
    "not UTF-8": b"name: caf\xe9\n",
    "a value of the wrong type": b"optimizer:\n  lr: fast\n",
    "a key no config has": b"optimizer:\n  learning_rat: 0.1\n",
    "not a config": b"- 1\n- 2\n",
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_run_config_is_one_error_naming_the_file_in_every_reader(mlm_run, damage):
    from prelnx.evaluate.evaluate import evaluate
    from prelnx.finetune.plan import FinetunePlanError, pretrained_config

    config, run_dir = mlm_run
    path = run_dir / "config.yaml"
    path.write_bytes(DAMAGES[damage])
    for read in (read_run_config, of_run_dir, lambda d: saved_differences(d, config), evaluate):
        with pytest.raises(RunConfigError) as raised:
            read(run_dir)
        assert str(path) in str(raised.value) and "Traceback" not in str(raised.value), (damage, read)
    with pytest.raises(FinetunePlanError, match=str(path)):
        pretrained_config(run_dir)
    assert not (run_dir / ".lock").exists()  # evaluate refused it before locking the run dir

    from prelnx.cli import app

    result = CliRunner().invoke(app, ["evaluate", str(run_dir)])
    assert result.exit_code == 2 and str(path) in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output, result.output


def test_a_run_dir_that_is_a_file_or_a_sweep_is_bad_input_in_the_run_and_the_dry_run(tmp_path, tiny_config_file):
    """--run-dir naming a file: the dry run said 'in use by another prelnx process' (exit 4), the run 'file exists'
    (exit 1). Both are one line naming --run-dir, exit 2, and the file is untouched; a sweep's folder likewise."""
    from prelnx.cli import app

    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    argv = ["train", "--config", str(tiny_config_file()), "--run-dir", str(a_file)]
    for extra in (["--dry-run"], []):
        done = CliRunner().invoke(app, [*argv, *extra])
        assert done.exit_code == 2 and "--run-dir" in done.output and "is a file" in done.output, done.output
    assert a_file.read_text() == "mine"
    sweep_dir = tmp_path / "sweep"  # a sweep's folder: the run's files among its runs, status would show the sweep
    sweep_dir.mkdir()
    (sweep_dir / "sweep.json").write_text('{"name": "s", "runs": []}')
    done = CliRunner().invoke(app, ["train", "--config", str(tiny_config_file()), "--run-dir", str(sweep_dir)])
    assert done.exit_code == 2 and "a sweep's folder, not a run dir" in done.output, done.output
    assert [p.name for p in sweep_dir.iterdir()] == ["sweep.json"]
