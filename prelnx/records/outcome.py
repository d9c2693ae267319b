"""How an attempt at a run ended, as values (RunStatus, update, Failure, Divergence). `reason()` renders the one
sentence status.json and the console show; no code decides anything from that sentence.
"""

from __future__ import annotations

import enum
import errno
from dataclasses import dataclass
from pathlib import Path

from prelnx.atomic import io_reason


class RunStatus(enum.StrEnum):
    """A run's status: status.json's `status` (the first five), and what a reader reports of a run without one."""

    RUNNING = "running"  # a training is (or was, when it was killed) under way
    FINISHED = "finished"  # trained its budget
    DIVERGED = "diverged"  # stopped on a divergence (records the update): a result, not a failure to train
    FAILED = "failed"  # stopped by an error (Failure says which); a re-run resumes it
    INTERRUPTED = "interrupted"  # stopped by the user or a scheduler; a re-run resumes it
    PENDING = "pending"  # no status.json yet: never started
    ELSEWHERE = "running elsewhere"  # a sweep's: another process holds the run dir, so this sweep left it alone
    REFUSED = "refused"  # a sweep's: its run dir holds another run (a config, a layout file), left alone; exit 2

    @property
    def done(self) -> bool:
        """Nothing is left to train: re-running skips it and its results stand (finished, or diverged)."""
        return self in (RunStatus.FINISHED, RunStatus.DIVERGED)

    @property
    def ended(self) -> bool:
        """A sweep counts it ended for good: done, failed or refused (an interrupted run, stopped with its sweep, is
        not)."""
        return self.done or self in (RunStatus.FAILED, RunStatus.REFUSED)

    @classmethod
    def of(cls, record: dict[str, object] | None) -> RunStatus:
        """The status of a status.json record (read_status); PENDING for none, or one no prelnx wrote."""
        try:
            return cls(str((record or {}).get("status", cls.PENDING)))
        except ValueError:
            return cls.PENDING


class Failure(enum.Enum):
    """Why a run ended `failed` or `interrupted` (status.json's `failure`)."""

    DISK_FULL = "disk_full"  # no space left, or a quota, while prelnx or fairseq wrote the run dir
    IO = "io"  # another error writing or reading the run dir (permissions, a vanished folder)
    CRASH = "crash"  # fairseq exited with an error of its own
    OUT_OF_MEMORY = "out_of_memory"  # fairseq raised MemoryError or torch's OutOfMemoryError (an OOM kill is a crash)
    STOPPED = "stopped"  # stopped by the user (Ctrl-C, SIGTERM, a scheduler)
    UNREADABLE_CHECKPOINT = "unreadable_checkpoint"  # trained, but its last checkpoint cannot be read
    FINISHED_THEN_CRASHED = "finished_then_crashed"  # fairseq saved its last checkpoint, then exited with an error


class Signal(enum.Enum):
    """What showed a divergence."""

    TRAIN_LOSS = "train loss"  # a non-finite (or past train.loss_ceiling) progress loss: prelnx stopped the run
    VALID_LOSS = "valid loss"  # a non-finite validation loss: prelnx stopped the run
    FAIRSEQ_NAN = "fairseq nan"  # fairseq itself raised on NaN/Inf gradients (FloatingPointError)


@dataclass(frozen=True)
class Divergence:
    signal: Signal
    update: int  # the update at which it was seen
    value: float | None = None
    epoch: int | None = None  # for a validation at the epoch grain: its epoch


@dataclass(frozen=True)
class Outcome:
    status: RunStatus
    update: int  # the last update trained
    failure: Failure | None = None
    divergence: Divergence | None = None
    detail: str = ""  # for people only: the path of an I/O failure, fairseq's last error line

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", RunStatus(self.status))  # "finished" is taken as RunStatus.FINISHED

    def reason(self) -> str:
        """The sentence of the outcome (the only wording of it)."""
        d, f = self.divergence, self.failure
        if d is not None:
            if d.signal is Signal.FAIRSEQ_NAN:
                return f"fairseq stopped on NaN/Inf after update {d.update}"
            where = f"epoch {d.epoch} (after update {d.update})" if d.epoch is not None else f"update {d.update}"
            return f"{d.signal.value} {d.value} at {where}"
        sentences = {Failure.STOPPED: "stopped by the user; run the same command again to resume",
                     Failure.UNREADABLE_CHECKPOINT: "the last checkpoint cannot be read ({}); run again",
                     Failure.FINISHED_THEN_CRASHED: "fairseq finished training, then exited with {}",
                     Failure.OUT_OF_MEMORY: "out of memory ({}): fewer tokens per batch (data.max_tokens) or fewer jobs "
                                            "at a time"}  # fmt: skip
        return sentences.get(f, "{}").format(self.detail)  # {}: the detail (any other failure: the detail alone)

    def record(self) -> dict[str, object]:
        """status.json's fields for this outcome (reason rendered; failure and divergence as values)."""
        found: dict[str, object] = {"reason": self.reason()}
        if self.failure is not None:
            found["failure"] = self.failure.value
        if self.divergence is not None:
            found["diverged_at"] = self.divergence.update
            found["divergence"] = self.divergence.signal.value
        return found


def io_failure(error: OSError, near: Path | str | None = None, update: int = 0) -> Outcome:
    """A run `failed` by an I/O error: its kind and wording (`no space left on device: <path>`)."""
    kind = Failure.DISK_FULL if error.errno in (errno.ENOSPC, errno.EDQUOT) else Failure.IO
    return Outcome(RunStatus.FAILED, update, kind, detail=io_reason(error, near))
