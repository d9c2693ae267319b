"""Sweep specs: a base training config, a grid of overrides, fixed overrides; expanded into named runs.

A spec file (YAML):

    name: fig2                         # default: the file's stem
    base: ../iwslt14/postln_warmup.yaml  # a training config (relative to this file, or a name under configs/)
    set: {train.max_epoch: 15}           # fixed overrides for every run
    grid:                                # key -> values; a list of such mappings is a union of grids
      schedule.warmup_updates: [500, 4000]
      optimizer.lr: [5.0e-4, 1.0e-3]
    zip: [[optimizer.name, optimizer.lr]]  # keys that vary together (one axis) instead of as a product
    exclude: [{schedule.warmup_updates: 500, optimizer.lr: 1.0e-3}]   # points to leave out
"""

from __future__ import annotations

import itertools
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.config.load import ConfigError, default_run_name, find_config, load_config
from prelnx.config.overrides import OverrideError, parse_grid, parse_set
from prelnx.config.schema import Config
from prelnx.config.strict_yaml import YamlInputError, read_yaml
from prelnx.layouts import absolute_spec, is_file_spec

SPEC_KEYS = {"name", "base", "set", "grid", "zip", "exclude", "slurm"}
LAYOUT_KEY = "model.layout"
# What a spec's slurm: may set (prelnx sweep's flags of the same names win; executors.sweep_request reads them)
SLURM_KEYS = {"partition": str, "job_name": str, "cpus_per_run": int, "gpus_per_run": int, "mem_gb_per_run": int,
              "time_min": int, "array_parallelism": int}  # fmt: skip


@dataclass
class SweepPoint:
    name: str  # the run's folder name, from the overrides that vary across the sweep
    overrides: dict[str, Any]  # grid values of this point (what distinguishes it)
    config: Config


@dataclass
class SweepSpec:
    name: str
    base: Path
    fixed: dict[str, Any] = field(default_factory=dict)
    grids: list[dict[str, list[Any]]] = field(default_factory=list)
    zipped: list[list[str]] = field(default_factory=list)
    exclude: list[dict[str, Any]] = field(default_factory=list)
    slurm: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "base": str(self.base.resolve()), "set": self.fixed, "grid": self.grids,
                "zip": self.zipped, "exclude": self.exclude, "slurm": self.slurm}  # fmt: skip


def is_sweep_file(path: Path) -> bool:
    """A sweep spec has a `grid:`; anything else is a training config."""
    try:
        data = read_yaml(path)
    except YamlInputError:
        return False
    return isinstance(data, dict) and "grid" in data


