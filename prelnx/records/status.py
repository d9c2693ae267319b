"""`status.json`, written atomically: the run's RunStatus, `reason`, the last `update` seen, the run-dir `format`
and, for a run that ended, the outcome's values (`failure`, `diverged_at`: records/outcome.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prelnx.atomic import overwrite_in_place, write_text_atomic
from prelnx.records.outcome import RunStatus

# The run-dir format (status.json's `format`; docs/verdicts.md, "The run-dir format", says what each version is and
# that every reader reads every one). Version 2's metrics rows keep valid_nll_loss null where the criterion logs no
# nll (cross_entropy, masked_lm), as version 1's did; a newer version is refused by name (`format_problem`).
FORMAT_VERSION = 2


def format_version(record: dict[str, Any]) -> int:
    """The format of a run dir from its status.json record (1: none recorded, a run dir from before issue 46)."""
    value = record.get("format", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def format_problem(run_dir: Path) -> str | None:
    """Why this prelnx cannot read the run dir (a format newer than FORMAT_VERSION), or None."""
    version = format_version(read_status(run_dir))
    if version <= FORMAT_VERSION:
        return None
    return (f"{run_dir / 'status.json'}: run-dir format {version}, newer than this prelnx reads ({FORMAT_VERSION}); "
            "update prelnx to report it")


def read_status(run_dir: Path) -> dict[str, Any]:
    """status.json's record; {} where there is none or it cannot be read (RunStatus.of: PENDING)."""
    try:
        record = json.loads((run_dir / "status.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def recorded_status(run_dir: Path) -> RunStatus:
    """The run's status from its status.json (PENDING when it has none)."""
    return RunStatus.of(read_status(run_dir))


def write_status(run_dir: Path, status: RunStatus, *, reason: str = "", update: int = 0, **extra: Any) -> None:
    """Atomically; on a full disk, a terminal status is still written over the old file's blocks if it fits."""
    status = RunStatus(status)  # a plain string of a status is taken too
    record = {"status": status.value, "reason": reason, "update": update, "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "format": FORMAT_VERSION, **extra}  # fmt: skip
    try:
        write_text_atomic(run_dir / "status.json", json.dumps(record, indent=2) + "\n")
    except OSError:
        compact = json.dumps(record, separators=(",", ":")) + "\n"
        if status is RunStatus.RUNNING or not overwrite_in_place(run_dir / "status.json", compact):
            raise
