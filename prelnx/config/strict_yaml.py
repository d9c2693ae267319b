"""Reading YAML strictly and within bounds: a duplicated key is an error naming both lines (PyYAML keeps the last);
a file over MAX_BYTES, MAX_NODES nodes (aliases expanded: a 489-byte alias bomb would take hours) or MAX_DEPTH levels
is refused naming the bound; with `top_keys`, a file that is not that kind's is refused without its content (`base:
/etc/shadow` must not print its lines), and syntax errors quote only PyYAML's token names and single characters.
A file prelnx wrote (`emitted`: a run's config.yaml, yaml.safe_dump's output) is scanned and parsed by libyaml (C,
~6x faster), composed and constructed by PyYAML with the same bounds and checks; a file libyaml cannot read is read
again by PyYAML alone, so its error is said in PyYAML's words. A user's file is read by PyYAML alone (libyaml reads
some text PyYAML refuses, and reads `!` as '' where PyYAML reads null).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from prelnx.exits import Refusal

try:
    from yaml.cyaml import CParser
except ImportError:  # a PyYAML built without libyaml: every file is read by PyYAML alone
    CParser = None
_EVENTS = (CParser,) if CParser is not None else ()

MAX_BYTES = 1 << 20  # 1 MiB
MAX_NODES = 20_000  # scalars, lists and mappings, as written and once aliases are expanded
MAX_DEPTH = 64  # lists and mappings inside each other

_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,63}")  # what a key of a config can look like
# quoted text in PyYAML's messages that is not a token name ('<scalar>') or one character ('\t')
_QUOTED = re.compile(r"'(?!<[\w ]+>')(?:[^'\\]|\\.){2,}'|\"(?:[^\"\\]|\\.){2,}\"")


class ConfigError(Refusal):
    """A config that cannot run (a malformed override and an unreadable YAML file too: prelnx/exits.py's Refusal, the
    one error type of a command that stops on purpose); the message lists every problem."""


class YamlInputError(ConfigError):
    """The file cannot be read as a config; the message names it and says what is wrong."""


class _Bounded:
    """PyYAML's composer, stopped at MAX_NODES nodes or MAX_DEPTH levels (before the file is fully read)."""

    source: str
    nodes: int
    depth: int

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise YamlInputError(f"{self.source}: refused: holds more than {MAX_NODES} YAML nodes (the bound on a "
                                 f"config's size in nodes; a config has a few hundred)")  # fmt: skip
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise YamlInputError(f"{self.source}: refused: lists or mappings nested more than {MAX_DEPTH} deep "
                                     f"(the bound on a config's nesting; a config nests 3 or 4 deep)")  # fmt: skip
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self.depth -= 1


class _PyYamlLoader(_Bounded, yaml.SafeLoader):
    """PyYAML's own reader, scanner and parser: a user's file, and every error's words."""

    def __init__(self, text: str, source: str) -> None:
        yaml.SafeLoader.__init__(self, text)  # its reader refuses a character YAML does not allow here
        self.source, self.nodes, self.depth = source, 0, 0


class _LibyamlLoader(_Bounded, Composer, *_EVENTS, SafeConstructor, Resolver):  # type: ignore[misc]
    """libyaml's scanner and parser (CParser's events), PyYAML's composer (before CParser's own: the bounds),
    resolver and constructor: yaml.safe_dump's output read as _PyYamlLoader reads it."""

    def __init__(self, text: str, source: str) -> None:
        CParser.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.source, self.nodes, self.depth = source, 0, 0