def load_spec(path: Path) -> SweepSpec:
    try:
        data = read_yaml(path) or {}
    except YamlInputError as error:
        raise ConfigError(str(error)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a sweep spec must be a mapping of keys, got {type(data).__name__}")
    if unknown := set(data) - SPEC_KEYS:
        raise ConfigError(f"{path}: unknown sweep key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(SPEC_KEYS))}")
    if "base" not in data:
        raise ConfigError(f"{path}: base: missing; name the training config the sweep varies")
    base = path.parent / str(data["base"])
    if not base.is_file():
        base = find_config(str(data["base"]))
    grids = data.get("grid") or {}
    grids = grids if isinstance(grids, list) else [grids]
    for grid in grids:
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ConfigError(f"{path}: grid: expected a mapping of key -> non-empty list of values (or a list of them)")
        if LAYOUT_KEY in grid:  # a user's layout file is named relative to the spec, as base: is
            grid[LAYOUT_KEY] = [absolute_spec(v, path.parent) if isinstance(v, str) else v for v in grid[LAYOUT_KEY]]
    fixed = dict(data.get("set") or {})
    if isinstance(fixed.get(LAYOUT_KEY), str):
        fixed[LAYOUT_KEY] = absolute_spec(fixed[LAYOUT_KEY], path.parent)
    return SweepSpec(str(data.get("name") or path.stem), base, fixed, grids,
                     zipped=[list(group) for group in data.get("zip") or []], exclude=list(data.get("exclude") or []),
                     slurm=_slurm_section(path, data.get("slurm") or {}))  # fmt: skip


def _slurm_section(path: Path, slurm: Any) -> dict[str, Any]:
    """The spec's slurm: checked (known keys, their types) so that a typo is an error, not a default."""
    if not isinstance(slurm, dict):
        raise ConfigError(f"{path}: slurm: expected a mapping of {', '.join(SLURM_KEYS)}")
    problems = [f"slurm.{key}: unknown; allowed: {', '.join(SLURM_KEYS)}" for key in slurm if key not in SLURM_KEYS]
    for key, kind in SLURM_KEYS.items():
        value = slurm.get(key)
        wrong = not isinstance(value, kind) or isinstance(value, bool) or (kind is int and value < 1)
        if value is not None and wrong:
            problems.append(f"slurm.{key}: expected {'a positive integer' if kind is int else 'text'}, got {value!r}")
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return dict(slurm)


def spec_from_command_line(base: Path, grid: list[str], fixed: list[str], name: str | None) -> SweepSpec:
    """`--grid KEY=V1,V2 --set KEY=V` on a training config (overrides.py: the values' syntax). Named like a training of
    it, `/` as `-`, plus `-grid` (runs/demo-postln_warmup-grid): sweeps of `demo/x.yaml` and `iwslt14/x.yaml` never
    share a folder, nor sit inside another sweep's (plan/launch.py: the naming rule)."""
    try:
        pairs = [parse_grid(text) for text in grid]
        overrides = dict(parse_set(text) for text in fixed)
    except OverrideError as error:
        raise ConfigError(str(error)) from None
    keys = [key for key, _ in pairs]
    if repeated := sorted({key for key in keys if keys.count(key) > 1}):
        raise ConfigError(f"--grid {', '.join(repeated)}: given more than once; list all its values in one --grid")
    return SweepSpec(name or f"{default_run_name(base).replace('/', '-')}-grid", base, overrides, [dict(pairs)])


def resolve_spec(path: Path, grid: list[str], fixed: list[str], name: str | None) -> SweepSpec:
    """The sweep `prelnx sweep --config PATH [--grid ...] [--set ...] [--name ...]` runs: PATH is a sweep spec (it has
    `grid:`) or a training config; --grid values are crossed with every grid of the spec, --set applies to all."""
    if not is_sweep_file(path):
        return spec_from_command_line(path, grid, fixed, name)
    spec = load_spec(path)
    extra = spec_from_command_line(path, grid, fixed, name)
    spec.fixed.update(extra.fixed)
    if grid:
        spec.grids = [{**g, **extra.grids[0]} for g in spec.grids]
    spec.name = name or spec.name
    return spec


def _axes(grid: dict[str, list[Any]], zipped: list[list[str]]) -> list[list[dict[str, Any]]]:
    """Each axis is a list of partial assignments; zipped keys share one axis."""
    axes: list[list[dict[str, Any]]] = []
    used: set[str] = set()
    for group in zipped:
        if not (present := [key for key in group if key in grid]):
            continue
        lengths = {len(grid[key]) for key in present}
        if len(lengths) > 1:
            raise ConfigError(f"zip: {present} have different numbers of values ({sorted(lengths)})")
        axes.append([dict(zip(present, values)) for values in zip(*(grid[key] for key in present))])
        used.update(present)
    for key, values in grid.items():
        if key not in used:
            axes.append([{key: value} for value in values])
    return axes


def _format_value(value: Any) -> str:
    if isinstance(value, str) and is_file_spec(value):  # a user's layout: its class (or file) name, not its path
        return value.rpartition(":")[2] or Path(value).stem
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "-".join(_format_value(v) for v in value)
    return str(value)


# The study's axes, in the order run names show them, with their short names.
NAME_KEYS = {"model.layout": "layout", "model.norm": "norm", "model.qk_norm": "qk", "optimizer.name": "opt",
             "schedule.warmup_updates": "warmup", "optimizer.lr": "lr", "train.seed": "seed"}  # fmt: skip


def run_name(overrides: dict[str, Any], varying: list[str]) -> str:
    """`{"schedule.warmup_updates": 500, "optimizer.lr": 0.001}` -> `warmup-500_lr-0.001` (file-system safe)."""
    ordered = [k for k in NAME_KEYS if k in varying] + [k for k in varying if k not in NAME_KEYS]
    short = {key: NAME_KEYS.get(key, key.rsplit(".", 1)[-1]) for key in ordered}
    if len(set(short.values())) < len(short):  # two keys end alike: use the full dotted path
        short = {key: key.replace(".", "-") for key in ordered}
    parts = [f"{short[key]}-{_format_value(overrides[key])}" for key in ordered if key in overrides]
    return re.sub(r"[^A-Za-z0-9._+-]", "_", "_".join(parts) or "base")


def name_keys(assignments: list[dict[str, Any]]) -> list[str]:
    """The keys that vary across the sweep, minus secondary ones (e.g. schedule.decay going with warm-up 0)
    that the study's axes already tell apart."""
    keys = list(dict.fromkeys(key for point in assignments for key in point))
    varying = [key for key in keys if len({repr(point.get(key)) for point in assignments}) > 1]
    for key in reversed([k for k in varying if k not in NAME_KEYS]):
        rest = [k for k in varying if k != key]
        if len({run_name(point, rest) for point in assignments}) == len(assignments):
            varying = rest
    return varying


def point_config(spec: SweepSpec, overrides: dict[str, Any]) -> Config:
    """A point's config: the spec's base, its `set:` and the point's grid values (a ConfigError when invalid)."""
    values = {key: (value, f"sweep {spec.name}: set") for key, value in spec.fixed.items()}
    values.update({key: (value, f"sweep {spec.name}: grid") for key, value in overrides.items()})
    return load_config(spec.base, values=values)[0]


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """All points of the sweep, validated; names are unique and readable."""
    assignments: list[dict[str, Any]] = []
    for grid in spec.grids:
        for combination in itertools.product(*_axes(grid, spec.zipped)):
            point = {key: value for part in combination for key, value in part.items()}
            excluded = any(all(point.get(k) == v for k, v in rule.items()) for rule in spec.exclude)
            if not excluded and point not in assignments:
                assignments.append(point)
    configs: list[Config] = []
    problems: list[str] = []
    for overrides in assignments:
        try:
            configs.append(point_config(spec, overrides))
        except ConfigError as error:
            problems.append(f"run {overrides}: {error}")
    if problems:
        raise ConfigError("invalid sweep:\n" + "\n".join(problems))
    # Every point records every swept key, typed by the schema ("1e-3", a YAML 1.1 string, becomes 0.001).
    keys = list(dict.fromkeys(key for point in assignments for key in point))
    typed = [{key: operator.attrgetter(key)(config) for key in keys} for config in configs]
    typed = [{key: list(v) if isinstance(v, tuple) else v for key, v in point.items()} for point in typed]
    varying = name_keys(typed)
    names = [run_name(overrides, varying) for overrides in typed]
    if len(set(names)) != len(names):
        raise ConfigError(f"sweep runs share names: {sorted({n for n in names if names.count(n) > 1})}")
    for name, config in zip(names, configs):
        config.name = f"{spec.name}/{name}"
    return [SweepPoint(name, overrides, config) for name, overrides, config in zip(names, typed, configs)]
