"""sweep.json's one reader (prelnx.records.results.read_index): every caller reads its name and runs from the record
it returns, and a file that is not the index - including JSON that is no mapping at all - is one refusal."""

from __future__ import annotations

import json

import pytest

from prelnx.exits import Refusal
from prelnx.records.results import override_keys, read_index


@pytest.mark.parametrize("text", ["[]", "null", "0", "[1]", '{"name": "s"}', "{broken"])
def test_a_file_that_is_not_the_index_is_one_refusal(tmp_path, text):
    (tmp_path / "sweep.json").write_text(text)  # [] and null were an AttributeError in the callers before
    with pytest.raises(Refusal, match="not the sweep index"):
        read_index(tmp_path)


def test_the_record_always_has_a_name_and_runs_and_the_override_keys_come_once_in_order(tmp_path):
    assert read_index(tmp_path) == {"name": "", "runs": []}  # no sweep.json: a folder of run dirs
    runs = [{"name": "a", "overrides": {"x": 1}}, {"name": "b", "overrides": {"y": 2, "x": 3}}]
    (tmp_path / "sweep.json").write_text(json.dumps({"name": None, "runs": runs, "claims": {}}))
    index = read_index(tmp_path)
    assert list(index) == ["name", "runs", "claims"] and index["name"] == "" and index["runs"] == runs
    assert override_keys(index["runs"]) == ["x", "y"]
