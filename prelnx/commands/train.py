"""`prelnx train`: validate a config, then train (or resume) one run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from prelnx.commands import options
from prelnx.atomic import io_reason
from prelnx.config.load import ConfigError, dump_config, load_config
from prelnx.config.schema import schedule_warnings
from prelnx.run.checkpoints import CheckpointRefused
from prelnx.run.datacheck import DataDamaged
from prelnx.run.lock import RunLocked
from prelnx.run.plan import DataNotReady, data_dir, plan_launch, resolve_batch
from prelnx.run.runner import RunConflict, RunIOError, default_run_dir, train
from prelnx.run.status import EXIT_BUSY


def train_command(
    config: Annotated[str, options.config()],
    set_: Annotated[Optional[list[str]], options.sets()] = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="Where the run's files go [default: runs/<config name>].")] = None,
    dry_run: Annotated[bool, options.dry_run("Print the resolved config and the fairseq-train command; train nothing.")] = False,
    force: Annotated[bool, options.force("Train again even if the run dir holds a finished or different run (the old one is renamed, not deleted).")] = False,
) -> None:
    """Train a Post-LN or Pre-LN fairseq transformer; per-epoch valid loss and BLEU go to metrics.jsonl and TensorBoard.

    Re-running the same command on the same run dir resumes from the last checkpoint.
    Exit codes: 0 finished, 1 failed (also a full disk: status.json says which path), 2 bad config or input
    (a refused checkpoint, damaged data), 3 diverged, 4 the run dir is in use by another process, 130 interrupted.
    """
    try:
        resolved, _ = load_config(config, set_ or [])
        for warning in schedule_warnings(resolved):
            typer.echo(f"warning: {warning}", err=True)
        target = run_dir or default_run_dir(resolved)
        if dry_run:
            resolved = resolve_batch(resolved)
            typer.echo(dump_config(resolved))
            launch = plan_launch(resolved, data_dir(resolved), target / "checkpoints")
            typer.echo(f"# {launch.batch}")
            typer.echo("# the equivalent plain command:")
            typer.echo(launch.command_line())
            return
        result = train(resolved, run_dir=target, force=force, echo=typer.echo)
    except RunLocked as error:
        options.fail(error, EXIT_BUSY)
    except RunIOError as error:
        options.fail(error.strerror, 1)
    except OSError as error:  # e.g. --run-dir under a file
        options.fail(io_reason(error), 1)
    except (ConfigError, DataNotReady, DataDamaged, CheckpointRefused, RunConflict, ValueError) as error:
        options.fail(error, 2)
    raise typer.Exit(result.exit_code)
