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
import logging
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from prelnx.atomic import write_text_atomic
from prelnx.console import counted
from prelnx.config.load import ConfigError
from prelnx.config.schedule import lr_curve_warnings
from prelnx.exits import Refusal
from prelnx.launch import Executor
from prelnx.launch.local import sigterm_interrupts
from prelnx.launch.prepare import ensure_data
from prelnx.plan.data import data_dir, data_problem
from prelnx.plan.launch import plan_run, sweep_dir
from prelnx.records.frozen_claims import CLAIMS_KEY, frozen_claims
from prelnx.records.lock import held
from prelnx.records.outcome import RunStatus
from prelnx.records.raw_data import restore_runs
from prelnx.records.results import SUMMARY_LOCK, SWEEP_INDEX, override_keys, read_index, sweep_rows
from prelnx.records.run_config import has_config
from prelnx.sequential import SeedPlan
from prelnx.sweep import looks
from prelnx.sweep.executors import run_local, run_submitit
from prelnx.sweep.looks import Decider, run_looks
from prelnx.sweep.progress import Snapshot
from prelnx.sweep.seeds import fixed_plan
from prelnx.sweep.spec import SweepPoint, SweepSpec, arm_runs, expand, expand_arms

log = logging.getLogger(__name__)
EXECUTORS = tuple(executor.value for executor in Executor)  # launch.Executor owns the names

# `update`: the last update trained (status.json); the last row's update is the same for an ended run
RESULT_COLUMNS = ["status", "update", "best_valid_loss", "final_valid_loss", "best_valid_bleu", "epochs",
                  "wall_seconds"]  # fmt: skip
TEST_COLUMNS = ["test_bleu_tokenized", "test_sacrebleu"]  # present once `prelnx evaluate` ran


class Summary(NamedTuple):
    """What summarize wrote: one row per run (summary.csv's) and summary.md's text, for a caller to print or embed
    without reading the file back."""

    rows: list[dict[str, Any]]
    markdown: str


def summarize(sweep_dir: Path) -> Summary:
    """One row per run: its overrides, then its results. Also (re)writes summary.csv and summary.md."""
    rows = sweep_rows(sweep_dir)
    tested = any(row["test_bleu_tokenized"] is not None for row in rows)
    columns = ["run", *override_keys(read_index(sweep_dir)["runs"]), *RESULT_COLUMNS, *(TEST_COLUMNS if tested else [])]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(sweep_dir / "summary.csv", buffer.getvalue())
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns]
        if row.get("status") == RunStatus.DIVERGED and row.get("update") is not None:
            cells[columns.index("status")] = f"diverged (update {row['update']})"
        lines.append("| " + " | ".join(cells) + " |")
    markdown = "\n".join(lines) + "\n"
    write_text_atomic(sweep_dir / "summary.md", markdown)
    return Summary(rows, markdown)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-2 else f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


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
        for warning in lr_curve_warnings(point.config.schedule, point.config.optimizer.lr):
            found[warning].append(point.name)
    return _grouped(found)


def prepare_generated_data(points: list[SweepPoint]) -> None:
    """Generate the synthetic task once, before the runs start side by side (not once per run, racing)."""
    done: set[Path] = set()
    for point in points:
        folder = data_dir(point.config)
        if point.config.data.dataset == "synthetic" and folder not in done:
            if not (folder / "manifest.json").is_file():
                log.info(f"generating the synthetic task into {folder}")
            ensure_data(point.config)
            done.add(folder)


def launch_problems(points: list[SweepPoint]) -> list[str]:
    """Each point's workers and batch on this machine (train.processes, effective_batch_tokens, nodes)."""
    found: dict[str, list[str]] = defaultdict(list)
    for point in points:
        try:
            plan_run(point.config, Path(point.name))
        except Refusal as error:  # a bug in plan_run reads as a bug, not as a point to list
            found[str(error)].append(point.name)
    return _grouped(found)


