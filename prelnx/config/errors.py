"""Refusal, the one error type of bad input: a problem the user can fix, rendered by `cli` as one `error:` line and
its `exit_code`. Every folder above raises it or a subclass (data/ has its own DataError, which commands/errors.py
maps); anything else reaching the handler is a bug. A ValueError, so code that records a bad value still catches it.
"""

from __future__ import annotations


class Refusal(ValueError):
    """Bad input or a state that stops a command before it does its work; the message says what would be valid."""

    exit_code = 2
