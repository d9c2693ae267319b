"""The unigram plateau is read from the data the run trained on: data.path, or the synthetic task's cache folder."""

from __future__ import annotations

import math

from dataclasses import replace

import pytest

from prelnx.config.load import load_config
from prelnx.plan.data import data_dir
from prelnx.records.run_config import RunConfigError, read_run_config, write_run_config
from prelnx.report.arms import load_arms
from prelnx.report.plateau import find_plateau
from tests.report.runs import PLATEAU_WORDS, write_dictionary


def unigram_plateau(config):
    """The plateau as the report finds it for a run (report.arms.load_arms: the folder the run trained on)."""
    found = find_plateau(config, data_dir(config))
    return None if found is None else found.bits


def test_a_synthetic_runs_plateau_comes_from_its_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PRELNX_DATA_HOME", str(tmp_path / "cache"))
    config, _ = load_config("configs/demo/postln_warmup.yaml")
    write_run_config(tmp_path / "run", config)
    saved = read_run_config(tmp_path / "run")  # as the report reads a run dir's config.yaml
    assert saved.data.path is None and unigram_plateau(saved) is None  # nothing generated yet
    write_dictionary(data_dir(config), target="tgt")
    assert unigram_plateau(saved) == pytest.approx(math.log2(PLATEAU_WORDS))


def test_a_data_path_names_the_folder_the_plateau_is_read_from(tmp_path):
    config, _ = load_config("configs/demo/postln_warmup.yaml")
    write_dictionary(tmp_path / "bin", target="tgt")
    write_run_config(tmp_path / "run", replace(config, data=replace(config.data, path=str(tmp_path / "bin"))))
    assert unigram_plateau(read_run_config(tmp_path / "run")) == pytest.approx(math.log2(PLATEAU_WORDS))


def test_a_sweep_with_an_unreadable_run_config_is_one_error_naming_the_file(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("model: {layout: no-such-layout}\n")
    with pytest.raises(RunConfigError, match=r"run/config\.yaml: not a readable run config"):
        load_arms(tmp_path)


def test_a_dataset_without_target_lang_reads_its_own_target_dictionary(tmp_path):
    """IWSLT14's shipped configs name no data.target_lang: the plateau is read from fairseq's dict.en.txt (the
    dataset's target side), never from a dict.tgt.txt that no IWSLT14 preparation writes."""
    config, _ = load_config("configs/iwslt14/postln_warmup.yaml")
    assert config.data.target_lang is None
    config = replace(config, data=replace(config.data, path=str(tmp_path / "bin")))
    assert unigram_plateau(config) is None
    write_dictionary(tmp_path / "bin", target="en")
    assert unigram_plateau(config) == pytest.approx(math.log2(PLATEAU_WORDS))
    assert find_plateau(config, data_dir(config)).source == "dict.en.txt"


def test_the_sweeps_copy_of_the_dictionary_comes_before_the_data_folders(tmp_path):
    """The order the module's docstring promises: the sweep's copy first (a report rebuilds to the same bytes
    anywhere), then the data folder's dictionary."""
    config, _ = load_config("configs/demo/postln_warmup.yaml")
    config = replace(config, data=replace(config.data, path=str(tmp_path / "bin")))
    write_dictionary(tmp_path / "bin", target="tgt")  # 316 words
    (tmp_path / "sweep" / "data").mkdir(parents=True)
    (tmp_path / "sweep" / "data" / "dict.tgt.txt").write_text("".join(f"w{i} 10\n" for i in range(64)))
    found = find_plateau(config, data_dir(config), tmp_path / "sweep")
    assert found.bits == pytest.approx(6.0) and found.source == "dict.tgt.txt, the sweep's copy"
    assert find_plateau(config, data_dir(config)).bits == pytest.approx(math.log2(PLATEAU_WORDS))
