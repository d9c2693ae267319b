"""fairseq imported inside prelnx's own process leaves the process's logging as it found it: `import fairseq` (0.12)
sets the root logger to DEBUG with a stderr handler and `fairseq_cli.preprocess` calls `logging.basicConfig`, so any
library's DEBUG lines would reach the terminal; `kept_logging()` restores the root logger's level and handlers."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def kept_logging() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


def quiet_fairseq_logging() -> None:
    """For a process that imported fairseq outside `kept_logging` (the gradient study's workers): keep the root
    logger at WARNING or above, so fairseq's DEBUG default does not reach the terminal."""
    root = logging.getLogger()
    if root.level < logging.WARNING:
        root.setLevel(logging.WARNING)
