"""The `prelnx` command line: one thin function per command; the work lives in the modules they call. A command's
module is imported only when it runs; `prelnx --help` and `app` (the tests' CliRunner) have every command."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import Annotated, Any

import typer

from prelnx.commands.options import command_group


def _print_version(value: bool) -> None:
    if value:
        from prelnx.machine import installed

        found, distribution = installed("prelnx")  # pyproject.toml owns the version; installs record it
        typer.echo(f"prelnx {found}" if distribution
                   else "prelnx: not installed, so no version is recorded (pip install -e . records it)")
        raise typer.Exit()


def _group(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print prelnx's version and exit.")] = False,  # fmt: skip
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress: warnings, errors and the answer only.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="fairseq's own INFO lines too, where it runs in "
                                          "this process (a training's: in its train.log).")] = False,
) -> None:
    from prelnx import console

    console.configure(console.VERBOSE if verbose else console.QUIET if quiet else console.NORMAL)


# The one-line summaries `prelnx --help` lists (each command's docstring is its full help): whole, where click would
# cut the docstring's first sentence with "...", and at most 66 characters, one line on an 80-column terminal.
SHORT_HELP = {
    "train": "Train or resume a Post-LN or Pre-LN run (translation, masked LM).",
    "sweep": "Train every point of a grid of settings, here or on Slurm.",
    "plot": "Plot valid loss, BLEU and lr of runs; a warm-up x lr BLEU heatmap.",
    "evaluate": "Test-set BLEU of a run: tokenized (as in the paper) and SacreBLEU.",
    "grads": "Gradient norms of each FFN at initialisation (paper's Figure 3).",
    "theory": "Check the paper's mean-field results in its simplified model.",
    "report": "Write a report: each claim of the paper against what was measured.",
    "finetune": "Fine-tune pre-trained encoders on sentence(-pair) classification.",
    "data": "Prepare datasets: download, tokenize, BPE, binarize for fairseq.",
    "reproduce": "Every experiment of the paper at one scale, then one report.",
    "configs": "The shipped configs: list them, show one resolved, copy one.",
    "status": "Where a run, a sweep or a reproduction stands: a table, an ETA.",
    "env": "Versions, CPU, GPUs and Slurm here: the lines a bug report needs.",
    "layouts": "The layouts: list them, show one, start a file of yours.",
}


def build_app(only: str | None = None) -> typer.Typer:
    """The command line with every command, or with `only` that one (what `main` runs: one command's imports)."""
    built = command_group("Reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training.")
    built.callback()(_group)
    for name, summary in SHORT_HELP.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"prelnx.commands.{name}")
        if hasattr(module, f"{name}_app"):  # a group's commands, as `prelnx`'s, run in the one handler (command_group)
            built.add_typer(getattr(module, f"{name}_app"), name=name, short_help=summary)
        else:
            built.command(name, short_help=summary)(getattr(module, f"{name}_command"))
    return built


def __getattr__(name: str) -> Any:  # `from prelnx.cli import app`: the whole command line
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _thread_errors_in_one_line(args) -> None:  # type: ignore[no-untyped-def]
    """A background writer (TensorBoard's event thread) that fails on a full disk prints one line, not a traceback."""
    if isinstance(args.exc_value, OSError):
        from prelnx.atomic import io_reason

        logging.getLogger("prelnx").warning(f"a background write failed ({io_reason(args.exc_value)})")
        return
    sys.__excepthook__(args.exc_type, args.exc_value, args.exc_traceback)


# Spellings an option had before it was renamed: (command, old) -> (new, how its meaning moved). Each answers with one
# line naming the new one and exit 2; none is a silent alias.
RENAMED_OPTIONS: dict[tuple[str, str], tuple[str, str]] = {
    ("theory", "--d"): ("--hidden-size", "same meaning"),
    ("data", "--workers"): ("--jobs", "same meaning"),
    ("grads", "--workers"): ("--jobs", "same meaning"),
    ("train", "--cpus-per-task"): ("--cpus-per-run", "the run's CPUs in all, split evenly between its tasks"),
    ("train", "--mem-gb"): ("--mem-gb-per-run", "the run's memory in all, split evenly between its nodes"),
}


def main() -> None:
    threading.excepthook = _thread_errors_in_one_line
    first = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    command = first if first in SHORT_HELP else None  # the command run, else None (help, a typo: every command)
    for old in (word.split("=", 1)[0] for word in sys.argv[1:]):
        if (command or "", old) in RENAMED_OPTIONS:
            new, meaning = RENAMED_OPTIONS[command or "", old]
            sys.stderr.write(f"error: {command} {old}: renamed {new} ({meaning}); use that name\n")
            raise SystemExit(2)
    build_app(command)()


if __name__ == "__main__":
    main()
