"""Progress over a whole sweep: runs done / total, epochs (or updates) done / planned, and an ETA from the pace.

Fed the runs' typed events (launch/events.py: a RowDone carries its step) and their final statuses; the unit is
the runs' grain (records/grain.py): epochs, or updates for runs that validate every N updates.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from prelnx.records import grain
from prelnx.sweep.spec import SweepPoint

DONE = ("finished", "diverged", "failed")  # a run that ended for good; interrupted or busy runs are not done


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class SweepProgress:
    """Thread-safe."""

    def __init__(self, points: list[SweepPoint]) -> None:
        self.total = len(points)
        self.planned = {p.name: grain.planned(p.config) for p in points}
        kinds = {grain.of(p.config) for p in points}
        self.stride = {p.name: grain.stride(p.config) for p in points}  # units per row
        self.unit = "updates" if kinds == {grain.Grain.UPDATE} else "epochs" if kinds == {grain.Grain.EPOCH} else "epochs/updates"
        self.steps: dict[str, int] = {p.name: 0 for p in points}
        self.new_steps = 0  # trained by this process, for the pace
        self.statuses: Counter[str] = Counter()
        self.ended: set[str] = set()
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def row_done(self, name: str, step: int) -> str:
        """A run recorded the row at `step` (epoch or update); returns the sweep's progress."""
        with self.lock:
            if step > self.steps.get(name, 0):
                # one row's worth at most: a resumed run's first row does not count what earlier attempts trained
                self.new_steps += min(step - self.steps.get(name, 0), self.stride.get(name, 1))
            self.steps[name] = max(self.steps.get(name, 0), step)
            return self._summary()

    def run_done(self, name: str, status: str) -> str:
        with self.lock:
            self.statuses[status] += 1
            self.ended.add(name)  # whatever it did not train will not be trained by this sweep
            return self._summary()

    def _summary(self) -> str:
        done = sum(count for status, count in self.statuses.items() if status in DONE)
        parts = [f"sweep: {done}/{self.total} runs done"]
        planned = sum(self.planned.values())
        if planned:
            trained = sum(min(self.steps[name], self.planned[name]) for name in self.planned)
            remaining = sum(self.planned[n] - min(self.steps[n], self.planned[n]) for n in self.planned
                            if n not in self.ended)  # fmt: skip
            parts.append(f"{trained}/{planned} {self.unit}")
            if self.new_steps and remaining > 0:
                pace = (time.monotonic() - self.started) / self.new_steps
                parts.append(f"ETA {_duration(pace * remaining)}")
        if self.statuses:
            parts.append(", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items())))
        return " | ".join(parts)
