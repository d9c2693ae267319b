"""`status.json`: what state a run is in, written atomically so that sweeps and users can trust it.

status: running | finished | diverged | failed | interrupted, with `reason` and the last `update` seen.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from prelnx.atomic import write_text_atomic

Status = Literal["running", "finished", "diverged", "failed", "interrupted"]

# Exit codes of `prelnx train`, by final status (2 is a bad config or command line, before anything runs).
EXIT_CODES: dict[str, int] = {"finished": 0, "failed": 1, "diverged": 3, "interrupted": 130}


def read_status(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "status.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None


def write_status(run_dir: Path, status: Status, *, reason: str = "", update: int = 0, **extra: Any) -> dict[str, Any]:
    record = {"status": status, "reason": reason, "update": update, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra}
    write_text_atomic(run_dir / "status.json", json.dumps(record, indent=2) + "\n")
    return record
