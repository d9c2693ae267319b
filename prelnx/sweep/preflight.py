"""A sweep checked before anything runs: every point's data, and schedules that are probably a mistake. One message
for all points (a problem shared by several listed once, with how many): a sweep without its data stops with exit
code 2 and creates nothing, instead of failing point after point."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from prelnx.config.load import ConfigError
from prelnx.config.schema import schedule_warnings
from prelnx.launch.prepare import ensure_data
from prelnx.plan.data import data_dir, data_problem
from prelnx.plan.launch import plan_run
from prelnx.sweep.spec import SweepPoint


def _grouped(found: dict[str, list[str]]) -> list[str]:
    lines = []
    for message, names in found.items():
        which = names[0] if len(names) == 1 else f"{len(names)} runs: {', '.join(names[:4])}{', ...' if len(names) > 4 else ''}"
        lines.append(f"{message} ({which})")
    return lines


def data_problems(points: list[SweepPoint]) -> list[str]:
    found: dict[str, list[str]] = defaultdict(list)
    checked: dict[tuple, str | None] = {}
    for point in points:
        data = point.config.data
        key = (data.dataset, str(data.path), data.source_lang, data.target_lang)
        if key not in checked:
            checked[key] = data_problem(point.config)
        if checked[key] is not None:
            found[checked[key]].append(point.name)
    return _grouped(found)


def warnings(points: list[SweepPoint]) -> list[str]:
    found: dict[str, list[str]] = defaultdict(list)
    for point in points:
        for warning in schedule_warnings(point.config):
            found[warning].append(point.name)
    return _grouped(found)


def prepare_generated_data(points: list[SweepPoint], echo) -> None:  # type: ignore[no-untyped-def]
    """Generate the synthetic task once, before the runs start side by side (not once per run, racing)."""
    done: set[Path] = set()
    for point in points:
        folder = data_dir(point.config)
        if point.config.data.dataset == "synthetic" and folder not in done:
            if not (folder / "manifest.json").is_file():
                echo(f"generating the synthetic task into {folder}")
            ensure_data(point.config)
            done.add(folder)


def launch_problems(points: list[SweepPoint]) -> list[str]:
    """Each point's workers and batch on this machine (train.processes, effective_batch_tokens, nodes)."""
    found: dict[str, list[str]] = defaultdict(list)
    for point in points:
        try:
            plan_run(point.config, Path(point.name))
        except ValueError as error:
            found[str(error)].append(point.name)
    return _grouped(found)


def check_points(points: list[SweepPoint]) -> None:
    """ConfigError listing every data, worker and batch problem of the sweep; nothing is created."""
    if problems := data_problems(points) + launch_problems(points):
        raise ConfigError("the sweep cannot start; nothing was created:\n  " + "\n  ".join(problems))
