"""Loading configs: YAML files with `base:` inheritance, `--set key.sub=value` overrides, typed validation. Every
problem (unknown key, wrong type, bad value) is reported at once in one `ConfigError`, naming the file (or `--set`)
each key came from and what would be valid, with a "did you mean" for a key or a config file the user got wrong.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import operator
import types
import typing
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from prelnx.config.overrides import parse_set
from prelnx.config.schema import TASK_KEYS, Config, check_values
from prelnx.config.shipped import CONFIGS_DIR, name_of
from prelnx.config.strict_yaml import ConfigError, YamlInputError, read_yaml
from prelnx.layout_options import KINDS, scalar
from prelnx.layouts import absolute_spec, option_keys

# What a config file's top level may hold: `base:` (inheritance, read here) and the schema's sections.
TOP_KEYS = ("base", *(f.name for f in dataclasses.fields(Config)))


# Names other tools and papers give our keys (Hugging Face, fairseq, PyTorch), for "did you mean":
# their name -> the last part of ours.
ALIASES = {
    **dict.fromkeys(("learning_rate", "peak_lr", "max_lr", "base_lr"), "lr"),
    **dict.fromkeys(("warmup", "warmup_steps", "num_warmup_steps", "warmup_iters", "warm_up"), "warmup_updates"),
    **dict.fromkeys(("init_lr", "warmup_init", "start_lr", "initial_lr"), "warmup_init_lr"),
    **dict.fromkeys(("min_lr", "final_lr"), "end_lr"),
    **dict.fromkeys(("epochs", "num_epochs", "max_epochs", "num_train_epochs", "epoch"), "max_epoch"),
    **dict.fromkeys(("steps", "max_steps", "updates", "max_updates", "total_steps", "num_updates"), "max_update"),
    **dict.fromkeys(("batch_size", "batch_tokens", "tokens_per_batch"), "max_tokens"),
    **dict.fromkeys(("grad_clip", "clip_grad_norm", "max_grad_norm", "clip"), "clip_norm"),
    **dict.fromkeys(("accumulation_steps", "gradient_accumulation_steps", "grad_accum"), "update_freq"),
    **dict.fromkeys(("d_model", "hidden_size", "embed_size", "model_dim", "encoder_embed_dim"), "embed_dim"),
    **dict.fromkeys(("d_ff", "ffn_embed_dim", "intermediate_size", "ffn_size"), "ffn_dim"),
    **dict.fromkeys(("heads", "num_heads", "n_heads", "num_attention_heads"), "attention_heads"),
    **dict.fromkeys(("layers", "num_layers", "n_layers", "num_encoder_layers"), "encoder_layers"),
    **dict.fromkeys(("norm_position", "normalize_before", "pre_norm", "prenorm", "ln_position"), "layout"),
    **dict.fromkeys(("scheduler", "lr_scheduler", "decay_type"), "decay"),
    **dict.fromkeys(("type", "optim"), "name"),
    "wd": "weight_decay", "beta": "betas", "length_penalty": "lenpen",
    **dict.fromkeys(("epsilon", "adam_eps"), "eps"),
    **dict.fromkeys(("beam_size", "num_beams"), "beam"),
    **dict.fromkeys(("smoothing", "label_smoothing_factor"), "label_smoothing"),
    **dict.fromkeys(("gpus", "num_gpus", "workers", "world_size"), "processes"),
}


def _split(key: str) -> tuple[str, str]:
    section, _, last = key.rpartition(".")
    return section, last


def closest_key(key: str, known: Collection[str]) -> str | None:
    """The known key `key` most likely meant, or None: 1. by its last part, an alias (`learning_rate`) or right in
    another section (`train.lr`), preferring the same section; 2. the same section's key spelt closest (`model.layuot`
    -> `model.layout`); 3. the closest whole key (`optimiser.lr` -> `optimizer.lr`)."""
    section, last = _split(key)
    meant = ALIASES.get(last.lower(), last)
    by_meaning = sorted((k for k in known if _split(k)[1] == meant), key=lambda k: (_split(k)[0] != section, k))
    if by_meaning:
        return by_meaning[0]
    same_section = {_split(k)[1]: k for k in known if _split(k)[0] == section}
    near = difflib.get_close_matches(last, list(same_section), n=1)
    if near:
        return same_section[near[0]]
    near = difflib.get_close_matches(key, list(known), n=1)
    return near[0] if near else None


def did_you_mean(name: str | Path, roots: Iterable[Path], otherwise: str = "", limit: int = 4) -> str:
    """`; did you mean A or B?` naming up to `limit` .yaml files under the roots (recursively) or beside `name` whose
    last path parts are spelt closest to `name`'s (the best, and those nearly as close), else `otherwise`:
    `configs/demo/preln_nowarmpu.yaml` -> configs/demo/preln_nowarmup.yaml; a bare name is compared by file name."""
    wanted = Path(name).with_suffix("")
    parts = [p for p in wanted.parts if p not in ("configs", ".")] or [wanted.name]
    folders = [(root, "**/*.yaml") for root in roots]
    if str(Path(name).parent) not in ("", "."):
        folders.append((Path(name).parent, "*.yaml"))
    candidates = {path.resolve(): path for root, pattern in folders if root.is_dir() for path in root.glob(pattern)}
    scored = []
    for resolved, candidate in candidates.items():
        tail = resolved.with_suffix("").parts[-len(parts):]
        ratio = difflib.SequenceMatcher(None, "/".join(parts), "/".join(tail)).ratio()
        if ratio >= 0.75:
            shown = candidate.relative_to(Path.cwd()) if candidate.is_relative_to(Path.cwd()) else candidate
            scored.append((-ratio, str(shown)))
    best = min(scored, default=(0.0, ""))[0]
    near = [shown for score, shown in sorted(set(scored))[:limit] if score <= best + 0.05]  # the closest ones only
    return f"; did you mean {' or '.join(near)}?" if near else otherwise


def find_config(name: str | Path) -> Path:
    """A path as given, else a config under ./configs or a shipped one, by its name (`demo/preln_nowarmup`, with or
    without .yaml; a bare file name is searched recursively), from any folder."""
    path = Path(name)
    if path.is_file():
        return path
    roots = [Path.cwd() / "configs", CONFIGS_DIR]
    for root in roots:
        for candidate in (root / path, root / f"{path}.yaml"):
            if path.parts and candidate.is_file():
                return candidate
    if len(path.parts) == 1:
        for root in roots:
            matches = sorted(root.rglob(f"{path.name.removesuffix('.yaml')}.yaml")) if root.is_dir() else []
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                listed = ", ".join(m.relative_to(root).with_suffix("").as_posix() for m in matches)
                raise ConfigError(f"{name}: ambiguous, several configs have this name under {root}: {listed}")
    hint = did_you_mean(name, roots, " (prelnx configs list names every shipped config)")
    raise ConfigError(f"{name}: {'a folder, not a' if path.is_dir() else 'no such'} config file (looked here, in "
                      f"./configs/ and in the shipped configs, {CONFIGS_DIR}){hint}")


def default_run_name(config_path: Path) -> str:
    """`configs/demo/preln_nowarmup.yaml` -> `demo/preln_nowarmup`; a file elsewhere -> its stem."""
    return name_of(config_path, (Path.cwd() / "configs", CONFIGS_DIR)) or config_path.resolve().stem


def _flatten(data: dict[str, Any], source: str, prefix: str = "") -> dict[str, tuple[Any, str]]:
    """{"a": {"b": 1}} -> {"a.b": (1, source)}; the leaves remember which file set them."""
    flat: dict[str, tuple[Any, str]] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, source, dotted + "."))
        else:
            flat[dotted] = (value, source)
    return flat


def base_path(path: Path, base: object) -> Path:
    """The file a config's `base:` names: a path relative to the config, or a config's name (find_config)."""
    if not isinstance(base, str):
        raise ConfigError(f"{path}: base: must be a file path or a config's name, got {base!r}")
    beside = path.parent / base
    if beside.is_file():
        return beside
    try:
        return find_config(base)
    except ConfigError:
        hint = did_you_mean(beside, [Path.cwd() / "configs", CONFIGS_DIR])
        raise ConfigError(f"{path}: base: {base} not found (relative to {path.parent} or under configs/)"
                          f"{hint}") from None  # fmt: skip


def base_chain(path: Path) -> list[Path]:
    """`path`, then the file its base: names, then that one's, ... (a cycle is reported by load_config)."""
    chain = [path]
    while len(chain) < 32:
        data = read_yaml(chain[-1], None, "a config or a sweep spec")  # a sweep spec's base: is resolved alike
        base = data.get("base") if isinstance(data, dict) else None
        if base is None:
            break
        chain.append(base_path(chain[-1], base))
    return chain


