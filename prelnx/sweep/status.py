"""Where a run or a sweep stands, read from its records only (nothing is written, no lock is taken): each run's
status, how far it trained of its budget, its last validation, why it failed or where it diverged; totals; an ETA
for what is left at the pace the runs have had.

A run is `running` while its status says so and its owner (the pid in its lock file) is alive here, or its train.log
moved in the last ACTIVE_S seconds (a run trained by another machine, a Slurm node); a `running` status whose
owner is gone is shown `interrupted` (the same command resumes it). `prelnx status` probes no lock: taking one for
an instant could make a starting training refuse its own run dir.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.eta import duration
from prelnx.records import grain
from prelnx.records.lock import owner_alive
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import read_points
from prelnx.records.run_config import has_config, read_run_config
from prelnx.records.status import read_status

ACTIVE_S = 300.0  # a run whose owner is not a process here (a Slurm node's) is running while its log moves


@dataclass(frozen=True)
class RunState:
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

    @property
    def left(self) -> int:
        return max(0, self.planned - self.step) if not RunStatus(self.status).ended else 0


def _last(rows: list[dict[str, Any]], key: str) -> float | None:
    for row in reversed(rows):
        value = row.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return float(value)
    return None


def _recently_active(run_dir: Path) -> bool:
    try:
        return time.time() - (run_dir / "train.log").stat().st_mtime < ACTIVE_S
    except OSError:
        return False


def run_state(run_dir: Path, name: str | None = None) -> RunState:
    recorded = read_status(run_dir) or {}
    status = RunStatus.of(recorded)
    if status is RunStatus.RUNNING and not (owner_alive(run_dir) or _recently_active(run_dir)):
        status = RunStatus.INTERRUPTED
    rows = read_metrics(run_dir) if (run_dir / "metrics.jsonl").is_file() else []
    planned, unit, step = 0, "epoch", 0
    update = recorded.get("update") if isinstance(recorded.get("update"), int) else None
    if has_config(run_dir):  # the budget in updates when the config caps them, else in epochs
        config = read_run_config(run_dir)
        last = rows[-1] if rows else {}
        if config.train.max_update or grain.of(config) is grain.Grain.UPDATE:
            planned, unit = config.train.max_update or 0, "update"
            step = max(update or 0, int(last.get("num_updates") or 0))
        else:
            planned, unit, step = config.train.max_epoch or 0, "epoch", int(last.get("epoch") or 0)
    seconds = rows[-1].get("wall_seconds") if rows else None
    diverged_at = recorded.get("diverged_at")
    return RunState(run=name or run_dir.name, status=status, step=step, planned=planned, unit=unit,
                    update=update, valid_loss=_last(rows, "valid_loss"),
                    valid_bleu=_last(rows, "valid_bleu"),
                    reason=str(recorded.get("reason") or "") if status is RunStatus.FAILED else "",
                    diverged_at=int(diverged_at) if isinstance(diverged_at, int) else None,
                    seconds=float(seconds) if isinstance(seconds, (int, float)) else None)  # fmt: skip


def is_run_dir(path: Path) -> bool:
    return has_config(path) or (path / "status.json").is_file()


def is_sweep_dir(path: Path) -> bool:
    return (path / "sweep.json").is_file()


def sweep_states(sweep_dir: Path, prefix: str = "") -> list[RunState]:
    """Every run of the sweep, in its order (those not started yet `pending`)."""
    return [run_state(sweep_dir / point["name"], prefix + point["name"]) for point in read_points(sweep_dir)]


def eta_seconds(states: list[RunState]) -> float | None:
    """What is left at the pace so far: seconds per unit of the runs that recorded rows, times the units left,
    spread over the runs running now (at least one). None when nothing is left or no run has a pace yet."""
    left = sum(state.left for state in states)
    timed = [state for state in states if state.seconds and state.step]
    if not left or not timed:
        return None
    pace = sum(state.seconds or 0.0 for state in timed) / sum(state.step for state in timed)
    return pace * left / max(1, sum(state.status == RunStatus.RUNNING for state in states))


def exit_code(states: list[RunState]) -> int:
    """0 every run finished, 3 some still running, 1 otherwise (some diverged, failed, were interrupted or never
    started, and none is running)."""
    if any(state.status == RunStatus.RUNNING for state in states):
        return 3
    return 0 if states and all(state.status == RunStatus.FINISHED for state in states) else 1


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(states: list[RunState]) -> list[str]:
    """The table, its totals and the ETA, as lines."""
    header = ("run", "status", "progress", "valid loss", "valid BLEU", "diverged at", "failure")
    rows = [(s.run, s.status, f"{s.unit} {s.step}/{s.planned or '?'}" + (f" (update {s.update})" if s.update and
             s.unit == "epoch" else ""),
             _number(s.valid_loss, 3), _number(s.valid_bleu, 2), "-" if s.diverged_at is None else str(s.diverged_at),
             s.reason or "-") for s in states]  # fmt: skip
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = ["  ".join(f"{cell:<{widths[i]}}" for i, cell in enumerate(row[:-1])) + "  " + row[-1]
             for row in [header, *rows]]  # fmt: skip
    counts: dict[str, int] = {}
    for state in states:
        counts[state.status] = counts.get(state.status, 0) + 1
    lines.append(f"{len(states)} run(s): " + ", ".join(f"{count} {status}" for status, count in sorted(counts.items())))
    eta = eta_seconds(states)
    left = sum(state.left for state in states)
    if left:
        units = {state.unit for state in states if state.left}
        unit = f"{units.pop()}s" if len(units) == 1 else "epochs/updates"
        lines.append(f"left: {left} {unit} of the runs' budgets; ETA " + (duration(eta) if eta is not None else
                     "unknown until a run records a validation"))  # fmt: skip
    return lines
