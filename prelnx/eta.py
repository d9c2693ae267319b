"""An ETA that settles quickly: the pace is measured on the work's size, after start-up.

Each piece of work has a size (a model's layers, a run's updates); the clock starts when the first piece is done
(imports, fairseq start-ups and a pool's spawn are not work) and the pace is the size done since then per
second, over every worker at once. So the first estimate comes from the work's size, not from a first slow step.
"""

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

    def add(self, size: float, now: float | None = None) -> None:
        """`size` more of the work is done."""
        now = time.monotonic() if now is None else now
        self.done += size
        if self.clock is None:
            self.clock = now
        else:
            self.since += size

    def remaining_s(self, now: float | None = None) -> float | None:
        """Seconds left at the pace so far; None until a pace is known (two pieces done)."""
        now = time.monotonic() if now is None else now
        if self.clock is None or self.since <= 0 or now <= self.clock:
            return None
        return max(0.0, self.total - self.done) * (now - self.clock) / self.since

    def text(self, now: float | None = None) -> str:
        left = self.remaining_s(now)
        return "ETA after the next one" if left is None else f"ETA {duration(left)}"
