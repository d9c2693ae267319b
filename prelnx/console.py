"""prelnx's console, set up once per process by what starts it (the CLI's callback; a Slurm task, a submitit job, a
spawned worker of the gradient study). Modules log to their own logger (`logging.getLogger(__name__)`): INFO, what a
command does and how far it is, goes to stdout as plain lines; WARNING and above to stderr as `warning: ...`.

fairseq's log level is set here and nowhere else: the handler goes on the root logger before fairseq is imported, so
fairseq's own `logging.basicConfig` calls (`import fairseq` reaches one, fairseq_cli.preprocess has another) do
nothing, and the root stays at WARNING: fairseq and the rest say only their warnings unless -v."""

from __future__ import annotations

import logging
import sys

QUIET, NORMAL, VERBOSE = -1, 0, 1
# What a command answers (theory's tables, a report's claims, reproduce's plan): on stdout at every verbosity, -q
# included - -q takes away progress, never the result asked for.
results = logging.getLogger("prelnx.results")


class _Console(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage() if record.name.startswith("prelnx") else f"{record.name}: {record.getMessage()}"
        level = "error: " if record.levelno >= logging.ERROR else "warning: " if record.levelno >= logging.WARNING else ""
        stream = sys.stderr if level else sys.stdout  # looked up now: a test's capture sees it
        stream.write(level + text + "\n")
        stream.flush()  # a sweep's progress as it happens, in a job's log file too


def counted(count: int, noun: str) -> str:
    """`1 run`, `3 runs`: a count and its noun, in every line a command prints."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def columns(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows as lines of left-aligned columns two spaces apart, the last column unpadded: every table a command prints."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows]


def configure(verbosity: int = NORMAL) -> None:
    """This process's console (the last call wins): QUIET warnings only, NORMAL progress too, VERBOSE prelnx's debug
    lines and fairseq's INFO."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Console)]:
        root.removeHandler(handler)
    root.addHandler(_Console())
    root.setLevel(logging.WARNING)
    logging.getLogger("prelnx").setLevel(logging.INFO - 10 * verbosity)  # QUIET: WARNING, VERBOSE: DEBUG
    results.setLevel(logging.INFO)
    for name in ("fairseq", "fairseq_cli"):
        logging.getLogger(name).setLevel(logging.INFO if verbosity >= VERBOSE else logging.NOTSET)