def _load_layers(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, tuple[Any, str]]:
    """The file's keys over those of its `base:` chain (a path relative to the file, or a name under configs/). A
    layout file (`model.layout: ./mine.py:Cls`) is relative to the file that names it, as `base:` is."""
    resolved = path.resolve()
    if resolved in seen:
        chain = " -> ".join(str(p) for p in (*seen, resolved))
        raise ConfigError(f"{path}: base: forms a cycle ({chain})")
    try:
        data = read_yaml(path, TOP_KEYS, "a prelnx config") or {}  # a mapping of a config's keys, or nothing
    except YamlInputError as error:  # a base: says which config named it
        raise ConfigError(f"{error} (the base: of {seen[-1]})" if seen else str(error)) from None
    base = data.pop("base", None)
    model = data.get("model")
    if isinstance(model, dict) and isinstance(model.get("layout"), str):  # a user's ./mine.py:Cls, next to this file
        model["layout"] = absolute_spec(model["layout"], path.resolve().parent)
    flat = _load_layers(base_path(path, base), (*seen, resolved)) if base is not None else {}
    return flat | _flatten(data, str(path))


def flatten_values(data: dict[str, Any]) -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    return {key: value for key, (value, _) in _flatten(data, "").items()}


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args) + " or null"
    if origin in (list, tuple):
        return f"a list ({', '.join(_type_name(a) for a in typing.get_args(hint) if a is not Ellipsis)})"
    return KINDS.get(hint, str(hint))


