"""Sweep specs: a base training config, a grid of overrides (a list of grids: their union), fixed overrides (`set`),
`zip` and `exclude`, named `arms` and a seed policy (`seeds`); expanded into named runs. The keys: docs/usage.md
("Sweep specs"); arms and seed plans: docs/sequential.md ("The spec"). With `arms:` or `seeds:` every grid point
(times every named arm) is an arm and its runs are `<arm>_seed-<s>`; without them a grid is the fixed policy.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.config.load import ConfigError, base_path, default_run_name, load_config
from prelnx.config.overrides import parse_grid, parse_set
from prelnx.config.schema import Config
from prelnx.config.strict_yaml import YamlInputError, read_yaml
from prelnx.layouts import absolute_spec, is_file_spec
from prelnx.sequential import SeedPlan
from prelnx.sweep.seeds import SEED_KEY, fixed_plan, parse_arms, parse_seeds, seed_run_name

SPEC_KEYS = {"name", "base", "set", "grid", "zip", "exclude", "slurm", "arms", "seeds"}
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
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> overrides
    plan: SeedPlan | None = None  # None: an old spec (a grid, train.seed in it or not)

    @property
    def armed(self) -> bool:
        """Runs are arms times the plan's seeds (else every grid point is one run, as before issue 47)."""
        return self.plan is not None or bool(self.arms)

    def to_dict(self) -> dict[str, Any]:
        data = {"name": self.name, "base": str(self.base.resolve()), "set": self.fixed, "grid": self.grids,
                "zip": self.zipped, "exclude": self.exclude, "slurm": self.slurm}  # fmt: skip
        if self.arms:
            data["arms"] = self.arms
        if self.plan is not None:
            data["seeds"] = {"looks": list(self.plan.looks), "method": self.plan.method,
                             "futility": self.plan.futility, "seeds": list(self.plan.order)}  # fmt: skip
        return data


def is_sweep_file(path: Path) -> bool:
    """A sweep spec has a `grid:` or `arms:`; anything else is a training config."""
    try:
        data = read_yaml(path)
    except YamlInputError:
        return False
    return isinstance(data, dict) and ("grid" in data or "arms" in data)


def load_spec(path: Path) -> SweepSpec:
    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a sweep spec must be a mapping of keys, got {type(data).__name__}")
    if unknown := set(data) - SPEC_KEYS:
        raise ConfigError(f"{path}: unknown sweep key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(SPEC_KEYS))}")
    if "base" not in data:
        raise ConfigError(f"{path}: base: missing; name the training config the sweep varies")
    base = base_path(path, data["base"])  # as a training config's base: is found
    grids = data.get("grid") or {}
    grids = grids if isinstance(grids, list) else [grids]
    for grid in grids:
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ConfigError(f"{path}: grid: expected a mapping of key -> non-empty list of values (or a list of them)")
        if LAYOUT_KEY in grid:  # a user's layout file is named relative to the spec, as base: is
            grid[LAYOUT_KEY] = [absolute_spec(v, path.parent) if isinstance(v, str) else v for v in grid[LAYOUT_KEY]]
    fixed = dict(data.get("set") or {})
    arms = parse_arms(path, data["arms"]) if "arms" in data else {}
    exclude = data.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(rule, dict) and rule for rule in exclude):
        raise ConfigError(f"{path}: exclude: expected a list of mappings of grid key -> value (points to leave out)")
    if unknown := {key for rule in exclude for key in rule} - {key for grid in grids for key in grid}:
        raise ConfigError(f"{path}: exclude: {', '.join(sorted(unknown))}: not a key of grid: (it would exclude nothing)")
    for overrides in [fixed, *arms.values(), *exclude]:
        if isinstance(overrides.get(LAYOUT_KEY), str):
            overrides[LAYOUT_KEY] = absolute_spec(overrides[LAYOUT_KEY], path.parent)
    plan = parse_seeds(path, data["seeds"]) if "seeds" in data else None
    if (plan is not None or arms) and (SEED_KEY in fixed or any(SEED_KEY in grid for grid in grids)):
        raise ConfigError(f"{path}: {SEED_KEY} in grid:/set: and arms:/seeds: in one spec; with arms, the seeds are "
                          f"seeds: (a list, or looks)")  # fmt: skip
    return SweepSpec(str(data.get("name") or path.stem), base, fixed, [g for g in grids if g],
                     zipped=[list(group) for group in data.get("zip") or []], exclude=exclude,
                     slurm=_slurm_section(path, data.get("slurm") or {}), arms=arms, plan=plan)  # fmt: skip


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
    pairs = [parse_grid(text) for text in grid]
    overrides = dict(parse_set(text) for text in fixed)
    keys = [key for key, _ in pairs]
    if repeated := sorted({key for key in keys if keys.count(key) > 1}):
        raise ConfigError(f"--grid {', '.join(repeated)}: given more than once; list all its values in one --grid")
    return SweepSpec(name or f"{default_run_name(base).replace('/', '-')}-grid", base, overrides, [dict(pairs)])