def check_points(points: list[SweepPoint]) -> None:
    """ConfigError listing every data, worker and batch problem of the sweep; nothing is created."""
    if problems := data_problems(points) + launch_problems(points):
        raise ConfigError("the sweep cannot start; nothing was created:\n  " + "\n  ".join(problems))


def check_start(spec: SweepSpec, sweep_dir: Path, points: list[SweepPoint]) -> None:
    """Whether the sweep could start, before anything is created (the run and its dry run alike)."""
    check_points(points)
    check_folder(spec, sweep_dir)


def check_folder(spec: SweepSpec, sweep_dir: Path) -> None:
    """A folder that holds another sweep is refused: its runs, looks and frozen claims are that sweep's."""
    if has_config(sweep_dir):
        raise Refusal(f"{sweep_dir}: a run dir (prelnx train's), not a sweep folder; give this sweep another --out")
    if (held := read_index(sweep_dir)["name"]) not in ("", spec.name):
        raise Refusal(f"{sweep_dir}: holds sweep {held!r}, not {spec.name!r}; give this sweep another --out")


def plan_sweep(spec: SweepSpec, out: Path | None) -> tuple[Path, list[SweepPoint]]:
    """The folder and every run the sweep may train (an armed spec: every arm to its plan's last look)."""
    if spec.armed:
        arms, plan = armed(spec)
        return out or sweep_dir(spec.name), arm_runs(spec, arms, plan.order)
    return out or sweep_dir(spec.name), expand(spec)


def armed(spec: SweepSpec) -> tuple[list[SweepPoint], SeedPlan]:
    """An armed spec's arms and its plan; arms without `seeds:` have the base's seed alone."""
    arms = expand_arms(spec)
    return arms, spec.plan or fixed_plan((arms[0].config.train.seed,))


def summarize_locked(sweep_dir: Path) -> Summary:
    """Two sweeps on one folder rewrite its summary one at a time."""
    with held(sweep_dir / SUMMARY_LOCK):
        return summarize(sweep_dir)


def plan_lines(spec: SweepSpec, sweep_dir: Path, points: list[SweepPoint]) -> list[str]:
    """What `prelnx sweep --dry-run` prints: the folder and each run with its overrides (an armed spec: its arms and
    seed plan, sweep/looks.py)."""
    if spec.armed:
        return [f"-> {sweep_dir}", *looks.plan_lines(spec, *armed(spec))]
    return [f"sweep {spec.name}: {counted(len(points), 'run')} -> {sweep_dir}"] + [
        f"  {p.name}: " + ", ".join(f"{k}={v}" for k, v in p.overrides.items()) for p in points]


def save_spec(sweep_dir: Path, spec: SweepSpec, points: list[SweepPoint]) -> None:
    write_text_atomic(sweep_dir / "sweep.yaml", yaml.safe_dump(spec.to_dict(), sort_keys=False))
    save_index(sweep_dir, spec, points)


def save_index(sweep_dir: Path, spec: SweepSpec, points: list[SweepPoint]) -> None:
    """sweep.json's runs (a sequential sweep's grow look by look); its other keys are kept, the claims it is judged
    on frozen when it first starts (issue 46: a resumed sweep keeps them)."""
    index = read_index(sweep_dir)
    index.update({"name": spec.name, "runs": [{"name": p.name, "overrides": p.overrides} for p in points],
                  CLAIMS_KEY: frozen_claims(sweep_dir, (p.config.model.layout for p in points))})  # fmt: skip
    write_text_atomic(sweep_dir / SWEEP_INDEX, json.dumps(index, indent=2) + "\n")


