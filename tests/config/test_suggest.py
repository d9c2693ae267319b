"""'Did you mean': by meaning for known aliases, by the last part's spelling otherwise; config files by their path."""

from __future__ import annotations

import pytest

from prelnx.config.load import CONFIGS_DIR, ConfigError, find_config, load_config

DEMO = CONFIGS_DIR / "demo" / "preln_nowarmup.yaml"


@pytest.mark.parametrize(
    "override, meant",
    [
        ("optimizer.learning_rate=1e-3", "optimizer.lr"),  # was: did you mean optimizer.name?
        ("schedule.warmup=100", "schedule.warmup_updates"),
        ("train.epochs=3", "train.max_epoch"),
        ("train.max_steps=30", "train.max_update"),
        ("model.d_model=64", "model.embed_dim"),
        ("train.lr=1e-3", "optimizer.lr"),  # the right name in the wrong section
        ("train.warmup_steps=10", "schedule.warmup_updates"),  # an alias of a key in another section
        ("model.layuot=pre", "model.layout"),  # spelling of the last part
        ("optimizer.betass=[0.9,0.98]", "optimizer.betas"),
        ("optimiser.lr=1e-3", "optimizer.lr"),  # a misspelt section
    ],
)
def test_unknown_keys_suggest_the_key_meant(override, meant):
    with pytest.raises(ConfigError) as error:
        load_config(DEMO, [override])
    key = override.split("=")[0]
    assert f"--set {override}: {key}: unknown key; did you mean {meant}?" in str(error.value)


def test_a_key_like_nothing_gets_no_suggestion():
    with pytest.raises(ConfigError) as error:
        load_config(DEMO, ["zzz.qqqqqq=1"])
    assert str(error.value).endswith("zzz.qqqqqq: unknown key")


def test_a_wrong_config_path_suggests_the_closest_files(monkeypatch, tmp_path):
    monkeypatch.chdir(CONFIGS_DIR.parent)
    with pytest.raises(ConfigError) as error:
        find_config("configs/demo/preln_nowarmpu.yaml")
    assert str(error.value).endswith("; did you mean configs/demo/preln_nowarmup.yaml?")
    with pytest.raises(ConfigError) as error:
        find_config("preln_nowarmpu.yaml")  # a bare name: every config of that name
    named = sorted(str(p.relative_to(CONFIGS_DIR.parent)) for p in CONFIGS_DIR.rglob("preln_nowarmup.yaml"))
    assert str(error.value).endswith(f"; did you mean {' or '.join(named[:4])}?") and len(named) >= 3  # at most 4
    own = tmp_path / "mine"
    own.mkdir()
    (own / "long_warmup.yaml").write_text("train: {max_epoch: 1}\n")
    with pytest.raises(ConfigError, match=f"did you mean {own / 'long_warmup.yaml'}"):
        find_config(own / "long_warmpu.yaml")  # a folder of the user's own: its files too
    with pytest.raises(ConfigError) as error:
        find_config("qqqqqqqq.yaml")
    assert "did you mean" not in str(error.value)


def test_a_wrong_base_suggests_the_closest_files(tmp_path):
    (tmp_path / "parent.yaml").write_text("train: {max_epoch: 1}\n")
    child = tmp_path / "child.yaml"
    child.write_text("base: parnet.yaml\n")
    with pytest.raises(ConfigError) as error:
        load_config(child)
    assert str(error.value).endswith(f"base: parnet.yaml not found (relative to {tmp_path} or under configs/); "
                                     f"did you mean {tmp_path / 'parent.yaml'}?")  # fmt: skip
