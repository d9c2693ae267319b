"""Progress over a whole sweep: runs done / total, epochs (or updates) done / planned, and an ETA from the pace.

Fed the runs' typed events (launch/events.py: a RowDone carries its step) and their final statuses; the unit is
the runs' grain (records/grain.py): epochs, or updates for runs that validate every N updates. The pace is the
work's: the steps trained after each run's first row (which also holds fairseq's start-up, and for a resumed run
everything before it) over the time since the first row of the sweep (prelnx/eta.py's rule).
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from prelnx.eta import duration
from prelnx.records import grain
from prelnx.sweep.spec import SweepPoint

DONE = ("finished", "diverged", "failed")  # a run that ended for good; interrupted or busy runs are not done


class SweepProgress:
    """Thread-safe."""

    def __init__(self, points: list[SweepPoint]) -> None:
        self.total = len(points)
        self.planned = {p.name: grain.planned(p.config) for p in points}
        kinds = {grain.of(p.config) for p in points}
        self.stride = {p.name: grain.stride(p.config) for p in points}  # units per row
        self.unit = "updates" if kinds == {grain.Grain.UPDATE} else "epochs" if kinds == {grain.Grain.EPOCH} else "epochs/updates"
        self.steps: dict[str, int] = {p.name: 0 for p in points}
        self.seen: set[str] = set()  # runs that recorded a row in this process
        self.counted = 0  # steps trained after each run's first row, for the pace
        self.clock: float | None = None  # when the sweep's first row came
        self.statuses: Counter[str] = Counter()
        self.ended: set[str] = set()
        self.lock = threading.Lock()

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
            if remaining > 0 and self.clock is not None:
                if self.counted:
                    pace = (time.monotonic() - self.clock) / self.counted
                    parts.append(f"ETA {duration(pace * remaining)}")
                else:
                    parts.append("ETA after the next row")
        if self.statuses:
            parts.append(", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items())))
        return " | ".join(parts)
