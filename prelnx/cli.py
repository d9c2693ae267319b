"""The `prelnx` command line: one thin function per command; the work lives in the modules they call."""

from __future__ import annotations

import sys
import threading
from typing import Annotated

import typer

from prelnx.commands.data import data_app
from prelnx.commands.evaluate import evaluate_command
from prelnx.commands.finetune import finetune_command
from prelnx.commands.grads import grads_command
from prelnx.commands.plot import plot_command
from prelnx.commands.report import report_command
from prelnx.commands.sweep import sweep_command
from prelnx.commands.theory import theory_command
from prelnx.commands.train import train_command

app = typer.Typer(
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},  # plain click help: flags show no <bool>, long defaults wrap instead of being cut
    help="Reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"prelnx {version('prelnx')}")  # pyproject.toml owns the version; installs record it
        except PackageNotFoundError:
            typer.echo("prelnx: not installed, so no version is recorded (pip install -e . records it)")
        raise typer.Exit()


@app.callback()
def _group(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print prelnx's version and exit.")] = False,  # fmt: skip
) -> None:
    """Reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training."""


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
}
COMMANDS = {"train": train_command, "sweep": sweep_command, "plot": plot_command, "evaluate": evaluate_command,
            "grads": grads_command, "theory": theory_command, "report": report_command, "finetune": finetune_command}  # fmt: skip

app.add_typer(data_app, name="data", short_help=SHORT_HELP["data"])
for _name, _command in COMMANDS.items():
    app.command(_name, short_help=SHORT_HELP[_name])(_command)


def _thread_errors_in_one_line(args) -> None:  # type: ignore[no-untyped-def]
    """A background writer (TensorBoard's event thread) that fails on a full disk prints one line, not a traceback."""
    if isinstance(args.exc_value, OSError):
        from prelnx.atomic import io_reason

        sys.stderr.write(f"warning: a background write failed ({io_reason(args.exc_value)})\n")
        return
    sys.__excepthook__(args.exc_type, args.exc_value, args.exc_traceback)


def main() -> None:
    threading.excepthook = _thread_errors_in_one_line
    app()


if __name__ == "__main__":
    main()
