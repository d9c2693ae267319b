"""What a fairseq child measured and how it ended, as typed events it reports to its parent, one line each in its
output (`prelnx-event {"event": ...}`; each class says who reports it). The parent (records/reconcile.py's
ChildRecords, launch/slurm_job.py) builds a run's rows and end state from these values, never from fairseq's wording;
a child that died without reporting its end (SIGKILL, an OOM kill) is recorded as a crash. Standard library only: the
child's entry imports it before torch and fairseq."""

from __future__ import annotations

import enum
import errno
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

PREFIX = "prelnx-event "
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class Kind(enum.StrEnum):
    """What an exception means for the run."""

    DIVERGED = "diverged"  # FloatingPointError: fairseq's stop on NaN/Inf gradients or at its minimum loss scale
    DISK_FULL = "disk_full"  # an OSError ENOSPC/EDQUOT in the exception's chain (torch.save raises a RuntimeError)
    OUT_OF_MEMORY = "out_of_memory"  # MemoryError, torch's OutOfMemoryError
    FAILED = "failed"  # anything else


@dataclass(frozen=True)
class Done:
    """The child's program returned (launch/fairseq_entry.py): fairseq trained its budget, saved its last checkpoint."""


@dataclass(frozen=True)
class Raised:
    """The child's program (launch/fairseq_entry.py) or a Slurm task raised `type` (its class name) with `message`."""

    type: str
    message: str
    kind: Kind
    errno: int | None = None  # of the OSError in the chain (DISK_FULL)
    path: str | None = None  # the file it names, if it names one

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))

    def describe(self) -> str:
        """`FloatingPointError: gradients are Nan/Inf`: for people only."""
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class Stats:
    """A record fairseq's progress bar logged (prelnx_fairseq_plugin/stats_events.py): `tag` as fairseq names it
    (`train_inner` every --log-interval updates, `train` at an epoch's end, the validation subset's name, e.g. `valid`;
    a reader skips tags it does not know), `stats` its values as fairseq formatted them (a number it formatted as text,
    `{:g}` or `{:.3f}`, becomes that number, rounded as fairseq rounded it), `step` the update fairseq logged it at."""

    tag: str
    stats: dict[str, Any]
    step: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stats", {key: _number(value) for key, value in self.stats.items()})


@dataclass(frozen=True)
class Diagnosed:
    """The plugin's diagnostics of one update (prelnx_fairseq_plugin/diagnostics.py owns `row`'s keys, `num_updates`
    among them); the parent stores the row as it is (prelnx/records/diagnostics.py)."""

    row: dict[str, Any]


def _number(value: Any) -> Any:
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


Event = Done | Raised | Stats | Diagnosed
NAMES: dict[type, str] = {Done: "done", Raised: "raised", Stats: "stats", Diagnosed: "diagnosed"}
TYPES = {name: kind for kind, name in NAMES.items()}


def _chain(error: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def raised(error: BaseException) -> Raised:
    """The event of an exception, classified by type (and an OSError's errno), never by its message. The exceptions
    it was raised over count too: torch.save raises a RuntimeError over a full disk's OSError, and fairseq's NaN
    detector, re-running the step after a FloatingPointError, may raise another error over it. The event names the
    exception that decided its kind."""
    torch = sys.modules.get("torch")  # where the child has it (never imported here): its OutOfMemoryError (>= 2.10)
    memory = (MemoryError, torch.OutOfMemoryError) if torch is not None else MemoryError
    tests = ((Kind.DISK_FULL, lambda e: isinstance(e, OSError) and e.errno in NO_SPACE),
             (Kind.DIVERGED, lambda e: isinstance(e, FloatingPointError)),
             (Kind.OUT_OF_MEMORY, lambda e: isinstance(e, memory)))  # fmt: skip
    kind, cause = next(((kind, e) for kind, test in tests for e in _chain(error) if test(e)), (Kind.FAILED, error))
    number, named = (cause.errno, cause.filename) if isinstance(cause, OSError) else (None, None)
    return Raised(type(cause).__name__, str(cause).strip(), kind, number, None if named is None else os.fsdecode(named))


def line(event: Event) -> str:
    """The event's line (with its newline)."""
    return PREFIX + json.dumps({"event": NAMES[type(event)], **asdict(event)}) + "\n"


def parse(text: str) -> Event | None:
    """The event of an output line; None for any other line (fairseq's, a line a kill cut short)."""
    at = text.find(PREFIX)
    if at < 0:
        return None
    try:
        fields: dict[str, Any] = json.loads(text[at + len(PREFIX):])
        return TYPES[fields.pop("event")](**fields)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def emit(event: Event) -> None:
    """Write the event to stdout in one write (torchrun's workers share the log); a failed write (a full disk) is
    left to the parent, which then records a crash."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(sys.stdout.fileno(), line(event).encode())
    except (OSError, ValueError):
        pass
