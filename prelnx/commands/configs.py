"""`prelnx configs list | show | copy`: the shipped configs from any folder (torchtune's `tune ls` / `tune cp`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from prelnx.commands import options

configs_app = options.command_group("The shipped configs: list them, show one resolved, copy one to edit.")

_BASE_LINE = re.compile(r"^base:[^\n#]*", re.MULTILINE)


def _kind(path: Path, known: dict[Path, str]) -> str:
    """translation, masked_lm, ...: its task; a sweep spec: `sweep of <task>`. `known`: the kinds found so far (a
    sweep's base is most often a config listed too: loaded once)."""
    from prelnx.config.load import base_chain, load_config
    from prelnx.sweep.spec import is_sweep_file  # the one rule: a spec has grid: or arms:

    if path not in known:
        if is_sweep_file(path):
            chain = base_chain(path)
            known[path] = f"sweep of {_kind(chain[1], known)}" if len(chain) > 1 else "sweep"
        else:
            known[path] = load_config(path)[0].task
    return known[path]


@configs_app.command("list", short_help="Every shipped config: its name, task and purpose.")
def list_command(as_json: Annotated[bool, options.json_flag()] = False) -> None:
    """Every shipped config: the name --config takes, its task (or `sweep of <task>`), and its purpose (the first
    line of its header)."""
    from prelnx.config.shipped import shipped_configs
    from prelnx.console import columns

    known: dict[Path, str] = {}
    found = [(item.name, _kind(item.path, known), item.purpose) for item in shipped_configs()]
    header = ("name", "task", "purpose")
    options.echo(as_json, [dict(zip(header, row)) for row in found], "\n".join(columns([header, *found])))


@configs_app.command("show", short_help="A shipped config resolved, with its base: chain.")
def show_command(
    name: Annotated[str, typer.Argument(help="A config's name (prelnx configs list) or a path.")],
) -> None:
    """The config resolved (every key its task reads, defaults included) after the chain of files it inherits from."""
    from prelnx.config.load import base_chain, dump_config, find_config, load_config
    from prelnx.config.shipped import name_of
    from prelnx.sweep.spec import is_sweep_file

    path = find_config(name)
    chain = base_chain(path)
    typer.echo("# base: chain: " + " -> ".join(name_of(link) or str(link) for link in chain))
    if is_sweep_file(path):  # a sweep spec: its file as written, then its base resolved
        typer.echo(path.read_text(encoding="utf-8").rstrip("\n"))
        if len(chain) < 2:
            return
        path = chain[1]
        typer.echo(f"# its base, {name_of(path) or path}, resolved:")
    typer.echo(dump_config(load_config(path)[0], task_keys_only=True).rstrip("\n"))


@configs_app.command("copy", short_help="Copy a shipped config to a file to edit.")
def copy_command(
    name: Annotated[str, typer.Argument(help="A config's name (prelnx configs list).")],
    dest: Annotated[str, typer.Argument(help="The file to write (or a folder: the config's file name in it).")],
    force: Annotated[bool, options.force("Replace DEST if it exists.")] = False,
) -> None:
    """Copy a shipped config to DEST, comments included, its `base:` made the shipped name of its base, so that the
    copy resolves from any folder: edit it, then `prelnx train --config DEST`."""
    from prelnx.exits import Refusal
    from prelnx.config.load import base_chain, find_config
    from prelnx.config.shipped import name_of

    source = find_config(name)
    target = Path(dest) / source.name if dest.endswith("/") or Path(dest).is_dir() else Path(dest)  # (Path drops a "/")
    if target.exists() and not force:
        raise Refusal(f"{target}: exists; give another DEST, or --force to replace it")
    text = source.read_text(encoding="utf-8")
    chain = base_chain(source)
    if len(chain) > 1:
        base = name_of(chain[1]) or str(chain[1].resolve())
        text = _BASE_LINE.sub(f"base: {base}", text, count=1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {target}" + (f" (base: {name_of(chain[1]) or chain[1]})" if len(chain) > 1 else ""))
