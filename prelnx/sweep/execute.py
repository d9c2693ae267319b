"""Running a sweep: expand the spec, save it, execute the points, keep the summary current (the report that ends
`prelnx sweep` is written by the report, above: report/report.py's `report_after_sweep`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from prelnx.atomic import write_text_atomic
from prelnx.config.errors import Refusal
from prelnx.plan.rundirs import sweep_dir
from prelnx.records.lock import held
from prelnx.records.outcome import RunStatus
from prelnx.records.results import SUMMARY_LOCK
from prelnx.sweep.executors import run_local, run_submitit
from prelnx.sweep.preflight import check_points, prepare_generated_data, warnings
from prelnx.sweep.progress import Snapshot, showing_also
from prelnx.sweep.spec import SweepPoint, SweepSpec, expand
from prelnx.sweep.summary import summarize

EXECUTORS = ("local", "slurm", "submitit-local")


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
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(sweep_dir / "sweep.yaml", yaml.safe_dump(spec.to_dict(), sort_keys=False))
    index = {"name": spec.name, "runs": [{"name": p.name, "overrides": p.overrides} for p in points]}
    write_text_atomic(sweep_dir / "sweep.json", json.dumps(index, indent=2) + "\n")


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

