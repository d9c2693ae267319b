"""The one handler of errors for every command: a refusal (or an error launch/errors.py knows) is one `error:` line and
its exit code (prelnx/exits.py's table); anything else that escapes a command is a bug in prelnx, and says where."""

from __future__ import annotations

import functools
import traceback
from typing import Any, Callable

import click
import typer

from prelnx.exits import Exit
from prelnx.launch.errors import error_exit


def handled(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` with the one handler around it (Typer reads the wrapped signature)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.exceptions.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            typer.echo("interrupted: run the same command again to resume where it stopped", err=True)
            raise typer.Exit(Exit.INTERRUPTED) from None
        except Exception as error:  # noqa: BLE001 - the one place errors become exit codes
            known = error_exit(error)  # launch/errors.py's rule, rank 0's of a Slurm job too
            if known is not None:
                typer.echo(f"error: {known[0]}", err=True)
                raise typer.Exit(known[1]) from None
            # the traceback, then where in prelnx it happened and the words a bug report needs
            frames = traceback.extract_tb(error.__traceback__)
            ours = [frame for frame in frames if "/prelnx/" in frame.filename.replace("\\", "/")] or frames
            where = f"{ours[-1].filename}:{ours[-1].lineno} in {ours[-1].name}" if ours else "unknown location"
            typer.echo("".join(traceback.format_exception(error)).rstrip("\n"), err=True)
            typer.echo(f"error: this is a bug in prelnx ({type(error).__name__}: {error}) at {where}; please report "
                       f"it with the traceback above and the output of `prelnx env`", err=True)  # fmt: skip
            raise typer.Exit(Exit.BUG) from None

    return run
