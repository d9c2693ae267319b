"""IWSLT14 De-En: the golden check against fairseq's own prepare-iwslt14.sh output, and the full recipe on a
small release-shaped archive (real dev/test XML, training text made from real segments)."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.commands.data import data_app
from prelnx.data import bpe, iwslt14
from prelnx.data.output import text_path
from prelnx.data.textio import tok_path
from prelnx.data.textio import seg_lines, sha256_file
from prelnx.data.workers import Workers
from tests.conftest import SHARED

RAW = SHARED / "data" / "iwslt14" / "raw-devtest"
FAIRSEQ = SHARED / "data" / "iwslt14" / "fairseq-prepared"


def _need_shared() -> None:
    if not (RAW.is_dir() and FAIRSEQ.is_dir()):
        pytest.skip(f"shared data absent: {RAW} and {FAIRSEQ} (see ../shared/data/SOURCES.md)")


def _lines(path):
    return path.read_text(encoding="utf-8").split("\n")


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """The test split prepared from the raw XML with fairseq's own BPE code."""
    _need_shared()
    folder = tmp_path_factory.mktemp("iwslt14-test")
    sources = iwslt14.gather(str(RAW), folder / "work", splits=["test"])
    with Workers(2) as workers:
        iwslt14.write_text(sources, folder, workers, splits=["test"])
        bpe.encode(folder, splits=["test"], languages=iwslt14.LANGUAGES, given=FAIRSEQ / "code", merges=0,
                   workers=workers)  # fmt: skip
    return folder


@pytest.mark.parametrize("lang", ["de", "en"])
def test_golden_tokenized_test_equals_fairseq_tmp(golden, lang):
    ours, theirs = _lines(tok_path(golden, "test", lang)), _lines(FAIRSEQ / "tmp" / f"test.{lang}")
    assert len(ours) == len(theirs) == 6751  # 6,750 lines and the final newline
    different = [i + 1 for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert different == [], f"{len(different)} lines differ from fairseq's tmp/test.{lang}, first: {different[:5]}"


@pytest.mark.parametrize("lang", ["de", "en"])
def test_golden_bpe_test_equals_fairseq_test(golden, lang):
    assert sha256_file(text_path(golden, "test", lang)) == sha256_file(FAIRSEQ / f"test.{lang}")


def _release_archive(path, *, drop: str | None = None) -> None:
    """A de-en.tgz shaped like the release: the real dev/test XML, and train.tags made of tst2012's segments
    wrapped in the release's metadata lines (which the recipe must drop)."""
    members = {}
    for xml in RAW.glob("*.xml"):
        members[f"de-en/{xml.name}"] = xml.read_bytes()
    for lang in ("de", "en"):
        segments = list(seg_lines(_lines(RAW / f"IWSLT14.TED.tst2012.de-en.{lang}.xml")))
        head = [
            "<url>http://www.ted.com/talks/x.html</url>",
            "<keywords>talks</keywords>",
            "<speaker>Someone</speaker>",
            "<talkid>1</talkid>",
            f"<title>Title {lang}</title>",
            f"<description>TED Talk {lang}</description>",
        ]
        members[f"de-en/train.tags.de-en.{lang}"] = ("\n".join(head + segments) + "\n").encode()
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            if drop and name.endswith(drop):
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


@pytest.mark.slow  # the whole recipe, BPE learning and fairseq's binarizer included
def test_full_recipe_from_an_archive(tmp_path):
    _need_shared()
    archive = tmp_path / "de-en.tgz"
    _release_archive(archive)
    out = tmp_path / "iwslt14"
    args = ["prepare", "iwslt14", "--source", str(archive), "--out", str(out), "--bpe-merges", "300", "--jobs", "2"]
    result = CliRunner().invoke(data_app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    lines = manifest["lines"]
    # train.tags: 1,700 segments and the header lines the filter keeps; every 23rd cleaned pair is valid
    train, valid = lines["train"]["de"], lines["valid"]["de"]
    assert lines["test"] == {"de": 6750, "en": 6750}
    assert valid == (train + valid) // 23 and lines["train"]["en"] == train
    kept = _lines(tok_path(out, "train", "de"))
    assert not any("<url>" in line or "talkid" in line or "keywords" in line for line in kept)
    assert "title de" in kept and "ted talk de" in kept  # the tags go, their text stays (lowercased)
    assert manifest["bpe"]["merges"] == 300 and manifest["bpe"]["sha256"] == sha256_file(out / "code")
    assert manifest["command"].startswith("prelnx data prepare iwslt14 --source")
    assert manifest["sources"]["files"]["de-en.tgz"]["sha256"] == sha256_file(archive)
    for name, entry in manifest["files"].items():
        assert sha256_file(out / name) == entry["sha256"], name
    assert {"dict.de.txt", "dict.en.txt", "train.de-en.de.bin", "test.de-en.en.idx"} <= set(manifest["files"])
    # the same command again finds the preparation complete and does nothing
    again = CliRunner().invoke(app, ["data", *args])  # the whole CLI: its console shows the line
    assert again.exit_code == 0 and "already holds iwslt14" in again.output


def test_archive_missing_a_member_is_one_clear_error(tmp_path):
    _need_shared()
    archive = tmp_path / "de-en.tgz"
    _release_archive(archive, drop="IWSLT14.TED.tst2011.de-en.en.xml")
    out = tmp_path / "out"
    args = ["prepare", "iwslt14", "--source", str(archive), "--out", str(out), "--jobs", "1"]
    result = CliRunner().invoke(data_app, args)
    assert result.exit_code == 2
    assert "lacks IWSLT14.TED.tst2011.de-en.en.xml" in result.output and "Traceback" not in result.output
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["de-en.tgz"]


def test_a_dry_run_refuses_the_source_and_out_the_run_refuses(tmp_path):
    """--dry-run checks what the run would check first: a --source that is not there or not a folder or archive, an
    --out that is not a preparation; each the same line and exit 2 as the run's."""
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "file").write_text("theirs\n")
    for source, out, says in ((tmp_path / "nowhere", tmp_path / "out", "no such file or folder"),
                              (tmp_path / "notes.txt", tmp_path / "out", "expected a folder or an archive"),
                              (tmp_path, tmp_path / "theirs", "exists and is not a prepared data folder")):
        args = ["prepare", "iwslt14", "--source", str(source), "--out", str(out), "--jobs", "1"]
        dry, real = (CliRunner().invoke(data_app, [*args, *extra]) for extra in (["--dry-run"], []))
        assert dry.exit_code == real.exit_code == 2 and says in dry.output and dry.output == real.output, dry.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "theirs"]
