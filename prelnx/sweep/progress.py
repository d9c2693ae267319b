"""Progress over a whole sweep: runs done / total, epochs (or updates) done / planned, and an ETA from the pace.

The unit is the runs' grain (prelnx.run.grain): epochs, or updates for runs that validate every N updates.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

from prelnx.run import grain
from prelnx.sweep.spec import SweepPoint

_EPOCH_DONE = re.compile(r"^(?:epoch|update) (\d+) done")  # watch.format_row's first words


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class SweepProgress:
    """Thread-safe; fed the runs' output lines and their final statuses."""

    def __init__(self, points: list[SweepPoint]) -> None:
        self.total = len(points)
        self.planned = {p.name: grain.planned(p.config) for p in points}
        by_update = {grain.by_update(p.config) for p in points}
        self.stride = {p.name: p.config.eval.every_updates or 1 for p in points}  # units per row
        self.unit = "updates" if by_update == {True} else "epochs" if by_update == {False} else "epochs/updates"
        self.epochs: dict[str, int] = {p.name: 0 for p in points}
        self.new_epochs = 0  # trained by this process, for the pace
        self.statuses: Counter[str] = Counter()
        self.ended: set[str] = set()
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def line(self, name: str, text: str) -> str:
        """Returns `text` with the sweep's progress appended when it ends an epoch."""
        match = _EPOCH_DONE.match(text)
        if not match:
            return text
        with self.lock:
            epoch = int(match.group(1))
            if epoch > self.epochs.get(name, 0):
                # one row's worth at most: a resumed run's first row does not count what earlier attempts trained
                self.new_epochs += min(epoch - self.epochs.get(name, 0), self.stride.get(name, 1))
            self.epochs[name] = max(self.epochs.get(name, 0), epoch)
            return f"{text} || {self._summary()}"

    def run_done(self, name: str, status: str) -> str:
        with self.lock:
            self.statuses[status] += 1
            self.ended.add(name)  # whatever it did not train will not be trained by this sweep
            return self._summary()

    def _summary(self) -> str:
        parts = [f"sweep: {sum(self.statuses.values())}/{self.total} runs done"]
        planned = sum(self.planned.values())
        if planned:
            trained = sum(min(self.epochs[name], self.planned[name]) for name in self.planned)
            remaining = sum(self.planned[n] - min(self.epochs[n], self.planned[n]) for n in self.planned
                            if n not in self.ended)  # fmt: skip
            parts.append(f"{trained}/{planned} {self.unit}")
            if self.new_epochs and remaining > 0:
                pace = (time.monotonic() - self.started) / self.new_epochs
                parts.append(f"ETA {_duration(pace * remaining)}")
        if self.statuses:
            parts.append(", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items())))
        return " | ".join(parts)
