"""`prelnx data prepare custom` and bad input: each a clear `error:` line with exit code 2, and nothing
half-written left under the output name."""

from __future__ import annotations

import gzip
import json
import os

import pytest
from typer.testing import CliRunner

from prelnx.commands.data import data_app
from prelnx.data.output import text_path
from prelnx.data.textio import tok_path
from prelnx.data.textio import read_lines

runner = CliRunner()

SOURCE = [
    "Das ist ein kleines Haus.",
    "Der Hund schläft im Garten.",
    "Wir sehen uns morgen, oder?",
    'Ich habe "keine" Zeit.',
    "Die U.S.A. sind groß.",
]
TARGET = [
    "This is a small house.",
    "The dog sleeps in the garden.",
    "See you tomorrow, right?",
    'I have "no" time.',
    "The U.S.A. are big.",
]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path):
    files = {}
    for split, repeat in (("train", 40), ("valid", 2), ("test", 2)):
        files[f"{split}.de"] = _write(tmp_path / f"{split}.de", SOURCE * repeat)
        files[f"{split}.en"] = _write(tmp_path / f"{split}.en", TARGET * repeat)
    return files


def _args(files, out, *extra):
    args = ["prepare", "custom", "--out", str(out), "--source-lang", "de", "--target-lang", "en", "--jobs", "1"]
    for split in ("train", "valid", "test"):
        if f"{split}.de" in files:
            args += [f"--{split}-src", str(files[f"{split}.de"]), f"--{split}-tgt", str(files[f"{split}.en"])]
    return args + list(extra)


def _leftovers(folder):
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


def test_custom_with_tokenization_lowercasing_and_bpe(corpus, tmp_path):
    out = tmp_path / "bin"
    result = runner.invoke(
        data_app, _args(corpus, out, "--tokenize", "--lowercase", "--bpe-merges", "40", "--joined-dictionary")
    )
    assert result.exit_code == 0, result.output
    assert list(read_lines(tok_path(out, "train", "de")))[:5] == [
        "das ist ein kleines haus .",
        "der hund schläft im garten .",
        "wir sehen uns morgen , oder ?",
        "ich habe &quot; keine &quot; zeit .",
        "die u.s.a. sind groß .",
    ]
    assert "@@" in text_path(out, "train", "en").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["lines"] == {
        "train": {"de": 200, "en": 200},
        "valid": {"de": 10, "en": 10},
        "test": {"de": 10, "en": 10},
    }
    assert manifest["languages"] == {"source": "de", "target": "en"} and manifest["bpe"]["merges"] == 40
    assert (out / "dict.de.txt").read_text() == (out / "dict.en.txt").read_text()  # joined
    assert "--tokenize" in manifest["command"] and "--joined-dictionary" in manifest["command"]
    assert "it/s" not in result.output  # no progress bar off a terminal: subword-nmt's learning drew one
    assert result.output.strip().endswith(f"train on it: prelnx train --config ... --set data.dataset=custom --set "
                                          f"data.path={out} --set data.source_lang=de --set data.target_lang=en --set "
                                          f"eval.bleu.remove_bpe='@@ '")  # without them: 'not prepared', BPE'd BLEU
    assert _leftovers(tmp_path) == []


def test_custom_as_given_keeps_the_text(corpus, tmp_path):
    out = tmp_path / "bin"
    del corpus["test.de"], corpus["test.en"]
    result = runner.invoke(data_app, _args(corpus, out))
    assert result.exit_code == 0, result.output
    assert list(read_lines(text_path(out, "valid", "en"))) == TARGET * 2
    assert not (out / "code").exists() and not (out / "test.de-en.de.bin").exists()
    assert json.loads((out / "manifest.json").read_text())["bpe"] is None
    assert result.output.strip().endswith("--set data.source_lang=de --set data.target_lang=en")  # no BPE to remove
    from prelnx.config.load import load_config
    from prelnx.plan.data import data_problem

    config, _ = load_config("demo/base", ["data.dataset=custom", f"data.path={out}"])  # no languages: src, tgt
    assert data_problem(config) == (f"data.path: {out} holds dict.de.txt, dict.en.txt, not dict.src.txt, dict.tgt.txt: "
                                    "set data.source_lang and data.target_lang to the languages it was prepared for")


