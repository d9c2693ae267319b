"""ConfigError: a Refusal (prelnx/exits.py, the one error type of a command that stops on purpose) for a config, which
a malformed override and an unreadable YAML file are too."""

from prelnx.exits import Refusal


class ConfigError(Refusal):
    """A config that cannot run; the message lists every problem."""
