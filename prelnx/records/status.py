"""`status.json`, written atomically: the run's RunStatus, `reason`, the last `update` seen and, for a run that
ended, the outcome's values (`failure`, `diverged_at`: records/outcome.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prelnx.atomic import overwrite_in_place, write_text_atomic
from prelnx.records.outcome import RunStatus



def read_status(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "status.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except json.JSONDecodeError:
        return None


def recorded_status(run_dir: Path) -> RunStatus:
    """The run's status from its status.json (PENDING when it has none)."""
    return RunStatus.of(read_status(run_dir))


def write_status(run_dir: Path, status: RunStatus, *, reason: str = "", update: int = 0, **extra: Any) -> None:
    """Atomically; on a full disk, a terminal status is still written over the old file's blocks if it fits."""
    status = RunStatus(status)  # a plain string of a status is taken too
    record = {"status": status.value, "reason": reason, "update": update, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              **extra}  # fmt: skip
    try:
        write_text_atomic(run_dir / "status.json", json.dumps(record, indent=2) + "\n")
    except OSError:
        compact = json.dumps(record, separators=(",", ":")) + "\n"
        if status is RunStatus.RUNNING or not overwrite_in_place(run_dir / "status.json", compact):
            raise
