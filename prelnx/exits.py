"""How a command ends, in one table: its exit codes (`Exit`), the code of a run's status and of a set of runs
(`exit_for`), and `Refusal`, the one error type every folder raises for a command that stops on purpose. The bottom
layer: it imports nothing of prelnx, so data/, the plugin and every command read the same table (docs/usage.md,
"Exit codes", prints it; tests/commands/test_exit_codes.py runs every command into every outcome).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable
from typing import Any


class Exit(enum.IntEnum):
    """Every exit code of every command; none is reused for a second meaning. `says`: its words in a command's --help
    (`documented`); the comments and docs/usage.md's table say more."""

    FINISHED = 0, "finished"  # done: every run trained its budget, the command did its work
    FAILED = 1, "failed (re-running resumes)"  # an error stopped it: a crash, a full disk, a file not written or read
    BAD_INPUT = 2, "bad input"  # a Refusal: a bad config, option, data or checkpoint; nothing was started
    DIVERGED = 3, "diverged"  # a run stopped on a divergence: a result, not a failure to train
    BUSY = 4, "the run dir is in use by another process"  # by another prelnx process; nothing was done
    RUNNING = 5, "still running"  # (prelnx status) a run is still training: ask again later
    BUG = 70, "a bug in prelnx"  # sysexits' EX_SOFTWARE: never 1 or 2, so it never reads as a failed run or bad input
    INTERRUPTED = 130, "interrupted (the same command resumes)"  # Ctrl-C, a scheduler, or not started yet
    PIPE_CLOSED = 141, "its output's reader left"  # `| head -1` read enough: silent, 128 + SIGPIPE as a Unix tool's

    def __new__(cls, code: int, says: str) -> Exit:
        member = int.__new__(cls, code)
        member._value_, member.says = code, says
        return member


# status.json's statuses (records.outcome.RunStatus's values) -> exit code; tests pin that every status has one.
STATUS_EXIT: dict[str, Exit] = {
    "finished": Exit.FINISHED,
    "diverged": Exit.DIVERGED,
    "failed": Exit.FAILED,
    "interrupted": Exit.INTERRUPTED,
    "pending": Exit.INTERRUPTED,
    "running": Exit.RUNNING,
    "running elsewhere": Exit.BUSY,
    "refused": Exit.BAD_INPUT,  # a sweep's run left alone (its run dir holds another run): it was not started
}
# A set of runs exits with the code of the run that most needs attention: one still training, then one held by
# another process, one that failed, one refused, one not trained to its end; diverged and finished runs are results.
PRECEDENCE = (Exit.RUNNING, Exit.BUSY, Exit.FAILED, Exit.BAD_INPUT, Exit.INTERRUPTED, Exit.DIVERGED, Exit.FINISHED)


def documented(*codes: Exit) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command whose --help (its docstring) ends with the codes it exits with, in this order, in their words."""

    def document(command: Callable[..., Any]) -> Callable[..., Any]:
        listed = ", ".join(f"{code.value} {code.says}" for code in codes)
        command.__doc__ = f"{inspect.cleandoc(command.__doc__ or '')}\n\nExit codes: {listed}."
        return command

    return document


def exit_for(statuses: Iterable[str]) -> Exit:
    """The exit code of a command over these runs' statuses (one run: its own code; none: FINISHED, nothing left)."""
    codes = {STATUS_EXIT[status] for status in statuses}
    return next((code for code in PRECEDENCE if code in codes), Exit.FINISHED)


class Refusal(Exception):
    """A command stops on purpose: bad input by default (the message says what would be valid), or another outcome
    its `exit_code` names. commands/options.py renders it as one `error:` line; anything else escaping is a bug.
    Not a ValueError: code that catches a refusal says `except Refusal`, so a bug's ValueError never reads as one."""

    exit_code: Exit = Exit.BAD_INPUT
