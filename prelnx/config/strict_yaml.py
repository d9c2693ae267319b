"""Reading YAML files strictly: a duplicated key anywhere is an error naming the file, the key and both lines.

PyYAML keeps the last of two equal keys without a word (`lr: 0.001` then `lr: 0.5` trains at 0.5; a second
`optimizer:` block drops the first). We walk the composed node tree, which keeps line numbers, before
constructing the data. A file that is not UTF-8 is reported with its name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlInputError(ValueError):
    """The file cannot be read as a config; the message names it and says what is wrong."""


def _duplicates(node: yaml.Node, path: str, found: list[str], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        first_line: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            dotted = f"{path}.{key}" if path else str(key)
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in first_line:
                    found.append(f"{source}: key `{dotted}` appears twice (lines {first_line[key]} and {line}); "
                                 f"keep one")  # fmt: skip
                else:
                    first_line[key] = line
            _duplicates(value_node, dotted, found, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _duplicates(item, f"{path}[{index}]", found, source)


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document in `text`; YamlInputError on a syntax error or a duplicated key."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        problems: list[str] = []
        if node is not None:
            _duplicates(node, "", problems, source)
        if problems:
            raise YamlInputError("\n  ".join(problems))
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise YamlInputError(f"{source}{where}: not valid YAML ({getattr(error, 'problem', None) or error})") from None


def read_yaml(path: Path) -> Any:
    """Read and parse a YAML file strictly (UTF-8, no duplicated keys)."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise YamlInputError(f"{path}: cannot read ({error.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlInputError(f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); "
                             f"save the file as UTF-8") from None  # fmt: skip
    return parse_yaml(text, str(path))
