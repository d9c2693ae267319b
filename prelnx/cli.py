"""The `prelnx` command line: one thin function per command; the work lives in the modules they call."""

from __future__ import annotations

import sys
import threading

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


@app.callback()
def _group() -> None:
    """Reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training."""


app.add_typer(data_app, name="data")
app.command("train")(train_command)
app.command("sweep")(sweep_command)
app.command("plot")(plot_command)
app.command("evaluate")(evaluate_command)
app.command("grads")(grads_command)
app.command("theory")(theory_command)
app.command("report")(report_command)
app.command("finetune")(finetune_command)


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
