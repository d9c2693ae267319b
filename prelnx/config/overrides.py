"""The one parser of `--set KEY=VALUE` and `--grid KEY=V1,V2,...`: values are YAML, a grid's commas inside brackets
belong to the value (`--grid 'optimizer.betas=[0.9,0.98],[0.9,0.999]'`); keys and types: `load.build_config`.
"""

from __future__ import annotations

from typing import Any

import yaml

from prelnx.config.strict_yaml import ConfigError


def _yaml_value(raw: str) -> Any:
    if not raw.strip():
        return ""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw  # a plain string YAML cannot read as anything else


def _split_key(text: str, option: str, example: str) -> tuple[str, str]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"{option} {text}: expected {example}")
    return key.strip(), raw


def parse_set(text: str) -> tuple[str, Any]:
    """`model.layout=pre` -> ("model.layout", "pre")."""
    key, raw = _split_key(text, "--set", "KEY=VALUE, e.g. --set optimizer.lr=1e-3")
    return key, _yaml_value(raw)


def split_values(raw: str) -> list[str]:
    """`1e-3,[0.9,0.98],x` -> ["1e-3", "[0.9,0.98]", "x"]: top-level commas only."""
    parts, depth, current = [], 0, ""
    for char in raw:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def parse_grid(text: str) -> tuple[str, list[Any]]:
    """`optimizer.lr=5e-4,1e-3` -> ("optimizer.lr", [0.0005, 0.001]); brackets keep list values whole."""
    key, raw = _split_key(text, "--grid", "KEY=V1,V2,..., e.g. --grid optimizer.lr=5e-4,1e-3")
    values = [part.strip() for part in split_values(raw)]
    if not raw.strip() or any(not value for value in values):
        raise ConfigError(f"--grid {text}: a value is empty; expected KEY=V1,V2,..., e.g. --grid optimizer.lr=5e-4,1e-3")
    return key, [_yaml_value(value) for value in values]
