"""Refusal, the one error type of a command that stops on purpose, is owned by the bottom layer (prelnx/exits.py, with
the exit-code table); it is named here too because config/ is where most folders have always imported it from. Its
kind for a config: ConfigError, which a malformed override and an unreadable YAML file are too."""

from prelnx.exits import Refusal

__all__ = ["ConfigError", "Refusal"]


class ConfigError(Refusal):
    """A config that cannot run; the message lists every problem."""
