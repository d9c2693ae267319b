"""An ETA that settles quickly: each piece of work has a size (a model's layers, a run's updates); the clock starts
when the first piece is done (start-ups are not work) and the pace is the size done since then per second."""

from __future__ import annotations

import time


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class Eta:
    def __init__(self, total: float) -> None:
        self.total, self.done = float(total), 0.0
        self.clock: float | None = None  # when the first piece ended
        self.since = 0.0  # size done since then

    def add(self, size: float) -> None:
        """`size` more of the work is done."""
        self.done += size
        if self.clock is None:
            self.clock = time.monotonic()
        else:
            self.since += size

    def text(self) -> str:
        """The ETA at the pace so far; none until a pace is known (two pieces done)."""
        elapsed = time.monotonic() - self.clock if self.clock is not None else 0.0
        if self.since <= 0 or elapsed <= 0:
            return "ETA after the next one"
        return f"ETA {duration(max(0.0, self.total - self.done) * elapsed / self.since)}"
