"""Where a run or a sweep stands, from its records only (nothing written, no lock taken): each run's status, how far
it trained of its budget, its last validation, why it failed or where it diverged; totals; an ETA at the runs' pace.

A run is `running` while its status says so and its owner (the pid and host in its lock file) is alive here, or, for
an owner on another host (a Slurm node), its train.log moved in the last ACTIVE_S seconds; else it is `interrupted`.
No lock is probed: taking one for an instant could make a starting training refuse its own run dir.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from prelnx.config.schema import Config
from prelnx.console import columns
from prelnx.eta import at_pace, duration
from prelnx.exits import Refusal
from prelnx.records import grain
from prelnx.records.lock import owner_alive
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import SWEEP_INDEX, finite, read_index
from prelnx.records.run_config import has_config, read_run_config
from prelnx.records.status import read_status
from prelnx.sweep.spec import load_spec, point_config

ACTIVE_S = 300.0  # a run whose owner is not a process here (a Slurm node's) is running while its log moves


@dataclass(frozen=True)
class RunStanding:
    run: str
    status: RunStatus  # finished | diverged | failed | running | interrupted | pending
    step: int  # epochs (or updates, at the update grain) trained
    planned: int  # the budget in that unit (0: the config sets none)
    unit: str  # "epoch" or "update"
    update: int | None
    valid_loss: float | None  # the last finite validation
    valid_bleu: float | None
    reason: str  # why it failed ("" otherwise)
    diverged_at: int | None
    seconds: float | None  # wall seconds at its last row
    updates_per_epoch: int | None = None  # an epoch's updates (its rows; a pending run: a run of the same batches)

    @property
    def left(self) -> int:
        return max(0, self.planned - self.step) if not self.status.ended else 0


def _last(rows: list[dict[str, Any]], key: str) -> float | None:
    return ([None] + finite(row.get(key) for row in rows))[-1]


def _recently_active(run_dir: Path) -> bool:
    try:
        return time.time() - (run_dir / "train.log").stat().st_mtime < ACTIVE_S
    except OSError:
        return False


def run_state(run_dir: Path, name: str | None = None, config: Config | None = None) -> RunStanding:
    """The run's state from its records; `config`: its config when known already (a sweep's run not started has
    none in its run dir, and its budget is still known), else its config.yaml's."""
    recorded = read_status(run_dir)
    status = RunStatus.of(recorded)
    alive = owner_alive(run_dir)  # None: its owner is not known here (a Slurm node's): its log must move
    if status is RunStatus.RUNNING and not (_recently_active(run_dir) if alive is None else alive):
        status = RunStatus.INTERRUPTED
    rows = read_metrics(run_dir)
    last = rows[-1] if rows else {}
    update = recorded.get("update") if isinstance(recorded.get("update"), int) else None
    if config is None and has_config(run_dir):
        config = read_run_config(run_dir)
    planned, unit, step = 0, "epoch", 0  # the budget: in updates when the config caps them (or validates every N)
    if config is not None and grain.budget(config) is grain.Grain.UPDATE:
        planned, unit = config.train.max_update or 0, "update"
        step = max(update or 0, int(last.get("num_updates") or 0))
    elif config is not None:
        planned, step = config.train.max_epoch or 0, int(last.get("epoch") or 0)
    per_epoch = None  # the update count of an epoch, from the last epoch row (epochs of one run are equal)
    if unit == "epoch" and isinstance(last.get("epoch"), int) and last["epoch"] > 0 and last.get("num_updates"):
        per_epoch = int(last["num_updates"]) // last["epoch"]
    seconds, diverged_at = last.get("wall_seconds"), recorded.get("diverged_at")
    unreadable = not recorded and (run_dir / "status.json").exists()  # damaged from outside: it cannot know, says so
    return RunStanding(run=name or run_dir.name, status=status, step=step, planned=planned, unit=unit, update=update,
                    valid_loss=_last(rows, "valid_loss"), valid_bleu=_last(rows, "valid_bleu"),
                    reason="status.json unreadable: its status is not known" if unreadable else
                    str(recorded.get("reason") or "") if status is RunStatus.FAILED else "",
                    diverged_at=int(diverged_at) if isinstance(diverged_at, int) else None,
                    seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
                    updates_per_epoch=per_epoch)  # fmt: skip


def is_run_dir(path: Path) -> bool:
    return has_config(path) or (path / "status.json").is_file()


def is_sweep_dir(path: Path) -> bool:
    return (path / SWEEP_INDEX).is_file()


