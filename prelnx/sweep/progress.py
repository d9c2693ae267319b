"""Progress over a whole sweep, fed the runs' RowDone events and final statuses: runs done / total, epochs (or
updates: the runs' grain) done / planned, and an ETA. The pace is the steps trained after each run's first row (which
also holds fairseq's start-up, and for a resumed run everything before it) over the time since the sweep's first row
(prelnx/eta.py's at_pace). `also` ends every line with ` || also(snapshot)` (a reproduction's stages beside it), from the
typed `Snapshot`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from prelnx.eta import at_pace, duration
from prelnx.records import grain
from prelnx.records.outcome import RunStatus
from prelnx.sweep.spec import SweepPoint


@dataclass(frozen=True)
class Snapshot:
    """A sweep's progress: runs done of total, steps trained of planned (in `unit`), the ETA in seconds (None before
    the pace is known or when nothing is left), the runs' end statuses so far."""

    done: int
    total: int
    trained: int
    planned: int
    remaining: int  # steps the runs that have not ended still have to train
    unit: str
    eta_seconds: float | None
    statuses: tuple[tuple[str, int], ...]


class SweepProgress:
    """Thread-safe."""

    def __init__(self, points: list[SweepPoint], also: Callable[[Snapshot], str] | None = None) -> None:
        self.total = len(points)
        self.planned = {p.name: grain.planned(p.config) for p in points}
        self.budget = {p.name: grain.budget(p.config) for p in points}  # the unit each run's budget counts in
        self.stride = {p.name: grain.stride(p.config) if grain.of(p.config) is self.budget[p.name] else
                       self.planned[p.name] for p in points}  # units per row (an epoch's updates: unknown before it)
        self.unit = grain.units_label({grain.budget(p.config).value for p in points})
        self.steps: dict[str, int] = {p.name: 0 for p in points}
        self.seen: set[str] = set()  # runs that recorded a row in this process
        self.counted = 0  # steps trained after each run's first row, for the pace
        self.clock: float | None = None  # when the sweep's first row came
        self.statuses: Counter[str] = Counter()
        self.ended: set[str] = set()
        self.lock = threading.Lock()
        self.also = also

    def row_done(self, name: str, step: int) -> str:
        """A run recorded the row at `step` (epoch or update); returns the sweep's progress."""
        with self.lock:
            if self.clock is None:
                self.clock = time.monotonic()
            if name in self.seen and step > self.steps.get(name, 0):
                self.counted += min(step - self.steps.get(name, 0), self.stride.get(name, 1))
            self.seen.add(name)
            self.steps[name] = max(self.steps.get(name, 0), step)
            return self._summary()

    def run_done(self, name: str, status: str) -> str:
        with self.lock:
            self.statuses[status] += 1
            self.ended.add(name)  # whatever it did not train will not be trained by this sweep
            if status == RunStatus.FINISHED:  # one found finished sends no rows: it trained its budget all the same
                self.steps[name] = self.planned[name]
            return self._summary()

    def snapshot(self) -> Snapshot:
        done = sum(count for status, count in self.statuses.items() if RunStatus(status).ended)  # not interrupted ones
        planned = sum(self.planned.values())
        trained = sum(min(self.steps[name], self.planned[name]) for name in self.planned)
        remaining = sum(self.planned[n] - min(self.steps[n], self.planned[n]) for n in self.planned
                        if n not in self.ended)  # fmt: skip
        eta = None
        if planned and remaining > 0 and self.clock is not None:
            eta = at_pace(time.monotonic() - self.clock, self.counted, remaining)
        return Snapshot(done, self.total, trained, planned, remaining, self.unit, eta, tuple(sorted(self.statuses.items())))

    def _summary(self) -> str:
        snap = self.snapshot()
        parts = [f"sweep: {snap.done}/{snap.total} runs done"]
        if snap.planned:
            parts.append(f"{snap.trained}/{snap.planned} {snap.unit}")
            if snap.eta_seconds is not None:
                parts.append(f"ETA {duration(snap.eta_seconds)}")
            elif snap.remaining > 0 and self.clock is not None:
                parts.append("ETA after the next row")
        if snap.statuses:
            parts.append(", ".join(f"{count} {status}" for status, count in snap.statuses))
        line = " | ".join(parts)
        return line if self.also is None else f"{line} || {self.also(snap)}"
