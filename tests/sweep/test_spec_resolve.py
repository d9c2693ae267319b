"""resolve_spec: what `prelnx sweep --config X [--grid ...] [--set ...] [--name ...]` runs (no training)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prelnx.config.load import ConfigError
from prelnx.exits import Refusal
from prelnx.sweep.spec import expand, resolve_spec


def test_a_grid_on_a_training_config_is_named_after_its_run_name_plus_grid(tiny_config_file, tmp_path):
    base = tiny_config_file()
    spec = resolve_spec(base, ["optimizer.betas=[0.9,0.98],[0.9,0.999]"], ["train.max_epoch=1"], None)
    assert spec.name == "tiny-grid" and spec.fixed == {"train.max_epoch": 1}
    points = expand(spec)
    assert [p.config.optimizer.betas for p in points] == [(0.9, 0.98), (0.9, 0.999)]
    assert [p.name for p in points] == ["betas-0.9-0.98", "betas-0.9-0.999"]
    # recorded as lists, as YAML gives them: summary.csv writes str(value), and a tuple would read "(0.9, 0.98)"
    assert [p.overrides for p in points] == [{"optimizer.betas": [0.9, 0.98]}, {"optimizer.betas": [0.9, 0.999]}]


def test_command_line_grid_and_set_extend_a_spec_file(tiny_config_file, tmp_path):
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(yaml.safe_dump({"name": "s", "base": str(tiny_config_file()),
                                         "grid": {"optimizer.lr": [0.001, 0.002]}}))  # fmt: skip
    spec = resolve_spec(spec_file, ["train.seed=1,2"], ["train.max_epoch=1"], "renamed")
    assert spec.name == "renamed" and spec.grids == [{"optimizer.lr": [0.001, 0.002], "train.seed": [1, 2]}]
    assert len(expand(spec)) == 4


def test_a_misspelt_key_is_named_with_a_suggestion(tiny_config_file):
    with pytest.raises(ConfigError, match=r"optimizer\.lrr: unknown key; did you mean optimizer\.lr\?"):
        expand(resolve_spec(tiny_config_file(), ["optimizer.lrr=1,2"], [], None))
    with pytest.raises(ConfigError, match="--grid optimizer.lr: expected KEY=V1,V2"):
        resolve_spec(tiny_config_file(), ["optimizer.lr"], [], None)
    with pytest.raises(ConfigError) as raised:  # one problem of every point: said once, naming the points
        expand(resolve_spec(tiny_config_file(), ["optimizer.lrr=1,2,3", "train.seed=1,2"], [], None))
    assert str(raised.value).count("unknown key") == 1 and str(raised.value).count("run {") == 6, str(raised.value)


def test_trainings_and_sweeps_never_land_in_each_others_folders(tmp_path, monkeypatch):
    """The naming rule (plan/launch.py): `prelnx train` -> runs/train/<run name>, `prelnx sweep` -> runs/<sweep>,
    a --grid sweep flattened so that it is never inside another sweep's folder."""
    from prelnx.config.load import load_config
    from prelnx.plan.launch import default_run_dir, sweep_dir
    from prelnx.sweep.execute import plan_sweep

    monkeypatch.chdir(tmp_path)
    config, path = load_config("demo/preln_nowarmup.yaml")
    assert default_run_dir(config) == Path("runs/train/demo/preln_nowarmup")
    demo, _ = plan_sweep(resolve_spec(path.parents[1] / "sweeps" / "demo.yaml", [], [], None), None)
    grid, _ = plan_sweep(resolve_spec(path.parent / "postln_warmup.yaml", ["optimizer.lr=1e-3,2e-3"], [], None), None)
    assert demo == Path("runs/demo") and grid == Path("runs/demo-postln_warmup-grid")
    folders = [default_run_dir(config), demo, grid]
    for a in folders:
        for b in folders:
            assert a == b or not a.is_relative_to(b), (a, b)
    with pytest.raises(Refusal, match="runs/train/ holds single trainings"):
        sweep_dir("train")


def test_a_specs_slurm_section_is_the_typed_request_of_each_runs_job_and_a_typo_is_an_error(tiny_config_file, tmp_path):
    from prelnx.sweep.executors import sweep_request

    spec_file = tmp_path / "s.yaml"
    data = {"name": "s", "base": str(tiny_config_file()), "grid": {"optimizer.lr": [0.001, 0.002]},
            "slurm": {"partition": "cpu", "cpus_per_run": 2, "mem_gb_per_run": 4, "time_min": 30}}
    spec_file.write_text(yaml.safe_dump(data))
    spec = resolve_spec(spec_file, [], [], None)
    request = sweep_request(spec.slurm)  # prelnx sweep's flags would be merged over spec.slurm first
    assert (request.nodes, request.tasks_per_node, request.cpus_per_task, request.mem_gb, request.time_min,
            request.partition, request.array_parallelism) == (1, 1, 2, 4, 30, "cpu", 64)  # fmt: skip
    assert request.gpus_per_node == 0  # a CPU sweep asks no GPU; a cuda one a GPU per run unless told (train's rule)
    assert sweep_request(spec.slurm, cuda=True).gpus_per_node == 1
    assert sweep_request({**spec.slurm, "gpus_per_run": 0}, cuda=True).gpus_per_node == 0
    parameters = request.parameters("s")
    assert parameters["cpus_per_task"] == 2 and parameters["timeout_min"] == 30 and parameters["mem_gb"] == 4
    assert parameters["slurm_partition"] == "cpu" and parameters["slurm_array_parallelism"] == 64
    data["slurm"] = {"cpus_per_rn": 2, "time_min": 0}
    spec_file.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as refused:
        resolve_spec(spec_file, [], [], None)
    assert str(spec_file) in str(refused.value) and "slurm.cpus_per_rn: unknown" in str(refused.value)
    assert "slurm.time_min: expected a positive integer, got 0" in str(refused.value)
