"""Running a sweep: expand the spec, check it, save it, execute the points, keep the summary current (the report that
ends `prelnx sweep` is written by the report, above: report/report.py's `report_after_sweep`). summary.csv and
summary.md are read only through the records (records/results.py).

Before anything runs every point's data and batch are checked, and schedules that are probably a mistake warned of,
in one message for all points (a problem shared by several listed once, with how many): a sweep without its data
stops with exit code 2 and creates nothing, instead of failing point after point."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from prelnx.atomic import write_text_atomic
from prelnx.config.errors import Refusal
from prelnx.config.load import ConfigError
from prelnx.config.schema import schedule_warnings
from prelnx.launch.prepare import ensure_data
from prelnx.plan.data import data_dir, data_problem
from prelnx.plan.launch import plan_run, sweep_dir
from prelnx.records.frozen_claims import CLAIMS_KEY, frozen_claims
from prelnx.records.lock import held
from prelnx.records.outcome import RunStatus
from prelnx.records.results import SUMMARY_LOCK, SWEEP_INDEX, read_points, sweep_rows
from prelnx.sweep.executors import run_local, run_submitit
from prelnx.sweep.progress import Snapshot, showing_also
from prelnx.sweep.spec import SweepPoint, SweepSpec, expand

EXECUTORS = ("local", "slurm", "submitit-local")

# `update`: the last update trained (status.json); the last row's update is the same for an ended run
RESULT_COLUMNS = ["status", "update", "best_valid_loss", "final_valid_loss", "best_valid_bleu", "epochs",
                  "wall_seconds"]  # fmt: skip
TEST_COLUMNS = ["test_bleu_tokenized", "test_sacrebleu"]  # present once `prelnx evaluate` ran


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per run: its overrides, then its results. Also (re)writes summary.csv and summary.md."""
    keys = list(dict.fromkeys(key for point in read_points(sweep_dir) for key in point["overrides"]))
    rows = sweep_rows(sweep_dir)
    columns = ["run", *keys, *RESULT_COLUMNS]
    if any(row["test_bleu_tokenized"] is not None for row in rows):
        columns += TEST_COLUMNS
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(sweep_dir / "summary.csv", buffer.getvalue())
    write_text_atomic(sweep_dir / "summary.md", _markdown(rows, columns))
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-2 else f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def _markdown(rows: list[dict[str, Any]], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns]
        if row.get("status") == RunStatus.DIVERGED and row.get("update") is not None:
            cells[columns.index("status")] = f"diverged (update {row['update']})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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


def plan_sweep(spec: SweepSpec, out: Path | None) -> tuple[Path, list[SweepPoint]]:
    return out or sweep_dir(spec.name), expand(spec)


def summarize_locked(sweep_dir: Path) -> list[dict[str, Any]]:
    """Two sweeps on one folder rewrite its summary one at a time."""
    with held(sweep_dir / SUMMARY_LOCK):
        return summarize(sweep_dir)


def plan_lines(spec: SweepSpec, sweep_dir: Path, points: list[SweepPoint]) -> list[str]:
    """What `prelnx sweep --dry-run` prints: the folder and each run with its overrides."""
    return [f"sweep {spec.name}: {len(points)} runs -> {sweep_dir}"] + [
        f"  {p.name}: " + ", ".join(f"{k}={v}" for k, v in p.overrides.items()) for p in points]


def save_spec(sweep_dir: Path, spec: SweepSpec, points: list[SweepPoint]) -> None:
    write_text_atomic(sweep_dir / "sweep.yaml", yaml.safe_dump(spec.to_dict(), sort_keys=False))
    index = {"name": spec.name, "runs": [{"name": p.name, "overrides": p.overrides} for p in points],
             CLAIMS_KEY: frozen_claims(sweep_dir, (p.config.model.layout for p in points))}  # issue 46
    write_text_atomic(sweep_dir / SWEEP_INDEX, json.dumps(index, indent=2) + "\n")


def run_sweep(
    spec: SweepSpec,
    *,
    out: Path | None = None,
    jobs: int = 1,
    executor: str = "local",
    slurm_options: dict[str, Any] | None = None,
    after_run: Callable[[Path], None] | None = None,
    echo: Callable[[str], None] = print,
    force: bool = False,
    pin_cores: bool = False,
    progress_also: Callable[[Snapshot], str] | None = None,
) -> list[dict[str, Any]]:
    """Run every point not finished yet; returns the summary rows. `after_run` is called on each run dir as it ends;
    `progress_also` renders what the sweep's progress lines end with (a reproduction's own progress)."""
    if executor not in EXECUTORS:
        raise Refusal(f"--executor {executor}: allowed: {', '.join(EXECUTORS)}")
    if force and executor != "local":
        raise Refusal("--force works with --executor local (a requeued Slurm job must resume, not start again)")
    sweep_dir, points = plan_sweep(spec, out)
    check_points(points)  # before anything is created
    for warning in warnings(points):
        echo(f"warning: {warning}")
    save_spec(sweep_dir, spec, points)
    prepare_generated_data(points, echo)
    echo(f"sweep {spec.name}: {len(points)} runs in {sweep_dir} ({executor}, {jobs} at a time)")

    def on_done(point: SweepPoint, status: RunStatus) -> None:
        if after_run is not None and status is RunStatus.FINISHED:
            after_run(sweep_dir / point.name)
        summarize_locked(sweep_dir)

    statuses: dict[str, RunStatus] = {}
    try:
        if executor == "local":
            with showing_also(progress_also):
                statuses = run_local(points, sweep_dir, jobs, on_done, echo, force=force, pin_cores=pin_cores)
        else:
            options = {**spec.slurm, **(slurm_options or {})}
            if executor == "submitit-local":
                options.setdefault("cpus_per_run", 1)
            statuses = run_submitit(points, sweep_dir, None if executor == "slurm" else "local", options, on_done, echo)
    finally:
        rows = summarize_locked(sweep_dir)
    echo((sweep_dir / "summary.md").read_text())
    elsewhere = sorted(name for name, status in statuses.items() if status is RunStatus.ELSEWHERE)
    if elsewhere:
        echo(f"{len(elsewhere)} run(s) {RunStatus.ELSEWHERE}, trained by another prelnx process: {', '.join(elsewhere)}. "
             f"Run the sweep again once it has ended to see them finished here.")
    return rows

