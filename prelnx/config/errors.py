"""Refusal, the one error type of a command that stops on purpose, is owned by the bottom layer (prelnx/exits.py, with
the exit-code table); it is named here too because config/ is where most folders have always imported it from."""

from prelnx.exits import Refusal

__all__ = ["Refusal"]
