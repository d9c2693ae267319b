"""The Moses script ports (where they differ from sacremoses' defaults), clean-corpus-n, and the worker pool."""

from __future__ import annotations

import pytest

from prelnx.data import moses
from prelnx.data.workers import BpeStep, MosesSteps, Workers


def test_a_final_period_is_split_off_as_tokenizer_perl_does():
    en, de = moses.PerlMosesTokenizer(lang="en"), moses.PerlMosesTokenizer(lang="de")
    assert moses.tokenize(en, "I moved to the U.S.") == "I moved to the U.S ."
    assert moses.tokenize(en, "The U.S. government said no.") == "The U.S. government said no ."
    assert moses.tokenize(de, "Er wurde 70.") == "Er wurde 70 ."
    assert moses.tokenize(de, "Am 3. Mai") == "Am 3. Mai"  # a numeric prefix inside the line stays
    assert moses.tokenize(en, "Mr. Smith isn't here.") == "Mr. Smith isn &apos;t here ."


def test_escaping_and_aggressive_hyphens():
    en = moses.PerlMosesTokenizer(lang="en")
    assert moses.tokenize(en, 'a "b" & [c] | <d>') == "a &quot; b &quot; &amp; &#91; c &#93; &#124; &lt; d &gt;"
    assert moses.tokenize(en, "well-known") == "well-known"
    assert moses.tokenize(en, "well-known", aggressive_dash=True) == "well @-@ known"
    assert moses.tokenize(en, "   ") == "   "  # blank lines pass through, as in the perl script


def test_punctuation_normalization_follows_the_perl_table():
    de = moses.PerlPunctNormalizer("de")
    assert de.normalize("„Hallo“ – sagte er") == '"Hallo" - sagte er'
    assert de.normalize("‘zitiert’") == '"zitiert"'  # sacremoses' default table gives 'zitiert'
    assert de.normalize("it’s") == "it's"
    assert de.normalize("1\u00a0000") == "1,000"
    assert de.normalize('Er sagte "Hallo."') == 'Er sagte "Hallo".'  # the perl script sees the line's newline
    assert moses.PerlPunctNormalizer("en").normalize('He said "hello".') == 'He said "hello."'
    assert moses.PerlPunctNormalizer("en").normalize("1\u00a0000") == "1.000"


def test_non_printing_characters_and_lowercasing():
    assert moses.remove_non_printing("a\u200bb\x07c") == "a b c"
    assert moses.lowercase("ΟΔΟΣ Straße") == "οδοσ straße"  # perl's lc has no final sigma


@pytest.mark.parametrize(
    ("pair", "kept"),
    [
        (("a b c", "x y z"), True),
        (("a  b\tc ", " x y z"), True),  # whitespace is normalized
        (("", "x"), False),
        (("a b c d", "x y"), False),  # ratio 2 > 1.5
        (("a b c", "x y"), True),  # ratio 1.5 is allowed
        (("a " * 6, "x " * 6), False),  # longer than max 5
        (("w" * 1001, "x"), False),  # a word over 1,000 characters
    ],
)
def test_clean_corpus(pair, kept):
    result = list(moses.clean_pairs([pair], ratio=1.5, min_len=1, max_len=5))
    assert result == ([tuple(" ".join(side.split()) for side in pair)] if kept else [])


def test_clean_corpus_drops_bars_unless_the_first_pair_is_factored():
    plain = list(moses.clean_pairs([("a b", "x"), ("a|b c", "x")], ratio=9, min_len=1, max_len=9))
    assert plain == [("a b", "x"), ("ab c", "x")]
    factored = list(moses.clean_pairs([("a|N b|V", "x|N"), ("c|N", "y|N")], ratio=9, min_len=1, max_len=9))
    assert factored == [("a|N b|V", "x|N"), ("c|N", "y|N")]


def test_workers_keep_the_order_and_match_one_process(tmp_path):
    lines = [f"Satz Nummer {i}, mit „Zeichen“." for i in range(2500)]
    steps = MosesSteps("de", normalize_punctuation=True, lowercase=True)
    with Workers(1) as one:
        expected = list(one.map(steps, lines, desc="1"))
    with Workers(2) as two:
        assert list(two.map(steps, lines, desc="2")) == expected
    assert expected[7] == "satz nummer 7 , mit &quot; zeichen &quot; ."
    code = tmp_path / "code"
    code.write_text("#version: 0.2\ns a\nsa t\nsa t</w>\n", encoding="utf-8")
    with Workers(1) as one:
        assert list(one.map(BpeStep(str(code)), ["satz sat"], desc="bpe")) == ["sat@@ z sat"]
