"""`prelnx layouts list | show NAME | new NAME`: the layout table (prelnx/layouts.py) and a starting file of yours."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer

from prelnx.commands import options
from prelnx.exits import Refusal

layouts_app = options.command_group("The layouts prelnx trains: list them, show one, start a file of yours.")


def layout_rows(value: str | None = None) -> list[dict[str, Any]]:
    """Every shipped layout's row (or the one of `value`: a name, or a user's PATH.py:CLASS), as plain values."""
    from prelnx.layouts import LAYOUTS, layout

    if value is None:
        return [dataclasses.asdict(row) for row in LAYOUTS.values()]
    try:
        return [dataclasses.asdict(layout(value))]
    except KeyError:
        raise Refusal(f"layout {value!r}: not a shipped layout ({', '.join(LAYOUTS)}) nor a file of yours "
                      f"(PATH.py:CLASS)") from None  # fmt: skip


@layouts_app.command("list", short_help="Every shipped layout: name, family, tasks, norms.")
def list_command(as_json: Annotated[bool, options.json_flag()] = False) -> None:
    """Every shipped layout: the name model.layout takes, its display name, family, the tasks and model.norm values it
    is defined with, and whether it is built on Pre-LN. A layout file of yours is one more (prelnx layouts new)."""
    from prelnx.console import columns

    rows = layout_rows()
    cells = [("name", "display", "family", "pre-LN", "norms", "tasks"),
             *((r["name"], r["display"], r["family"], "yes" if r["pre_ln"] else "no", ",".join(r["norms"]),
                ",".join(r["tasks"])) for r in rows)]  # fmt: skip
    options.echo(as_json, rows, "\n".join(columns(cells)))


@layouts_app.command("show", short_help="One layout's row: a shipped name, or PATH.py:CLASS of yours.")
def show_command(
    name: Annotated[str, typer.Argument(help="A shipped layout's name (prelnx layouts list) or PATH.py:CLASS.")],
    as_json: Annotated[bool, options.json_flag()] = False,
) -> None:
    """One layout's row of the table, as the config's checks, the planner, the plugin and the report read it."""
    from prelnx.layouts import Option

    (row,) = layout_rows(name)
    lines = []
    for key, value in row.items():
        if key == "options":  # model.<key>: default; allowed; help
            value = [f"model.{o['key']} (default {o['default']!r}; {Option(**o).allowed()}): {o['help']}" for o in value]
        if isinstance(value, dict):  # the reference: repo file @ commit
            value = " ".join(filter(None, (value["repo"], value["file"], value["commit"] and f"@ {value['commit']}")))
        shown = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
        shown = ("yes" if shown else "no") if isinstance(shown, bool) else shown
        lines.append(f"{key + ':':<10} {shown if shown not in (None, '', ()) else '-'}")
    options.echo(as_json, row, "\n".join(lines))


@layouts_app.command("new", short_help="Write a starting layout file of yours, NAME.py, that trains as it is.")
def new_command(
    name: Annotated[str, typer.Argument(help="A Python identifier no shipped layout has (e.g. gated_preln).")],
    out: Annotated[Path, options.out("The folder to write NAME.py in.")] = Path("."),
    force: Annotated[bool, options.force("Replace NAME.py if it exists.")] = False,
) -> None:
    """Write NAME.py: a subclass of the plugin's LayoutScheme (Pre-LN with a learned scale per residual branch) whose
    hooks you edit (docs/your_layout.md); it trains as written: `prelnx train -c CONFIG --set
    model.layout=./NAME.py:CLASS`."""
    cls, text = starting_file(name)
    target = out / f"{name}.py"
    if target.exists() and not force:
        raise Refusal(f"{target}: exists; give another NAME or --out, or --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    spec = target if target.is_absolute() or str(target).startswith(".") else f"./{target}"
    typer.echo(f"wrote {target}: model.layout: {spec}:{cls}")


# A starting file, `prelnx layouts new NAME`: trains as written (tests/layouts/test_layouts_command.py).
STARTING_FILE = '''"""{display}: a layout of yours (written by `prelnx layouts new {name}`; docs/your_layout.md says
what each hook does). As written it is Pre-LN with one learned scale per residual branch, model.init_scale (1) at
initialisation: an option of the layout, declared in `options` (checked by the config, read with self.option).

    prelnx train -c demo/preln_nowarmup --set model.layout=./{name}.py:{cls} --set model.init_scale=0.5
"""

import torch
from torch import nn

from prelnx_fairseq_plugin.models.schemes import LayoutScheme, Option, sublayer_count


class {cls}(LayoutScheme):
    name = "{name}"  # its model.layout name in tables; not a shipped layout's
    display_name = "{display}"  # in figures and report arms
    pre_ln = True  # built on fairseq's Pre-LN (input norms, a final norm per stack); False: Post-LN
    norm_types = ("layernorm", "rmsnorm", "dyt")  # the model.norm values it is defined with
    allows_qk_norm = True
    language_model = True  # also task: language_model (the decoder-only model)
    reference = ""  # where its formula comes from: a paper, a repository at a commit
    # model.<key> options of this layout: Option(key, default, help, choices=(...) or low=/high=)
    options = (Option("init_scale", 1.0, "each residual branch's scale at initialisation", low=0.0),)

    def build_layer(self, layer, cfg, side):
        layer.branch_scales = nn.Parameter(torch.full((sublayer_count(layer),), self.option("init_scale")))

    def residual(self, layer, index, x, residual):
        return residual + layer.branch_scales[index] * x
'''


def starting_file(name: str) -> tuple[str, str]:
    """(class name, text) of a new layout file named `name` (an identifier no shipped layout has)."""
    from prelnx.layouts import LAYOUTS, LayoutFileError

    if not name.isidentifier() or name.casefold() in {n.casefold() for r in LAYOUTS.values() for n in (r.name, r.display)}:
        raise LayoutFileError(f"{name!r}: a layout's name is a Python identifier that no shipped layout has "
                              f"(shipped: {', '.join(LAYOUTS)})")  # fmt: skip
    cls = "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Layout"
    display = " ".join(part for part in name.split("_") if part).capitalize() or name
    return cls, STARTING_FILE.format(name=name, cls=cls, display=display)
