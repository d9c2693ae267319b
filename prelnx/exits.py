"""How a command ends, in one table: its exit codes (`Exit`), the code of a run's status and of a set of runs
(`exit_for`), and `Refusal`, the one error type every folder raises for a command that stops on purpose. The bottom
layer: it imports nothing of prelnx, so data/, the plugin and every command read the same table (docs/usage.md,
"Exit codes", prints it; tests/commands/test_exit_codes.py runs every command into every outcome).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable
from typing import TypeVar

Command = TypeVar("Command", bound=Callable[..., object])


class Exit(enum.IntEnum):
    """Every exit code of every command; none is reused for a second meaning."""

    FINISHED = 0  # done: every run trained its budget, the command did its work
    FAILED = 1  # a run stopped by an error (a crash, a full disk), a file not written or read: re-running resumes
    BAD_INPUT = 2  # a Refusal: a bad config, option, data or checkpoint; nothing was started
    DIVERGED = 3  # a run stopped on a divergence: a result, not a failure to train
    BUSY = 4  # the run dir is in use by another prelnx process; nothing was done
    RUNNING = 5  # (prelnx status) a run is still training: ask again later
    BUG = 70  # a bug in prelnx (sysexits' EX_SOFTWARE): never 1 or 2, so it never reads as a failed run or bad input
    INTERRUPTED = 130  # stopped before its end (Ctrl-C, a scheduler) or not started yet: the same command resumes it


# status.json's statuses (records.outcome.RunStatus's values) -> exit code; tests pin that every status has one.
STATUS_EXIT: dict[str, Exit] = {
    "finished": Exit.FINISHED,
    "diverged": Exit.DIVERGED,
    "failed": Exit.FAILED,
    "interrupted": Exit.INTERRUPTED,
    "pending": Exit.INTERRUPTED,
    "running": Exit.RUNNING,
    "running elsewhere": Exit.BUSY,
}
# A set of runs exits with the code of the run that most needs attention: one still training, then one held by
# another process, one that failed, one not trained to its end; diverged and finished runs are results.
PRECEDENCE = (Exit.RUNNING, Exit.BUSY, Exit.FAILED, Exit.INTERRUPTED, Exit.DIVERGED, Exit.FINISHED)


# Each code in a command's --help (`documented`), in short; the comments above and docs/usage.md say more.
SAYS = {
    Exit.FINISHED: "finished",
    Exit.FAILED: "failed (re-running resumes)",
    Exit.BAD_INPUT: "bad input",
    Exit.DIVERGED: "diverged",
    Exit.BUSY: "the run dir is in use by another process",
    Exit.RUNNING: "still running",
    Exit.BUG: "a bug in prelnx",
    Exit.INTERRUPTED: "interrupted (the same command resumes)",
}


def documented(*codes: Exit) -> Callable[[Command], Command]:
    """A command whose --help (its docstring) ends with the codes it exits with, in this order, in SAYS's words."""

    def document(command: Command) -> Command:
        listed = ", ".join(f"{code.value} {SAYS[code]}" for code in codes)
        command.__doc__ = f"{inspect.cleandoc(command.__doc__ or '')}\n\nExit codes: {listed}."
        return command

    return document


def exit_for(statuses: Iterable[str]) -> Exit:
    """The exit code of a command over these runs' statuses (one run: its own code; none: FINISHED, nothing left)."""
    codes = {STATUS_EXIT[status] for status in statuses}
    return next((code for code in PRECEDENCE if code in codes), Exit.FINISHED)


class Refusal(Exception):
    """A command stops on purpose: bad input by default (the message says what would be valid), or another outcome
    its `exit_code` names. commands/errors.py renders it as one `error:` line; anything else escaping is a bug.
    Not a ValueError: code that catches a refusal says `except Refusal`, so a bug's ValueError never reads as one."""

    exit_code: Exit = Exit.BAD_INPUT
