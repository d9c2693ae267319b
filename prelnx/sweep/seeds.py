"""A sweep spec's `arms:` and `seeds:` sections (their keys, and why `prelnx sweep --seeds` wins over `seeds:`:
docs/sequential.md, "The spec"), checked at load: every problem in one message naming its key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prelnx.config.load import ConfigError
from prelnx.sequential import FUTILITY, SPENDING, SeedPlan, problems

SEED_KEY = "train.seed"
PLAN_KEYS = {"looks", "method", "futility", "seeds"}
ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def _seed_list(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return tuple(range(1, value + 1))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def fixed_plan(seeds: tuple[int, ...]) -> SeedPlan:
    return SeedPlan((len(seeds),), seeds=seeds)


def parse_seeds(path: Path, value: Any) -> SeedPlan:
    """`seeds:` as a plan: a list or count is one look (a fixed design); a mapping is a sequential plan."""
    if (seeds := _seed_list(value)) is not None:
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"{path}: seeds: {list(seeds)}: a seed is listed twice")
        return fixed_plan(seeds)
    usage = ("expected a list of seeds ([1, 2, 3]), a count (3), or a plan {looks: [4, 6, 8], "
             f"method: {' | '.join(SPENDING)}, futility: {FUTILITY}}}")  # fmt: skip
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: seeds: {usage}, got {value!r}")
    found = [f"seeds.{key}: unknown; allowed: {', '.join(sorted(PLAN_KEYS))}" for key in value if key not in PLAN_KEYS]
    looks = value.get("looks")
    if not isinstance(looks, list):
        found.append(f"seeds.looks: {usage}")
        looks = []
    order = value.get("seeds") or []
    if order and (not isinstance(order, list) or _seed_list(order) is None):  # a count is no order
        found.append(f"seeds.seeds: expected a list of integer seeds, got {order!r}")
        order = []
    plan = SeedPlan(tuple(looks), str(value.get("method", "obrien-fleming")), value.get("futility", FUTILITY),
                    tuple(order))  # fmt: skip
    found += [f"seeds.{problem}" for problem in problems(plan)] if looks else []
    if found:
        raise ConfigError(f"{path}: " + "; ".join(found))
    return plan


def parse_arms(path: Path, value: Any) -> dict[str, dict[str, Any]]:
    """`arms:` name -> overrides; names are folder-safe and an arm's seed comes from `seeds:`, never its overrides."""
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{path}: arms: expected a mapping of arm name -> mapping of overrides (KEY: VALUE)")
    found = []
    for name, overrides in value.items():
        if not isinstance(name, str) or not ARM_NAME.fullmatch(name):
            found.append(f"arms.{name}: an arm's name is letters, digits and ._+- (it names the runs' folders)")
        if not isinstance(overrides, dict):
            found.append(f"arms.{name}: expected a mapping of overrides (KEY: VALUE), got {overrides!r}")
        elif SEED_KEY in overrides:
            found.append(f"arms.{name}: {SEED_KEY} is set by seeds:, not by an arm")
    if found:
        raise ConfigError(f"{path}: " + "; ".join(found))
    return {str(name): dict(overrides) for name, overrides in value.items()}


def seed_run_name(arm: str, seed: int) -> str:
    return f"{arm}_seed-{seed}"
