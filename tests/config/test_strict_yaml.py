"""Reading YAML within bounds: an alias bomb, a huge list, deep nesting and self-reference are refused at once,
naming the bound they broke; a file that is not a prelnx config is refused without echoing its content."""

from __future__ import annotations

import signal
from pathlib import Path

import hypothesis
import pytest
import yaml
from hypothesis import strategies as st

from prelnx.config.load import ConfigError, load_config
from prelnx.config.strict_yaml import MAX_BYTES, MAX_DEPTH, MAX_NODES, YamlInputError, parse_yaml

SECRETS = ("$6$saltsalt$hashhashhash", "alice", "19000")


@pytest.fixture
def hang_guard():
    """Fail (instead of hanging the suite) if what the test runs takes more than 10 s of wall time."""

    def expired(signum, frame):
        raise TimeoutError("still loading after 10 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 10.0)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def alias_bomb(levels: int = 10, repeat: int = 9) -> str:
    """The issue's bomb: each anchor a list repeating the previous alias `repeat` times (9**10 nodes expanded)."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * repeat) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * repeat) + "]" for i in range(1, levels)]
    return "train: {max_epoch: 1}\n" + "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_naming_the_bound(tmp_path, hang_guard):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    assert path.stat().st_size < 600
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (f"{path}: refused: its aliases (*name) expand to more than {MAX_NODES} YAML nodes "
                                f"(the bound on alias expansion; an alias bomb?)")  # fmt: skip


def test_a_long_list_a_big_file_deep_nesting_and_a_self_reference_each_name_their_bound(tmp_path, hang_guard):
    many = tmp_path / "many.yaml"
    many.write_text("train: {max_epoch: 1}\nx: [" + ",".join(["1"] * 100_000) + "]\n")  # 200 KB: under the size bound
    big = tmp_path / "big.yaml"
    big.write_text("train: {max_epoch: 1}\nx: [" + ",".join(["1"] * 800_000) + "]\n")  # the 800k-element list
    deep = tmp_path / "deep.yaml"
    deep.write_text("x: " + "[" * 1000 + "]" * 1000 + "\n")
    loop = tmp_path / "loop.yaml"
    loop.write_text("x: &a {y: *a}\n")
    expected = {
        many: f"refused: holds more than {MAX_NODES} YAML nodes (the bound on a config's size in nodes",
        big: f"refused: over {MAX_BYTES} bytes, the bound on a config's size",
        deep: f"refused: lists or mappings nested more than {MAX_DEPTH} deep (the bound on a config's nesting",
        loop: "refused: an alias (*name) refers to a list or mapping that contains it",
    }
    for path, message in expected.items():
        with pytest.raises(ConfigError) as error:
            load_config(path)
        assert str(error.value).startswith(f"{path}: {message}"), str(error.value)


def test_ordinary_anchors_and_merge_keys_still_load_and_duplicates_inside_them_are_found(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("train: &t {max_epoch: 2, seed: 3}\neval: {bleu: {beam: 2}}\noptimizer: {<<: {lr: 0.002}}\n")
    config, _ = load_config(path)
    assert (config.train.max_epoch, config.train.seed, config.optimizer.lr) == (2, 3, 0.002)
    with pytest.raises(YamlInputError, match=r"key `a.x` appears twice \(lines 1 and 1\)"):
        parse_yaml("a: &a {x: 1, x: 2}\nb: *a\nc: *a\n", "dup.yaml")


def shadow_like(tmp_path: Path) -> Path:
    path = tmp_path / "shadow"
    path.write_text(f"root:{SECRETS[0]}:19000:0:99999:7:::\n{SECRETS[1]}:*:{SECRETS[2]}:0:99999:7:::\n"
                    f"daemon:*:19000:0:99999:7:::\n")  # fmt: skip
    return path


def test_a_base_that_is_not_a_config_is_refused_without_echoing_it(tmp_path):
    shadow = shadow_like(tmp_path)
    child = tmp_path / "child.yaml"
    child.write_text(f"base: {shadow}\ntrain: {{max_epoch: 1}}\n")
    for given, via in ((child, f" (the base: of {child})"), (shadow, "")):
        with pytest.raises(ConfigError) as error:
            load_config(given)
        message = str(error.value)
        assert message == (f"{shadow}: not a prelnx config: expected a YAML mapping with keys such as base, name, "
                           f"task, data, model, optimizer, schedule, train, eval, finetune, but its top-level keys "
                           f"are not such names (its content is not shown){via}")  # fmt: skip
        assert not any(secret in message for secret in SECRETS)


@pytest.mark.parametrize(
    "text, kind",
    [
        ("- alice\n- $6$saltsalt$hashhashhash\n", "the file is a list"),
        ("alice $6$saltsalt$hashhashhash 19000\n", "the file is a single value"),
        ("alice: 1\nbob: 2\n", "its top-level keys are not such names"),  # names, but none of a config's
        ("train: {max_epoch: 1}\n'alice $6$saltsalt$hashhashhash 19000': 1\n", "its top-level keys are not such names"),
        ("alice: 1\nalice: 2\n", "its top-level keys are not such names"),  # refused before the duplicate check
    ],
)
def test_other_files_are_refused_by_kind_without_content(tmp_path, text, kind):
    path = tmp_path / "other.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert f"{path}: not a prelnx config" in str(error.value) and kind in str(error.value)
    assert not any(secret in str(error.value) for secret in SECRETS)


def test_syntax_errors_quote_no_text_of_the_file(tmp_path):
    path = tmp_path / "broken"
    path.write_text("alice: *hashhashhash\n")  # an undefined alias: PyYAML's message quotes its name
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == f"{path} line 1: not valid YAML (found undefined alias (text))"
    path.write_text("model:\n\tlayout: pre\n")  # a tab: the one character is worth showing
    tab = r"line 2: not valid YAML \(found character '\\t' that cannot start any token"
    with pytest.raises(ConfigError, match=tab):
        load_config(path)


def test_a_character_yaml_does_not_allow_is_one_error_naming_its_line_and_code(tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text('train: {max_epoch: 1}\nname: "a\x7fb"\n')  # PyYAML's reader refused it with a traceback before
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (f"{path} line 2: not valid YAML (unacceptable character #x007f: special characters "
                                f"are not allowed)")  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        alias_bomb(),
        "x: " + "[" * 100 + "]" * 100 + "\n",
        "x: &a {y: *a}\n",
        "train: {max_epoch: 1, max_epoch: 2}\n",
        "alice: *hashhashhash\n",
        "model:\n\tlayout: pre\n",
        "- alice\n- $6$saltsalt$hashhashhash\n",
    ],
    ids=["alias bomb", "deep", "self-reference", "duplicate", "undefined alias", "tab", "a list"],
)
def test_a_file_prelnx_wrote_is_read_by_libyaml_within_the_same_bounds_and_checks(text, hang_guard):
    """`emitted` (a run's config.yaml) parses with libyaml; every bound, check and error is PyYAML's path's."""
    said = []
    for emitted in (False, True):
        try:
            said.append(repr(parse_yaml(text, "f.yaml", ("train", "model"), "a run's config", emitted=emitted)))
        except YamlInputError as error:
            said.append(str(error))
    assert said[0] == said[1] and said[0].startswith("f.yaml"), said


LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()


@hypothesis.settings(max_examples=30, deadline=None)
@hypothesis.given(
    st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner))
)
def test_whatever_yaml_safe_dump_wrote_libyaml_reads_as_pyyaml_does(data):
    text = yaml.safe_dump({"train": data}, sort_keys=False)
    assert parse_yaml(text, "f.yaml", emitted=True) == parse_yaml(text, "f.yaml") == {"train": data}