def run_sweep(
    spec: SweepSpec,
    *,
    out: Path | None = None,
    jobs: int = 1,
    executor: str = "local",
    slurm_options: dict[str, Any] | None = None,
    after_run: Callable[[Path], None] | None = None,
    force: bool = False,
    pin_cores: bool = False,
    progress_also: Callable[[Snapshot], str] | None = None,
    decide: Decider | None = None,
    raw_data: Path | None = None,
) -> list[dict[str, Any]]:
    """Run every point not finished yet; returns the summary rows (status `refused`: a run left alone, its run dir
    holds another run). `after_run` is called on each run dir as it ends;
    `progress_also` renders what the sweep's progress lines end with (a reproduction's own progress). A sequential
    plan runs look by look (sweep/looks.py), its claims decided by `decide` (the report's, passed from above).
    `raw_data`: a study's committed raw data (docs/results/<study>/runs): its done runs are put back into the sweep
    folder first, so that only what is missing trains (records/raw_data.py)."""
    if executor not in EXECUTORS:
        raise Refusal(f"--executor {executor}: allowed: {', '.join(EXECUTORS)}")
    if force and executor != "local":
        raise Refusal("--force works with --executor local (a requeued Slurm job must resume, not start again)")
    sweep_dir, points = plan_sweep(spec, out)
    check_start(spec, sweep_dir, points)
    for warning in warnings(points):
        log.warning(warning)
    arms, plan = armed(spec) if spec.armed else ([], None)
    sequential = plan is not None and plan.sequential
    if sequential and decide is None:
        raise Refusal(f"sweep {spec.name}: a sequential seeds: plan needs the claims' decider (prelnx sweep passes it)")
    save_spec(sweep_dir, spec, arm_runs(spec, arms, plan.seeds_at(0)) if sequential else points)
    if raw_data is not None:
        if not raw_data.is_dir():
            raise Refusal(f"--raw-data {raw_data}: no such folder (a study's committed raw data, docs/results/<study>/in_progress or runs)")
        restored = restore_runs(raw_data, sweep_dir, [point.name for point in points])
        log.info(f"raw data {raw_data}: {len(restored)} done run(s) put back into {sweep_dir}; they will not train again")
    prepare_generated_data(points)
    log.info(f"sweep {spec.name}: {'at most ' if sequential else ''}{counted(len(points), 'run')} in {sweep_dir} "
             f"({executor}"
         f"{f', {jobs} at a time' if executor == 'local' else ''})")  # fmt: skip

    statuses: dict[str, RunStatus] = {}

    def on_done(point: SweepPoint, status: RunStatus) -> None:
        statuses[point.name] = status
        if after_run is not None and status is RunStatus.FINISHED:
            after_run(sweep_dir / point.name)
        summarize_locked(sweep_dir)

    def run_points(points: list[SweepPoint]) -> None:
        if executor == "local":
            run_local(points, sweep_dir, jobs, on_done, force=force, pin_cores=pin_cores, also=progress_also)
        else:
            options = {**spec.slurm, **{key: v for key, v in (slurm_options or {}).items() if v is not None}}
            if executor == "submitit-local":
                options.setdefault("cpus_per_run", 1)
            with sigterm_interrupts():  # kill stops this client as Ctrl-C does (exit 130); Slurm jobs train on
                run_submitit(points, sweep_dir, None if executor == "slurm" else "local", options, on_done)

    try:
        if sequential:
            assert plan is not None and decide is not None
            run_looks(spec, sweep_dir, arms, plan, decide, run_points,
                      lambda scheduled: save_index(sweep_dir, spec, scheduled))
        else:
            run_points(points)
    finally:
        summary = summarize_locked(sweep_dir)
    log.info(summary.markdown)
    elsewhere = sorted(name for name, status in statuses.items() if status is RunStatus.ELSEWHERE)
    if elsewhere:
        log.info(f"{len(elsewhere)} run(s) {RunStatus.ELSEWHERE}, trained by another prelnx process: {', '.join(elsewhere)}. "
             f"Run the sweep again once it has ended to see them finished here.")
    refused = RunStatus.REFUSED
    return [{**row, "status": refused.value} if statuses.get(row["run"]) is refused else row for row in summary.rows]

