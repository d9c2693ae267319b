"""The options several commands share, defined once so that a word means the same thing in every command
(docs/usage.md: `--out`, `--jobs`, `--dry-run`, `--force`, a run's Slurm resources in all, `--seeds`, `--checkpoint`).
Flags show no value placeholder in --help (`metavar=""`).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from typing import Any, Callable

import click
import typer
import typer.core

from prelnx.exits import Exit, Refusal
from prelnx.launch.errors import error_exit

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # prelnx/: where a bug happened
SEEDS_HELP = "a count N (seeds 1..N) or a list (3,7)"  # the one grammar of --seeds, in every command


def _handled(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` inside the one handler of errors for every command (Typer reads the wrapped signature): a refusal (or
    an error launch/errors.py knows) is one `error:` line and its exit code (prelnx/exits.py's table); anything else
    that escapes a command is a bug in prelnx, and says where."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.exceptions.ClickException, SystemExit):
            raise
        except BrokenPipeError:  # the reader of its output left (`| head -1`): no message, as other Unix tools
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's last flush goes nowhere
            raise typer.Exit(Exit.PIPE_CLOSED) from None
        except KeyboardInterrupt as interrupt:  # its words, where it has its own (a Slurm sweep's jobs train on)
            typer.echo(f"interrupted: {str(interrupt) or 'run the same command again to resume where it stopped'}",
                       err=True)
            raise typer.Exit(Exit.INTERRUPTED) from None
        except Exception as error:  # noqa: BLE001 - the one place errors become exit codes
            known = error_exit(error)  # launch/errors.py's rule, rank 0's of a Slurm job too
            if known is not None:
                typer.echo(f"error: {known[0]}", err=True)
                raise typer.Exit(known[1]) from None
            # the traceback, then where in prelnx it happened and the words a bug report needs
            frames = traceback.extract_tb(error.__traceback__)
            ours = [frame for frame in frames if os.path.abspath(frame.filename).startswith(PACKAGE)] or frames
            where = f"{ours[-1].filename}:{ours[-1].lineno} in {ours[-1].name}" if ours else "unknown location"
            typer.echo("".join(traceback.format_exception(error)).rstrip("\n"), err=True)
            typer.echo(f"error: this is a bug in prelnx ({type(error).__name__}: {error}) at {where}; please report "
                       f"it with the traceback above and the output of `prelnx env`", err=True)  # fmt: skip
            raise typer.Exit(Exit.BUG) from None

    return run


class _Group(typer.Typer):
    """Typer whose every command runs inside the one error handler (`_handled`)."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        register = super().command(*args, **kwargs)
        return lambda function: register(_handled(function))


class _OneLineUsage(typer.core.TyperGroup):
    """click's usage errors (an unknown option or command, a missing argument, a bad value) in a group's parsing or
    its commands' as a refusal is: one `error:` line, with the command whose --help lists what is valid; exit 2."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return _one_line(lambda: super(_OneLineUsage, self).parse_args(ctx, args), ctx)

    def invoke(self, ctx: Any) -> Any:
        return _one_line(lambda: super(_OneLineUsage, self).invoke(ctx), ctx)


# click's exceptions as typer raises them (typer >= 0.26 vendors click, and of them names BadParameter only)
_CLICK = sys.modules[typer.BadParameter.__module__]


def _one_line(parse: Callable[[], Any], ctx: Any) -> Any:
    try:
        return parse()
    except _CLICK.NoArgsIsHelpError:  # a bare group: its help
        raise
    except _CLICK.UsageError as error:
        where = (error.ctx or ctx).command_path
        typer.echo(f"error: {error.format_message().rstrip('.')} (`{where} --help` says what is valid)", err=True)
        raise typer.Exit(Exit.BAD_INPUT) from None


def command_group(help: str) -> typer.Typer:
    """A group of commands (`prelnx`, `prelnx data`), each run by the one error handler: plain click help (no
    <bool>, long defaults wrapped), help when called bare, no shell-completion options, no rich tracebacks, usage
    errors in one line."""
    return _Group(rich_markup_mode=None, context_settings={"max_content_width": 120}, help=help, cls=_OneLineUsage,
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)  # fmt: skip


def _option(*names: str, default_help: str | None = None, **settings: Any) -> Callable[..., Any]:
    """An option several commands share: its names and settings here; its help (what it means in a command) given
    by each command, or `default_help`."""
    return lambda help=default_help: typer.Option(*names, help=help, **settings)


config = _option("--config", "-c", default_help="A YAML config: a path, or a shipped config's name from any folder "
                                                "(e.g. iwslt_preln, demo/preln_nowarmup; prelnx configs list).")
sets = _option("--set", default_help="Override a config key, e.g. --set optimizer.lr=1e-3 or --set "
                                     "'optimizer.betas=[0.9,0.98]' (repeatable; the value is YAML).")
out = _option("--out", "-o", file_okay=False)  # a folder in every command (docs/usage.md)
jobs = _option("--jobs", "-j", min=1)
dry_run = _option("--dry-run", metavar="")
force = _option("--force", metavar="")
partition = _option("--partition", default_help="Slurm: the partition [default: Slurm's default partition].")
run_dir = _option("--run-dir", file_okay=False)
# --json: the same facts as one JSON value on stdout, for scripts
json_flag = _option("--json", metavar="", default_help="Print the same facts as JSON, unrendered, instead.")


def executor(choices: tuple[str, ...] = (), help: str = "Where training runs") -> Any:
    """--executor: its choices are its type's (an Enum: launch.Executor), else `choices`, listed in its help."""
    return typer.Option("--executor", help=help + (f": {', '.join(choices)}." if choices else "."))


