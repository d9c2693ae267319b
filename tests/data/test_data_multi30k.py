"""Multi30k de-en task 1 from the shared folder: official split sizes, agreement with the official tokenized
release, a manifest that matches the files, and a folder `prelnx train` accepts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from prelnx.commands.data import data_app
from prelnx.config.load import load_config
from prelnx.data.textio import tok_path
from prelnx.data.textio import read_lines, sha256_file
from prelnx.launch.prepare import ensure_data
from tests.conftest import SHARED

MULTI30K = SHARED / "data" / "multi30k"


# prepares the real Multi30k (tokenize, learn BPE, binarize): seconds, so not in the quick tier
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    if not MULTI30K.is_dir():
        pytest.skip(f"shared data absent: {MULTI30K} (see ../shared/data/SOURCES.md)")
    out = tmp_path_factory.mktemp("m30k") / "multi30k.de-en"
    merges = ["--bpe-merges", "500"]  # fewer than the default 10,000, only to keep the test fast
    args = ["prepare", "multi30k", "--source", str(MULTI30K), "--out", str(out), *merges, "--jobs", "2"]
    result = CliRunner().invoke(data_app, args)
    assert result.exit_code == 0, result.output
    return out


def test_official_split_sizes_and_manifest(prepared):
    manifest = json.loads((prepared / "manifest.json").read_text())
    assert manifest["lines"] == {
        "train": {"de": 29000, "en": 29000},
        "valid": {"de": 1014, "en": 1014},
        "test": {"de": 1000, "en": 1000},
    }
    assert manifest["languages"] == {"source": "de", "target": "en"}
    assert manifest["bpe"] == {
        "code": "code",
        "sha256": sha256_file(prepared / "code"),
        "merges": 500,
        "learned_on": "train",
    }
    assert {"sacremoses", "subword-nmt", "fairseq", "python"} <= set(manifest["tools"])
    for name, entry in manifest["files"].items():
        assert sha256_file(prepared / name) == entry["sha256"], name
    assert "train.gz" not in manifest["sources"]["files"] and "train.de.gz" in manifest["sources"]["files"]


@pytest.mark.parametrize("lang", ["de", "en"])
def test_tokenization_agrees_with_the_official_tokenized_release(prepared, lang):
    """The official lc.norm.tok files came from an older tokenizer.perl that kept a final "a." or "28." whole
    (12 German lines); every other line is identical."""
    ours = list(read_lines(tok_path(prepared, "train", lang)))
    official = list(read_lines(MULTI30K / "tok" / f"train.lc.norm.tok.{lang}"))
    different = [(a, b) for a, b in zip(ours, official, strict=True) if a != b]
    assert len(different) == {"de": 12, "en": 0}[lang]
    assert all(a == b[:-1] + " ." for a, b in different)


def test_train_accepts_the_folder(prepared, tiny_config_file):
    config, _ = load_config(str(tiny_config_file(data={"dataset": "multi30k", "path": str(prepared)})), [])
    assert ensure_data(config) == prepared
