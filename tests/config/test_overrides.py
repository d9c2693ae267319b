"""The one parser of --set and --grid."""

from __future__ import annotations


import pytest

from prelnx.config.strict_yaml import ConfigError
from prelnx.config.overrides import parse_grid, parse_set, split_values


# overrides.py -----------------------------------------------------------------------------------------------------
def test_set_and_grid_read_yaml_values_and_keep_bracketed_lists_whole():
    assert parse_set("optimizer.betas=[0.9, 0.98]") == ("optimizer.betas", [0.9, 0.98])
    assert parse_set("model.layout=pre") == ("model.layout", "pre")
    assert parse_grid("optimizer.lr=0.0005,1.0e-3") == ("optimizer.lr", [0.0005, 0.001])
    assert parse_grid("optimizer.lr=5e-4") == ("optimizer.lr", ["5e-4"])  # YAML 1.1: a string; the schema coerces it
    assert parse_grid("optimizer.betas=[0.9,0.98],[0.9,0.999]") == ("optimizer.betas", [[0.9, 0.98], [0.9, 0.999]])
    assert split_values("[8],[6,9]") == ["[8]", "[6,9]"]
    for bad, option in (("lr", "--set"), ("=1", "--set")):
        with pytest.raises(ConfigError, match=option):
            parse_set(bad)
    with pytest.raises(ConfigError, match="--grid optimizer.lr=1e-3,: a value is empty"):
        parse_grid("optimizer.lr=1e-3,")