def _fails(args, *fragments):
    result = runner.invoke(data_app, args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    for fragment in fragments:
        assert fragment in errors[0], result.output
    return result


def test_different_line_counts_name_both_files_and_counts(corpus, tmp_path):
    _write(corpus["valid.en"], TARGET * 2 + ["one more"])
    _fails(_args(corpus, tmp_path / "bin"), f"{corpus['valid.de']} has 10 lines but {corpus['valid.en']} has 11 lines")
    assert not (tmp_path / "bin").exists() and _leftovers(tmp_path) == []


def test_an_empty_file(corpus, tmp_path):
    corpus["test.en"].write_text("")
    _fails(_args(corpus, tmp_path / "bin"), f"{corpus['test.en']} is empty")
    assert not (tmp_path / "bin").exists() and _leftovers(tmp_path) == []


def test_invalid_utf8_names_file_and_line(corpus, tmp_path):
    corpus["train.de"].write_bytes(b"Zeile eins\nZeile zwei\n" + "Gr\xfc\xdfe\n".encode("latin-1"))
    _fails(_args(corpus, tmp_path / "bin"), f"{corpus['train.de']}: line 3 is not valid UTF-8")
    assert not (tmp_path / "bin").exists() and _leftovers(tmp_path) == []


def test_invalid_utf8_inside_a_gzip_file(tmp_path):
    folder = tmp_path / "m30k"
    folder.mkdir()
    for stem in ("train", "val", "test_2016_flickr"):
        for lang in ("de", "en"):
            with gzip.open(folder / f"{stem}.{lang}.gz", "wb") as handle:
                handle.write(b"ok\n" if (stem, lang) != ("val", "en") else b"ok\n\xff\xfe\n")
    _fails(
        ["prepare", "multi30k", "--source", str(folder), "--out", str(tmp_path / "bin"), "--jobs", "1"],
        f"{folder / 'val.en.gz'}: line 2 is not valid UTF-8",
    )
    assert not (tmp_path / "bin").exists()


def test_unwritable_output_folder(corpus, tmp_path):
    blocker = _write(tmp_path / "a-file", ["x"])
    _fails(_args(corpus, blocker / "bin"), f"cannot write the output folder {blocker / 'bin'}")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        _fails(_args(corpus, locked / "bin"), "cannot write the output folder", "Permission denied")


def test_refuses_to_replace_a_foreign_folder_and_a_different_preparation(corpus, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    _write(foreign / "notes.txt", ["keep me"])
    _fails(_args(corpus, foreign), "is not a prepared data folder")
    assert (foreign / "notes.txt").is_file()
    out = tmp_path / "bin"
    assert runner.invoke(data_app, _args(corpus, out)).exit_code == 0
    _fails(_args(corpus, out, "--lowercase"), "already holds a different preparation", "--force")
    result = runner.invoke(data_app, _args(corpus, out, "--lowercase", "--force"))
    assert result.exit_code == 0, result.output
    assert list(read_lines(text_path(out, "train", "en")))[0] == "this is a small house."
    assert _leftovers(tmp_path) == []


def test_option_mistakes(corpus, tmp_path):
    _fails(
        ["prepare", "custom", "--train-src", str(corpus["train.de"]), "--out", str(tmp_path / "b")],
        "--train-src and --train-tgt go together",
    )
    _fails(["prepare", "custom", "--out", str(tmp_path / "b")], "needs --train-src and --train-tgt (training text,")
    _fails(_args(corpus, tmp_path / "b", "--valid-src", str(tmp_path)), f"--valid-src {tmp_path}: a folder, not a file")
    _fails(["prepare", "iwslt14", "--tokenize", "--out", str(tmp_path / "b")], "are for `custom`, not iwslt14")
    for option in (["--source-lang", "en"], ["--joined-dictionary"], ["--train-src", str(corpus["train.en"]),
                   "--train-tgt", str(corpus["train.de"])]):  # were ignored without a word  # fmt: skip
        _fails(["prepare", "text", "--source", str(corpus["train.en"]), *option, "--out", str(tmp_path / "b")],
               "are for `custom`, not text")
    _fails(_args(corpus, tmp_path / "b", "--bpe-code", str(tmp_path / "nope")), "--bpe-code", "no such file")
    for dataset, split in (("custom", "--valid-src/--valid-tgt"), ("iwslt14", "its release's")):  # were ignored
        _fails(["prepare", dataset, "--valid-lines", "5", "--out", str(tmp_path / "b")],
               f"--valid-lines is for text, not {dataset}: {dataset}'s validation split is {split}")
    _fails(
        ["prepare", "multi30k", "--source", str(tmp_path / "nowhere"), "--out", str(tmp_path / "b")],
        "no such file or folder",
        "--source /path/to/multi30k",
    )
    for lang in ("", "de/at"):  # were fairseq-preprocess's 'no such file' (exit 1) after the text was written
        _fails(_args(corpus, tmp_path / "b", "--source-lang", lang), f"--source-lang {lang!r}: a language code is")
    bad_code = _write(tmp_path / "code", ["#version: 0.2", "a b", "not a merge line"])
    _fails(_args(corpus, tmp_path / "b", "--bpe-code", str(bad_code)), "line 3 is not a BPE merge")
    assert not (tmp_path / "b").exists()


def test_custom_options_make_a_corpus_only_when_given(tmp_path):
    from prelnx.data.custom import corpus_from_options
    from prelnx.data.textio import DataError

    none = {"train": (None, None), "valid": (None, None), "test": (None, None)}
    assert corpus_from_options(none, dataset="iwslt14") is None
    pairs = {**none, "train": (tmp_path / "a.de", tmp_path / "a.en"), "valid": (tmp_path / "v.de", tmp_path / "v.en")}
    corpus = corpus_from_options(pairs, dataset="custom", source_lang="de", target_lang="en", tokenize=True)
    assert corpus.splits == ["train", "valid"] and corpus.languages == ("de", "en") and corpus.tokenize
    with pytest.raises(DataError, match="--test-src and --test-tgt go together"):
        corpus_from_options({**pairs, "test": (tmp_path / "t.de", None)}, dataset="custom")