def _walk(root: yaml.Node, source: str) -> list[str]:
    """The document's duplicated keys, one problem each; YamlInputError once its aliases expand past MAX_NODES nodes
    or refer to a node that contains them. Each node is visited once (its expanded size memoised)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    found: list[str] = []

    def size(node: yaml.Node, path: str | None) -> int:  # path None: inside a (complex) key, whose keys are not checked
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlInputError(f"{source}: refused: an alias (*name) refers to a list or mapping that contains it "
                                 f"(it would expand without end)")  # fmt: skip
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                dotted = None if path is None else f"{path}.{name}" if path else str(name)
                if name is not None and dotted is not None:
                    line = key_node.start_mark.line + 1
                    if name in first_line:
                        shown = f"key `{dotted}`" if _NAME.fullmatch(dotted) else "a key"
                        found.append(f"{source}: {shown} appears twice (lines {first_line[name]} and {line}); keep one")
                    else:
                        first_line[name] = line
                total += size(key_node, None) + size(value_node, dotted)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item, None if path is None else f"{path}[{i}]") for i, item in enumerate(node.value))
        open_nodes.discard(key)
        if total > MAX_NODES:
            raise YamlInputError(f"{source}: refused: its aliases (*name) expand to more than {MAX_NODES} YAML nodes "
                                 f"(the bound on alias expansion; an alias bomb?)")  # fmt: skip
        sizes[key] = total
        return total

    size(root, "")
    return found


def _check_kind(node: yaml.Node, source: str, top_keys: Collection[str], what: str) -> None:
    """A document that is not a mapping of `top_keys` (or keys under them, `optimizer.lr`) is refused unquoted."""
    expected = f"expected a YAML mapping with keys such as {', '.join(top_keys)}"
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a single value"
        raise YamlInputError(f"{source}: not {what}: {expected}, but the file is {kind} (its content is not shown)")
    keys = [k.value if isinstance(k, yaml.ScalarNode) else None for k, _ in node.value]
    names = [k for k in keys if isinstance(k, str) and _NAME.fullmatch(k)]
    if keys and (len(names) < len(keys) or not any(k.split(".")[0] in top_keys for k in names)):
        raise YamlInputError(f"{source}: not {what}: {expected}, but its top-level keys are not such names "
                             f"(its content is not shown)")  # fmt: skip


def _load(loader: Any, source: str, top_keys: Collection[str] | None, what: str) -> Any:
    node = loader.get_single_node()
    if node is not None:
        problems = _walk(node, source)
        if top_keys is not None:
            _check_kind(node, source, top_keys, what)
        if problems:
            raise YamlInputError("\n  ".join(problems))
    return None if node is None else loader.construct_document(node)


def parse_yaml(
    text: str, source: str, top_keys: Collection[str] | None = None, what: str = "a config", emitted: bool = False
) -> Any:
    """The YAML document in `text`; YamlInputError on a syntax error, a duplicated key, a broken bound, or (with
    `top_keys`) a document whose top-level keys are not those of `what`. The size bound is read_yaml's. `emitted`:
    text prelnx wrote with yaml.safe_dump, parsed by libyaml (a syntax error is said by PyYAML, which reads it again)."""
    if emitted and CParser is not None:
        fast = _LibyamlLoader(text, source)
        try:
            return _load(fast, source, top_keys, what)
        except yaml.YAMLError:
            pass  # PyYAML reads it again below, and says what is wrong in its words
        finally:
            fast.dispose()
    loader = None
    try:
        loader = _PyYamlLoader(text, source)
        return _load(loader, source, top_keys, what)
    except yaml.reader.ReaderError as error:  # a character YAML does not allow: its code, not the text
        line = text.count("\n", 0, error.position) + 1
        raise YamlInputError(f"{source} line {line}: not valid YAML ({str(error).splitlines()[0]})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = _QUOTED.sub("(text)", str(getattr(error, "problem", None) or type(error).__name__))
        raise YamlInputError(f"{source}{where}: not valid YAML ({problem})") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml(
    path: Path, top_keys: Collection[str] | None = None, what: str = "a config", emitted: bool = False
) -> Any:
    """Read and parse a YAML file strictly (UTF-8, within the bounds, no duplicated keys; see parse_yaml)."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)  # not the whole of /dev/zero
    except OSError as error:
        raise YamlInputError(f"{path}: cannot read ({error.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise YamlInputError(f"{path}: refused: over {MAX_BYTES} bytes, the bound on a config's size (a config is a "
                             f"few KB)")  # fmt: skip
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YamlInputError(f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); "
                             f"save the file as UTF-8") from None  # fmt: skip
    return parse_yaml(text, str(path), top_keys, what, emitted)