def time_min() -> Any:
    from prelnx.launch.slurm_task import DEFAULT_TIME_MIN  # its owner

    return typer.Option("--time-min", min=1, help=f"Slurm: the time limit of a job in minutes (a job requeues itself "
                                                  f"on timeout and resumes from its checkpoint) [default: {DEFAULT_TIME_MIN}].")  # fmt: skip


def seeds(help: str) -> Any:
    return typer.Option("--seeds", help=f"{help}: {SEEDS_HELP}.")


def parse_seeds(text: str) -> tuple[int, ...]:
    """`10` -> seeds 1..10; `3,7` -> seeds 3 and 7; a bad value is a Refusal naming --seeds."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.lstrip("-").isdigit() for part in parts):
        raise Refusal(f"--seeds: expected {SEEDS_HELP}, got {text!r}")
    if "," not in text:
        count = int(parts[0])
        if count < 1:
            raise Refusal(f"--seeds: need at least 1 seed, got {count}")
        return tuple(range(1, count + 1))
    seeds = tuple(int(part) for part in parts)
    if len(set(seeds)) != len(seeds):
        raise Refusal(f"--seeds: repeated seed in {text!r}")
    return seeds


def slurm_per_run(gpus_default: str = "0") -> dict[str, Any]:
    """A run's Slurm resources, in all, on train, sweep and reproduce alike (a sweep's run is one task; train's run is
    one job of train.nodes x train.processes tasks, among which they are split evenly: launch/slurm_job.py)."""
    from prelnx.launch.slurm_task import DEFAULT_CPUS_CAP  # its owner

    return {
        "gpus_per_run": typer.Option("--gpus-per-run", min=0, help=f"Slurm: GPUs per run, in all (split evenly between its nodes) [default: {gpus_default}]."),
        "cpus_per_run": typer.Option("--cpus-per-run", min=1, help=f"Slurm: CPUs per run, in all (split evenly between its tasks) [default: the partition's CPUs per node (sinfo) shared by a node's tasks, up to {DEFAULT_CPUS_CAP} per task]."),
        "mem_gb_per_run": typer.Option("--mem-gb-per-run", min=1, help="Slurm: memory per run in GB, in all (split evenly between its nodes) [default: the partition's default]."),
    }  # fmt: skip


def slurm_only(executor: str, slurm: dict[str, Any]) -> None:
    """The Slurm options given (slurm_per_run's, --partition, --time-min, ...) do nothing with --executor local:
    refused before any work, naming them (train, sweep, reproduce)."""
    given = [f"--{key.replace('_', '-')}" for key, value in slurm.items() if value is not None]
    if executor == "local" and given:
        raise Refusal(f"{', '.join(given)}: Slurm option(s); add --executor slurm, or leave them out")


def checkpoint(help: str, many: bool = False, default: str | None = None) -> Any:
    """--checkpoint of evaluate, grads and finetune: one grammar (records/checkpoints.py parses it)."""
    from prelnx.records.checkpoints import checkpoint_grammar

    again = "; repeatable" if many else ""
    shown = f" [default: {default}]" if default else ""
    return typer.Option("--checkpoint", help=f"{help}: {checkpoint_grammar(many)}{again}{shown}.")


def flag(name: str, help: str) -> Any:  # any other on/off option
    return typer.Option(name, metavar="", help=help)


def echo(as_json: bool, facts: Any, text: str) -> None:
    """With --json (json_flag) the facts as one JSON value, for scripts; else the text, rendered for people."""
    typer.echo(json.dumps(facts, indent=2) if as_json else text)
