"""The unigram plateau is read from the data the run trained on: data.path, or the synthetic task's cache folder."""

from __future__ import annotations

import math

import pytest
import yaml

from prelnx.config.load import config_to_dict, load_config
from prelnx.plan.data import data_dir
from prelnx.report.arms import unigram_plateau
from tests.report.runs import PLATEAU_WORDS, write_dictionary


def test_a_synthetic_runs_plateau_comes_from_its_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PRELNX_DATA_HOME", str(tmp_path / "cache"))
    config, _ = load_config("configs/demo/postln_warmup.yaml")
    saved = yaml.safe_load(yaml.safe_dump(config_to_dict(config)))  # as a run dir's config.yaml holds it
    assert saved["data"].get("path") is None and unigram_plateau(saved) is None  # nothing generated yet
    write_dictionary(data_dir(config), target="tgt")
    assert unigram_plateau(saved) == pytest.approx(math.log2(PLATEAU_WORDS))


def test_an_unreadable_config_has_no_plateau_rather_than_a_guess():
    assert unigram_plateau({"model": {"layout": "no-such-layout"}, "data": {}}) is None
