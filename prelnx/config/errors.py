"""The one error type of bad input: a `Refusal` is a problem the user can fix (a key, a path, an option, a state of
a run dir), rendered by `cli` as one `error:` line and its `exit_code` (2: bad input, before anything trains).

It lives here, the lowest folder every command's input passes through, so that every folder above (records, plan,
launch, sweep, ..., commands) raises it or a subclass; data/ (below) has its own `DataError`, which the one handler
(commands/errors.py) maps. Anything that is not a refusal reaching the handler is a bug and is reported as one.
A Refusal is a ValueError, so the code that catches a bad value to record it (a sweep's failed run) still does.
"""

from __future__ import annotations


class Refusal(ValueError):
    """Bad input or a state that stops a command before it does its work; the message says what would be valid."""

    exit_code = 2