def _coerce(value: Any, hint: Any) -> Any:
    """The value as the schema's type, or raise ValueError. YAML already typed it; only safe widening happens here."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal and value in args:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is not type(None):
                try:
                    return _coerce(value, arg)
                except ValueError:
                    continue
    elif origin is list and isinstance(value, list):
        return [_coerce(v, args[0]) for v in value]
    elif origin is tuple and isinstance(value, (list, tuple)) and len(value) == len(args):
        return tuple(_coerce(v, t) for v, t in zip(value, args))
    elif hint in KINDS:
        return scalar(value, hint)
    raise ValueError


def _schema(cls: type, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> type hint of every section (a dataclass) and every leaf of the schema under `cls`."""
    found: dict[str, Any] = {}
    for name, hint in typing.get_type_hints(cls).items():
        found[f"{prefix}{name}"] = hint
        if dataclasses.is_dataclass(hint):
            found.update(_schema(hint, f"{prefix}{name}."))
    return found


# The schema's type hints, resolved once at import: typing.get_type_hints was most of reading a run's config.yaml.
SCHEMA = _schema(Config)
# model.options is no key of a config: it holds the layout's own options, each written as model.<key>
LEAVES = {key: hint for key, hint in SCHEMA.items() if not dataclasses.is_dataclass(hint) and key != "model.options"}