def resolve_spec(path: Path, grid: list[str], fixed: list[str], name: str | None,
                 seeds: tuple[int, ...] | None = None) -> SweepSpec:  # fmt: skip
    """The sweep `prelnx sweep --config PATH [--grid ...] [--set ...] [--name ...] [--seeds ...]` runs: PATH is a
    sweep spec (it has `grid:` or `arms:`) or a training config; --grid values are crossed with every grid of the
    spec, --set applies to all. --seeds wins over the spec: with arms or seeds: it replaces the plan by that fixed
    list; on an old spec (or a training config) it is a train.seed grid axis, as it always was."""
    spec = load_spec(path) if is_sweep_file(path) else None
    if seeds and spec is not None and spec.armed:
        spec.plan = fixed_plan(seeds)
    elif seeds:
        grid = [*grid, f"{SEED_KEY}={','.join(map(str, seeds))}"]
    if spec is None:
        return spec_from_command_line(path, grid, fixed, name)
    return with_command_line(spec, grid, fixed, name)


def with_command_line(spec: SweepSpec, grid: list[str], fixed: list[str], name: str | None) -> SweepSpec:
    """The spec with --grid values crossed with each of its grids, --set over its `set:`, and --name."""
    extra = spec_from_command_line(spec.base, grid, fixed, name)
    spec.fixed.update(extra.fixed)
    if grid:
        spec.grids = [{**g, **extra.grids[0]} for g in spec.grids or [{}]]
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


def _configs(spec: SweepSpec, labelled: list[tuple[str, dict[str, Any]]]) -> list[Config]:
    """Each (label, overrides)'s config; one ConfigError naming every invalid one by its label."""
    configs, problems = [], {}  # a problem -> the points that have it: said once
    for label, overrides in labelled:
        try:
            configs.append(point_config(spec, overrides))
        except ConfigError as error:
            problems.setdefault(str(error), []).append(label)
    if problems:
        raise ConfigError("invalid sweep:\n" + "\n".join(f"{', '.join(at)}: {text}" for text, at in problems.items()))
    return configs


def _typed(config: Config, keys: Iterable[str]) -> dict[str, Any]:
    """The keys' values as the schema typed them ("1e-3", a YAML 1.1 string, becomes 0.001), a tuple as a list; a
    layout's option (model.<key>) from model.options, left out where the point's layout has no such option."""
    options = {f"model.{key}": value for key, value in config.model.options.items()}
    typed = {}
    for key in keys:
        if key in options:
            value = options[key]
        elif key.startswith("model.") and not hasattr(config.model, key[6:]):
            continue  # another layout's option
        else:
            value = operator.attrgetter(key)(config)
        typed[key] = list(value) if isinstance(value, tuple) else value
    return typed


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """All points of the sweep, validated; names are unique and readable."""
    assignments: list[dict[str, Any]] = []
    for grid in spec.grids:
        for combination in itertools.product(*_axes(grid, spec.zipped)):
            point = {key: value for part in combination for key, value in part.items()}
            excluded = any(all(point.get(k) == v for k, v in rule.items()) for rule in spec.exclude)
            if not excluded and point not in assignments:
                assignments.append(point)
    configs = _configs(spec, [(f"run {overrides}", overrides) for overrides in assignments])
    keys = list(dict.fromkeys(key for point in assignments for key in point))  # every point records every swept key
    typed = [_typed(config, keys) for config in configs]
    varying = name_keys(typed)
    names = [run_name(overrides, varying) for overrides in typed]
    if len(set(names)) != len(names):
        raise ConfigError(f"sweep runs share names: {sorted({n for n in names if names.count(n) > 1})}")
    for name, config in zip(names, configs):
        config.name = f"{spec.name}/{name}"
    return [SweepPoint(name, overrides, config) for name, overrides, config in zip(names, typed, configs)]


def expand_arms(spec: SweepSpec) -> list[SweepPoint]:
    """Every arm of an armed spec (grid points times named arms), its seed still the base's: named by the grid's run
    name and the arm's name; two names for one config refused."""
    grid_points = expand(dataclasses.replace(spec, arms={}, plan=None)) if spec.grids else []
    crossed = [(p.name if len(grid_points) > 1 else "", p.overrides) for p in grid_points] or [("", {})]
    named = [("_".join(part for part in (grid_name, arm) if part) or "base", {**grid_values, **overrides})
             for grid_name, grid_values in crossed for arm, overrides in (spec.arms or {"": {}}).items()]  # fmt: skip
    configs = _configs(spec, [(f"arm {name}", overrides) for name, overrides in named])
    arms = [SweepPoint(name, _typed(config, overrides), config) for (name, overrides), config in zip(named, configs)]
    seen: dict[str, str] = {}
    for arm in arms:
        identity = dataclasses.asdict(arm.config)  # what makes two configs one arm: all but the run's name and seed
        identity.pop("name", None)
        identity["train"].pop("seed", None)
        if (other := seen.setdefault(repr(identity), arm.name)) != arm.name:
            raise ConfigError(f"sweep {spec.name}: arms {other} and {arm.name} are one config (they differ only in "
                              f"their names); give each arm one name")  # fmt: skip
    return arms


def arm_runs(spec: SweepSpec, arms: list[SweepPoint], seeds: tuple[int, ...]) -> list[SweepPoint]:
    """Each arm's runs at these seeds, seed by seed (every arm's first seed first)."""
    points = []
    for seed in seeds:
        for arm in arms:
            config = copy.deepcopy(arm.config)
            config.train.seed = seed
            name = seed_run_name(arm.name, seed)
            config.name = f"{spec.name}/{name}"
            points.append(SweepPoint(name, {**arm.overrides, SEED_KEY: seed}, config))
    return points
