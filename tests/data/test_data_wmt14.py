"""WMT14 En-De: newstest2014 extracted from the shared SGML "full" files, and the recipe's input checks."""

from __future__ import annotations

import pytest

from prelnx.data import wmt14
from prelnx.data.textio import tok_path
from prelnx.data.textio import DataError
from prelnx.data.workers import Workers
from tests.conftest import SHARED

NEWSTEST = SHARED / "data" / "wmt14" / "newstest2014"


@pytest.fixture(scope="module")
def newstest(tmp_path_factory):
    if not NEWSTEST.is_dir():
        pytest.skip(f"shared data absent: {NEWSTEST} (newstest2014 SGML, see ../shared/data/SOURCES.md)")
    folder = tmp_path_factory.mktemp("wmt14")
    sources = wmt14.gather(str(NEWSTEST), folder / "work", splits=["test"])
    with Workers(2) as workers:
        count = wmt14.build_test(sources.paths, folder, workers)
    return folder, count


def test_newstest2014_gives_3003_aligned_tokenized_lines(newstest):
    folder, count = newstest
    en = tok_path(folder, "test", "en").read_text(encoding="utf-8").split("\n")[:-1]
    de = tok_path(folder, "test", "de").read_text(encoding="utf-8").split("\n")[:-1]
    assert count == len(en) == len(de) == 3003
    assert all(line.strip() for line in en + de)
    # tokenizer.perl -a: punctuation split off, hyphens inside words become @-@, XML-escaped, case kept
    assert en[0] == "Gutach : Increased safety for pedestrians"
    assert de[0] == "Gutach : Noch mehr Sicherheit für Fußgänger"
    assert de[1].startswith(
        "Sie stehen keine 100 Meter voneinander entfernt : Am Dienstag ist in Gutach die neue B 33 @-@ Fußgängerampel"
    )
    assert en[1].endswith("within view of the existing Town Hall traffic lights .")


def test_misaligned_sgml_is_an_error_that_names_both_files(tmp_path):
    if not NEWSTEST.is_dir():
        pytest.skip(f"shared data absent: {NEWSTEST}")
    src = tmp_path / wmt14.TEST_FILES["en"]
    ref = tmp_path / wmt14.TEST_FILES["de"]
    src.write_text((NEWSTEST / wmt14.TEST_FILES["en"]).read_text(encoding="utf-8"), encoding="utf-8")
    text = (NEWSTEST / wmt14.TEST_FILES["de"]).read_text(encoding="utf-8")
    first_seg_7 = text.index('<seg id="7">')
    dropped = text[:first_seg_7] + text[text.index("\n", first_seg_7) + 1 :]
    ref.write_text(dropped, encoding="utf-8")
    sources = wmt14.gather(str(tmp_path), tmp_path / "work", splits=["test"])
    with pytest.raises(DataError, match=r"en.sgm has 3,003 segments but .*newstest2014-deen-ref.de.sgm has 3,002"):
        wmt14.build_test(sources.paths, tmp_path / "out", Workers(1))
    ref.write_text(text.replace('<seg id="7">', '<seg id="70">', 1), encoding="utf-8")
    with pytest.raises(DataError, match=r"are not aligned: segment 7 is doc '10023-schwarzwaelder-bote.de' seg '7'"):
        wmt14.build_test(sources.paths, tmp_path / "out", Workers(1))


def test_missing_corpora_are_listed_with_how_to_pass_them(tmp_path):
    (tmp_path / "europarl-v7.de-en.en").write_text("a\n")
    with pytest.raises(DataError) as error:
        wmt14.gather(str(tmp_path), tmp_path / "work")
    message = str(error.value)
    assert "lacks europarl-v7.de-en.de, commoncrawl.de-en.en" in message
    assert "newstest2014-deen-src.en.sgm" in message and "--source" in message
