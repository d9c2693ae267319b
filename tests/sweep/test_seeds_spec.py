"""A spec's arms: and seeds: (prelnx/sweep/seeds.py, spec.py): checked at load in one line naming the key, named
arms crossed with the grid, two names for one config refused, old specs unchanged, and --seeds winning."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.config.load import ConfigError
from prelnx.sequential import SeedPlan
from prelnx.sweep.execute import armed, plan_sweep
from prelnx.sweep.spec import arm_runs, expand, expand_arms, load_spec, resolve_spec

runner = CliRunner()


def write(tmp_path, base, **keys):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "base": str(base), **keys}, sort_keys=False))
    return path


def test_named_arms_crossed_with_the_grid(tiny_config_file, tmp_path):
    spec = load_spec(write(tmp_path, tiny_config_file(), grid={"model.layout": ["post", "pre"]},
                           arms={"cold": {"schedule.warmup_updates": 0}, "warm": {"schedule.warmup_updates": 10}},
                           seeds={"looks": [2, 3], "method": "pocock"}))  # fmt: skip
    arms = expand_arms(spec)
    assert [a.name for a in arms] == ["layout-post_cold", "layout-post_warm", "layout-pre_cold", "layout-pre_warm"]
    assert arms[3].overrides == {"model.layout": "pre", "schedule.warmup_updates": 10}
    assert spec.plan == SeedPlan((2, 3), "pocock")
    runs = arm_runs(spec, arms, spec.plan.seeds_at(0))
    assert [r.name for r in runs][:2] == ["layout-post_cold_seed-1", "layout-post_warm_seed-1"]  # first seeds first
    assert runs[-1].config.train.seed == 2 and runs[-1].config.name == "s/layout-pre_warm_seed-2"
    assert len(plan_sweep(spec, tmp_path / "out")[1]) == 12  # every run the plan may cost: 4 arms x 3 seeds


def test_arms_without_seeds_run_the_base_configs_seed(tiny_config_file, tmp_path):
    arms = {"cold": {"schedule.warmup_updates": 0}, "warm": {"schedule.warmup_updates": 10}}
    spec = load_spec(write(tmp_path, tiny_config_file(train={"seed": 7}), arms=arms))
    named, plan = armed(spec)
    assert [a.name for a in named] == ["cold", "warm"] and plan == SeedPlan((1,), seeds=(7,))  # one seed: the base's
    runs = plan_sweep(spec, tmp_path / "out")[1]
    assert [r.name for r in runs] == ["cold_seed-7", "warm_seed-7"] and [r.config.train.seed for r in runs] == [7, 7]


def test_two_names_for_one_config_are_refused(tiny_config_file, tmp_path):
    spec = load_spec(write(tmp_path, tiny_config_file(), arms={"a": {"optimizer.lr": 0.003}, "b": {}}, seeds=[1, 2]))
    with pytest.raises(ConfigError, match="arms a and b are one config"):
        expand_arms(spec)  # the base's lr is 0.003: b is a under another name


@pytest.mark.parametrize(("keys", "message"), [
    ({"arms": {"a": {}}, "seeds": {"looks": [4, 3]}}, "seeds.looks: [4, 3]: must increase"),
    ({"arms": {"a": {}}, "seeds": {"looks": [4, 6], "method": "haybittle"}}, "seeds.method: 'haybittle': allowed"),
    ({"arms": {"a": {}}, "seeds": {"looks": [4, 6], "alpha": 0.05}}, "seeds.alpha: unknown"),
    ({"arms": {"a": {}}, "seeds": "many"}, "seeds: expected a list of seeds"),
    ({"arms": {"a": {}}, "seeds": [1, 1]}, "a seed is listed twice"),
    ({"arms": {"a": {}}, "seeds": {"looks": [2, 3], "seeds": 3}},
     "seeds.seeds: expected a list of integer seeds, got 3"),  # a count is no order
    ({"arms": {"a": {}}, "seeds": {"looks": [2, 3], "seeds": [4, 4, 5]}},
     "seeds.seeds: [4, 4, 5]: a seed is listed twice"),
    ({"arms": {"a b": {}}}, "arms.a b: an arm's name is letters"),
    ({"arms": {"a": {"train.seed": 3}}}, "arms.a: train.seed is set by seeds:"),
    ({"arms": {"a": {}}, "grid": {"train.seed": [1, 2]}}, "train.seed in grid:/set: and arms:/seeds: in one spec"),
])
def test_bad_sections_are_one_line_naming_the_key(tiny_config_file, tmp_path, keys, message):
    with pytest.raises(ConfigError, match=None) as error:
        load_spec(write(tmp_path, tiny_config_file(), **keys))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_bad_plan_is_exit_2_without_a_traceback(tiny_config_file, tmp_path):
    path = write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds={"looks": [1, 2]})
    result = runner.invoke(app, ["sweep", "-c", str(path), "--dry-run"])
    assert result.exit_code == 2 and "seeds.looks: [1, 2]: expected" in result.output
    assert "Traceback" not in result.output


def test_a_plans_seeds_is_a_list_of_seeds_never_a_count(tiny_config_file, tmp_path):
    listed = write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds={"looks": [2, 3], "seeds": [7, 8, 9]})
    assert load_spec(listed).plan == SeedPlan((2, 3), seeds=(7, 8, 9))  # the order the seeds are added in
    missing = write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds={"looks": [2, 3]})
    assert load_spec(missing).plan.order == (1, 2, 3)
    count = write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds={"looks": [2, 3], "seeds": 3})
    result = runner.invoke(app, ["sweep", "-c", str(count), "--dry-run"])
    assert result.exit_code == 2 and "seeds.seeds: expected a list of integer seeds, got 3" in result.output
    assert "Traceback" not in result.output


def test_an_old_spec_is_unchanged_and_seeds_win(tiny_config_file, tmp_path):
    old = write(tmp_path, tiny_config_file(), grid={"model.layout": ["post", "pre"], "train.seed": [1, 2]})
    spec = resolve_spec(old, [], [], None)
    assert not spec.armed and [p.name for p in expand(spec)][:2] == ["layout-post_seed-1", "layout-post_seed-2"]
    axis = resolve_spec(old, [], [], None, seeds=(5,))  # an old spec: --seeds is the train.seed axis, and wins
    assert [p.overrides["train.seed"] for p in expand(axis)] == [5, 5]
    armed = write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds={"looks": [4, 6]})
    assert resolve_spec(armed, [], [], None, seeds=(1, 2, 3)).plan == SeedPlan((3,), seeds=(1, 2, 3))
    help_text = runner.invoke(app, ["sweep", "--help"]).output
    assert "wins over the spec's seeds:" in " ".join(help_text.split())


def test_a_plan_of_one_says_one_run_one_arm_one_seed(tiny_config_file, tmp_path):
    """Counts are printed with their noun's number: `1 run`, never `1 runs`."""
    armed = runner.invoke(app, ["sweep", "-c", str(write(tmp_path, tiny_config_file(), arms={"a": {}}, seeds=[1])),
                                "--dry-run"])  # fmt: skip
    assert armed.exit_code == 0 and "1 arm; seeds:" in armed.output, armed.output
    assert "first look: 1 run: " in armed.output and "at most: 1 run (1 arm x 1 seed)" in armed.output, armed.output
    grid = runner.invoke(app, ["sweep", "-c", str(tiny_config_file()), "--grid", "optimizer.lr=0.001", "--dry-run"])
    assert grid.exit_code == 0 and ": 1 run -> " in grid.output, grid.output
