"""The one ETA rule: what is left at the pace so far (`at_pace`), the pace counted from the end of the first piece of
work (start-ups are not work); `Eta` applies it to pieces of known sizes (a model's layers, a run's updates)."""

from __future__ import annotations

import time


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def at_pace(seconds: float, done: float, left: float) -> float | None:
    """Seconds to do `left` at the pace of `done` in `seconds`; None while no pace is known."""
    return seconds / done * left if done > 0 and seconds > 0 else None


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
        seconds = at_pace(elapsed, self.since, max(0.0, self.total - self.done))
        return "ETA after the next one" if seconds is None else f"ETA {duration(seconds)}"
