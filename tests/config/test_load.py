"""Config loading: every shipped config validates; bad input is one clear error naming file, key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prelnx.config.load import CONFIGS_DIR, ConfigError, find_config, load_config
from prelnx.sweep.execute import plan_sweep
from prelnx.sweep.spec import is_sweep_file, load_spec

ALL_YAML = sorted(CONFIGS_DIR.rglob("*.yaml"))
SHIPPED = [p for p in ALL_YAML if not is_sweep_file(p)]
SWEEPS = [p for p in ALL_YAML if is_sweep_file(p)]


def test_configs_are_found_recursively():
    assert len(SHIPPED) >= 15
    assert {"iwslt_preln.yaml", "postln_warmup.yaml", "preln_nowarmup.yaml"} <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(CONFIGS_DIR)))
def test_every_shipped_config_validates(path: Path):
    config, _ = load_config(path)
    assert config.name


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: str(p.relative_to(CONFIGS_DIR)))
def test_every_shipped_sweep_expands_into_valid_runs(path: Path):
    points = plan_sweep(load_spec(path), None)[1]  # the sweep's own expansion (named arms to their last look)
    assert len(points) >= 2 and len({p.name for p in points}) == len(points)


def test_paper_configs_transcribe_the_paper():
    preln, _ = load_config("iwslt_preln.yaml")
    assert (preln.model.layout, preln.model.arch, preln.optimizer.lr) == ("pre", "transformer_iwslt_de_en", 5e-4)
    assert (preln.schedule.warmup_updates, preln.schedule.decay, preln.schedule.step_epochs) == (0, "step", [8])
    assert preln.optimizer.betas == (0.9, 0.98) and preln.train.max_tokens == 4096
    assert (preln.model.dropout, preln.train.label_smoothing) == (0.1, 0.1)
    assert (preln.eval.bleu.beam, preln.eval.bleu.lenpen) == (5, 1.2)
    post, _ = load_config("iwslt14/postln_warmup.yaml")
    assert (post.model.layout, post.schedule.warmup_updates, post.schedule.decay) == ("post", 4000, "inverse_sqrt")
    wmt, _ = load_config("wmt14/preln_nowarmup_lr1.5e-3.yaml")
    assert (wmt.model.layout, wmt.optimizer.lr, wmt.schedule.decay_start_epoch) == ("pre", 1.5e-3, 6)


def test_bare_name_is_looked_up_under_configs(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert find_config("iwslt_preln.yaml") == CONFIGS_DIR / "iwslt_preln.yaml"
    assert find_config("preln_warmup.yaml") == CONFIGS_DIR / "iwslt14" / "preln_warmup.yaml"
    with pytest.raises(ConfigError, match="ambiguous"):
        find_config("base.yaml")
    with pytest.raises(ConfigError, match="no such config"):
        find_config("nope.yaml")
    (tmp_path / "runs").mkdir()
    with pytest.raises(ConfigError, match=r"^runs: a folder, not a config file"):  # not "no such config file"
        find_config("runs")


def test_base_inheritance_and_set_overrides(tmp_path):
    (tmp_path / "parent.yaml").write_text("model: {layout: pre}\noptimizer: {lr: 1.0e-3}\ntrain: {max_epoch: 3}\n")
    child = tmp_path / "child.yaml"
    child.write_text("base: parent.yaml\noptimizer: {name: radam}\n")
    config, _ = load_config(child, ["optimizer.lr=2e-3", "schedule.step_epochs=[2, 3]", "schedule.decay=step"])
    assert (config.model.layout, config.optimizer.name, config.optimizer.lr) == ("pre", "radam", 2e-3)
    assert config.schedule.step_epochs == [2, 3]
    assert config.name == "child"


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"train": {"max_epoch": 1}, **data}))
    return path


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"model": {"layuot": "pre"}}, "model.layuot: unknown key; did you mean model.layout?"),
        ({"model": {"layout": "middle"}}, "model.layout: expected one of 'post', 'pre', 'deepnorm', 'admin', 'tfixup', 'rezero', 'rezero_postln', 'b2t', 'peri', 'reorder', 'mixln', 'residual', 'lnscale', got 'middle'"),
        ({"optimizer": {"name": "adagrad"}}, "optimizer.name: expected one of 'adam', 'sgd', 'radam'"),
        ({"optimizer": {"lr": "fast"}}, "optimizer.lr: expected a number, got 'fast'"),
        ({"optimizer": {"lr": -1}}, "optimizer.lr: must be > 0"),
        ({"optimizer": {"betas": [0.9]}}, "optimizer.betas: expected a list"),
        ({"schedule": {"warmup_updates": 1.5}}, "schedule.warmup_updates: expected an integer, got 1.5"),
        ({"schedule": {"warmup_updates": True}}, "schedule.warmup_updates: expected an integer, got True"),  # no bool
        ({"model": {"dropout": False}}, "model.dropout: expected a number, got False"),
        ({"schedule": {"decay": "step"}}, "schedule.step_epochs: decay: step needs at least one epoch"),
        ({"schedule": {"decay": "cosine"}}, "schedule.decay: expected one of"),
        ({"train": {"max_epoch": None}}, "train.max_epoch: set train.max_epoch or train.max_update"),
        ({"train": {"max_epoch": 1, "precision": "fp8"}}, "train.precision: expected one of 'fp32', 'fp16', 'bf16'"),
        ({"train": {"max_epoch": 1, "device": "cpu", "precision": "fp16"}}, "fp16 needs a GPU"),
        ({"model": {"arch": "lstm"}}, "model.arch: unknown preset 'lstm'"),
        ({"data": {"dataset": "imagenet"}}, "data.dataset: expected one of 'synthetic'"),
        ({"eval": {"bleu": {"beam": 0}}}, "eval.bleu.beam: must be >= 1"),
        ({"model": {"embed_dim": 30, "attention_heads": 4}}, "model.attention_heads: must divide model.embed_dim"),
        ({"model": {"embed_dim": 32, "attention_heads": 0}}, "model.attention_heads: must be >= 1 or null, got 0"),
        ({"model": {"layout": "admin", "admin_init": "guess"}}, "model.admin_init: expected one of 'profile', 'closed_form'"),
        ({"model": {"layout": "tfixup", "norm": "rmsnorm"}}, "model.norm: layout: tfixup is built as its authors built it"),
        ({"model": {"layout": "b2t", "qk_norm": True}}, "model.qk_norm: layout: b2t is built as its authors built it"),
        ({"schedule": {"decay": "constant", "decay_period": 4000}},
         "schedule.decay_period: only decay: inverse_sqrt uses it; schedule.decay is constant"),
        ({"schedule": {"decay": "inverse_sqrt", "decay_period": 0}}, "schedule.decay_period: must be >= 1"),
        ({"schedule": {"decay": "inverse_sqrt", "decay_period": 4000, "decay_start_update": 4000}},
         "schedule.decay_period: set one of decay_period, decay_start_update, decay_start_epoch, not several"),
        ({"task": "masked_lm", "model": {"arch": "roberta_base", "layout": "admin"}, "eval": {"every_updates": 10}},
         "model.layout: task: masked_lm has layouts post, pre (admin is translation only), got 'admin'"),
    ],
)
def test_bad_values_name_file_key_and_what_is_allowed(tmp_path, data, expected):
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert expected in str(error.value)
    assert str(path) in str(error.value)


def test_all_problems_are_reported_at_once(tmp_path):
    path = write(tmp_path, {"model": {"layout": "x", "bogus": 1}, "optimizer": {"lr": "y"}})
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert "model.layout" in message and "model.bogus" in message and "optimizer.lr" in message


def test_a_bad_type_and_a_bad_range_are_reported_together(tmp_path):
    """Range checks run beside the type checks (was: a bad optimizer.name hid optimizer.lr: -1); a check that reads a
    key of the wrong type, which holds its default there, says nothing rather than something about the default."""
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, {"optimizer": {"name": "adamm", "lr": -1}}))
    assert "optimizer.name: expected one of" in str(error.value) and "optimizer.lr: must be > 0" in str(error.value)
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, {"optimizer": {"name": "sgdd", "momentum": 0.9}}))
    assert str(error.value).count("\n") == 1 and "optimizer.name: expected one of" in str(error.value)  # not "is adam"


def test_set_errors_name_the_override(tmp_path):
    path = write(tmp_path, {})
    with pytest.raises(ConfigError, match=r"--set optimizer.lr=abc: optimizer.lr: expected a number"):
        load_config(path, ["optimizer.lr=abc"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        load_config(path, ["optimizer.lr"])


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("model:\n  layout: [pre\n")
    with pytest.raises(ConfigError, match=r"broken.yaml line \d+: not valid YAML"):
        load_config(path)


def test_base_cycle_is_an_error(tmp_path):
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "a.yaml")