def sweep_states(sweep_dir: Path, prefix: str = "") -> list[RunStanding]:
    """Every run of the sweep, in its order (those not started yet `pending`, with the budget of their config from
    sweep.yaml and the run's grid point)."""
    spec = None
    with contextlib.suppress(Refusal, OSError):  # a spec whose base moved: its pending runs' budgets are unknown ("?")
        spec = load_spec(sweep_dir / "sweep.yaml") if (sweep_dir / "sweep.yaml").is_file() else None
    states, configs = [], []
    for point in read_index(sweep_dir)["runs"]:
        run_dir = sweep_dir / point["name"]
        config = read_run_config(run_dir) if has_config(run_dir) else None
        if config is None and spec is not None:  # not started: the spec's base, its `set:` and the point's grid values
            with contextlib.suppress(Refusal, OSError):
                config = point_config(spec, point.get("overrides", {}))
        states.append(run_state(run_dir, prefix + point["name"], config))
        configs.append(config)
    # a pending run's epoch budget gets its size in updates from a run of the same batches that trained
    trained = [(_batches(c), s.updates_per_epoch) for s, c in zip(states, configs) if s.updates_per_epoch and c]
    for i, (state, config) in enumerate(zip(states, configs)):
        if state.status is RunStatus.PENDING and state.unit == "epoch" and config is not None:
            size = next((n for batches, n in trained if batches == _batches(config)), None)
            states[i] = dataclasses.replace(state, updates_per_epoch=size)
    return states


class SummaryAge(NamedTuple):
    written: str  # summary.csv's file time ("": none written yet)
    behind: list[str]  # the runs whose records (status.json, metrics, test BLEU) changed since


def summary_age(sweep_dir: Path) -> SummaryAge:
    """How old summary.csv is: a sweep rewrites it as each run ends, so one killed, or still running, leaves it behind
    its runs' records."""
    try:
        written = (sweep_dir / "summary.csv").stat().st_mtime
    except OSError:
        return SummaryAge("", [])
    files = ("status.json", "metrics.jsonl", "eval/test.json")
    behind = [point["name"] for point in read_index(sweep_dir)["runs"] if any(
        path.is_file() and path.stat().st_mtime > written for path in (sweep_dir / point["name"] / f for f in files))]
    return SummaryAge(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(written)), behind)


def summary_lines(sweep_dir: Path) -> list[str]:
    """`prelnx status` of a sweep: that summary.csv is behind its runs, when it is."""
    age = summary_age(sweep_dir)
    return [f"summary.csv, summary.md: as of {age.written}, older than the records of {len(age.behind)} run(s) "
            f"({', '.join(age.behind)}); the sweep rewrites them as each run ends: this table is the runs' own"
            ] if age.behind else []  # fmt: skip


def _batches(config: Config) -> tuple[Any, ...]:
    """What an epoch's update count depends on: the data and how it is batched (not lr, warm-up, layout or seed)."""
    t = config.train
    return (config.task, config.data, t.max_tokens, t.update_freq, t.effective_batch_tokens, t.processes, t.nodes)


def eta_seconds(states: list[RunStanding]) -> float | None:
    """What is left at the pace so far: seconds per unit of the runs that recorded rows, times the units left,
    spread over the runs running now. None when nothing is left, no run trains now or no run has a pace yet."""
    running = sum(state.status == RunStatus.RUNNING for state in states)
    left = sum(state.left for state in states) / max(1, running)
    timed = [state for state in states if state.seconds and state.step]
    return at_pace(sum(s.seconds or 0.0 for s in timed), sum(s.step for s in timed), left) if left and running else None


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _progress(s: RunStanding) -> str:
    """`epoch 3/8 (update 1200)`, `update 0/4000`; a pending run's epoch budget with its updates when known."""
    cell = f"{s.unit} {s.step}/{s.planned or '?'}"
    if s.update and s.unit == "epoch":
        return f"{cell} (update {s.update})"
    if s.updates_per_epoch and s.planned:
        return f"{cell} (~{s.planned * s.updates_per_epoch} updates)"
    return cell


def table(states: list[RunStanding]) -> list[str]:
    """The table, its totals and the ETA, as lines."""
    header = ("run", "status", "progress", "valid loss", "valid BLEU", "diverged at", "failure")
    rows = [(s.run, s.status, _progress(s),
             _number(s.valid_loss, 3), _number(s.valid_bleu, 2), "-" if s.diverged_at is None else str(s.diverged_at),
             s.reason or "-") for s in states]  # fmt: skip
    lines = columns([header, *rows])
    counts = Counter(state.status for state in states)
    lines.append(f"{len(states)} run(s): " + ", ".join(f"{count} {status}" for status, count in sorted(counts.items())))
    eta = eta_seconds(states)
    left = sum(state.left for state in states)
    if left:
        unit = grain.units_label({state.unit for state in states if state.left})
        lines.append(f"left: {left} {unit} of the runs' budgets; " + (
            "no ETA: no run is training" if all(state.status != RunStatus.RUNNING for state in states) else
            f"ETA {duration(eta)}" if eta is not None else "ETA unknown until a run records a validation"))
    return lines