def _build(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(SCHEMA[key]):
            kwargs[f.name] = _build(SCHEMA[key], values, key + ".")
        elif key in values:
            kwargs[f.name] = values[key]
    return cls(**kwargs)


def build_config(flat: dict[str, tuple[Any, str]], origin: str = "config") -> Config:
    """Validate flattened (value, source) leaves against the schema; every problem goes into one ConfigError.
    `origin` names the config in messages about keys it leaves at their defaults."""
    sections = SCHEMA.keys() - LEAVES.keys()
    problems: list[str] = []
    failed: list[str] = []  # keys whose value is not of their type
    values: dict[str, Any] = {}
    layout, source = flat.get("model.layout", (None, ""))
    options = option_keys(layout)  # model.<key> a layout declares (layouts.Option); None: its file does not load
    problems += [f"{source}: model.layout: {layout}'s option {key!r} is the config's own model.{key}; rename it"
                 for key in sorted(options or ()) if f"model.{key}" in SCHEMA]
    for key, (value, source) in flat.items():
        if key.startswith("model.") and (key[6:] in options if options is not None else key not in LEAVES):
            values.setdefault("model.options", {})[key[6:]] = value  # typed and checked by its declaration
            continue
        if key not in LEAVES:
            if key in sections and value in ({}, None):
                continue  # an empty section
            near = closest_key(key, list(LEAVES))
            problems.append(f"{source}: {key}: unknown key" + (f"; did you mean {near}?" if near else ""))
            continue
        try:
            values[key] = _coerce(value, LEAVES[key])
        except ValueError:
            problems.append(f"{source}: {key}: expected {_type_name(LEAVES[key])}, got {value!r}")
            failed.append(key)
    config = _build(Config, values)  # a key that failed above holds its default: no check that reads it is said
    sources = {key: source for key, (_, source) in flat.items()}
    problems += [f"{sources.get(key, origin)}: {key}: {message}" for key, message in check_values(config)
                 if not any(bad in f"{key}: {message}" for bad in failed)]  # fmt: skip
    if not problems:
        return config
    raise ConfigError("invalid config:\n  " + "\n  ".join(problems))


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                values: dict[str, tuple[Any, str]] | None = None) -> tuple[Config, Path]:  # fmt: skip
    """Find, read, merge (`base:`), override, validate: the config and the file it came from. `overrides` are
    `--set KEY=VALUE` texts; `values`, applied after them, typed ones with their source (a sweep's grid point:
    {"optimizer.lr": (0.001, "grid of sweep.yaml")})."""
    config_path = find_config(path)
    flat = _load_layers(config_path)
    for text in overrides:  # `model.layout=pre`: the value read as YAML (numbers, lists, null)
        key, value = parse_set(text)
        flat[key] = (value, f"--set {text}")
    flat.update(values or {})
    config = build_config(flat, origin=str(config_path))
    if config.name is None:
        config.name = default_run_name(config_path)
    return config, config_path


def config_to_dict(config: Config) -> dict[str, Any]:
    """Plain dict for YAML/JSON (tuples become lists; the layout's options as model.<key>, as a config writes them)."""
    data = json.loads(json.dumps(dataclasses.asdict(config)))
    data["model"].update(data["model"].pop("options"))
    return data


def dump_config(config: Config, task_keys_only: bool = False) -> str:
    """The config as YAML; with `task_keys_only`, without the keys its task does not read (schema.TASK_KEYS)."""
    data = config_to_dict(config)
    if task_keys_only:
        for key, tasks in TASK_KEYS.items():
            if config.task not in tasks:
                *parents, last = key.split(".")
                functools.reduce(operator.getitem, parents, data).pop(last, None)
    return yaml.safe_dump(data, sort_keys=False)


def config_from_dict(data: dict[str, Any], source: str) -> Config:
    """Rebuild a Config from `config_to_dict` output (e.g. a run dir's config.yaml)."""
    return build_config(_flatten(data, source), origin=source)
