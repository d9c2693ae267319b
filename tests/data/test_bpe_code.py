"""The BPE code's manifest entry counts merges, never subword-nmt's `#version` header: for a code file given with
--bpe-code (with or without the header) and for one learned on the training text."""

from __future__ import annotations

from prelnx.data import bpe
from prelnx.data.textio import sha256_file, tok_path
from prelnx.data.workers import Workers

MERGES = ["t h", "th e</w>", "a n", "an d</w>"]


def _encode(folder, given=None, merges=0):
    with Workers(1) as workers:
        return bpe.encode(folder, splits=[], languages=("de", "en"), given=given, merges=merges, workers=workers)


def test_a_given_code_counts_its_merges_with_or_without_the_version_header(tmp_path):
    for name, head in (("with-header", ["#version: 0.2"]), ("bare", [])):
        folder, given = tmp_path / name, tmp_path / f"{name}.code"
        folder.mkdir()
        given.write_text("\n".join(head + MERGES) + "\n", encoding="utf-8")
        entry = _encode(folder, given=given)
        assert entry["merges"] == len(MERGES), name
        assert entry["from"] == str(given) and entry["sha256"] == sha256_file(given)
        assert (folder / "code").read_bytes() == given.read_bytes()


def test_a_learned_code_counts_the_lines_after_its_version_header(tmp_path):
    (tmp_path / "text" / "tok").mkdir(parents=True)
    words = "the and than then there these those hand band sand land"
    for lang in ("de", "en"):
        tok_path(tmp_path, "train", lang).write_text((words + "\n") * 20, encoding="utf-8")
    entry = _encode(tmp_path, merges=6)
    lines = (tmp_path / "code").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#version")
    assert entry["merges"] == len(lines) - 1 > 0
    assert entry["learned_on"] == "train"
