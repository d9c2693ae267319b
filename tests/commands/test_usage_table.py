"""docs/usage.md's table of every command's options is the command line's own: this test rebuilds it from the app.

Rewrite it after changing an option: `.venv/bin/python -m tests.commands.test_usage_table`.
"""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "usage.md"
BEGIN, END = "<!-- options-table begin (tests/commands/test_usage_table.py) -->", "<!-- options-table end -->"
ORDER = ["train", "sweep", "reproduce", "status", "evaluate", "finetune", "grads", "theory", "plot", "report",
         "data prepare", "configs list", "configs show", "configs copy", "layouts list", "layouts show", "layouts new",
         "env"]  # fmt: skip


def table() -> str:
    import typer.main

    from prelnx.cli import build_app

    def walk(command, prefix):
        if hasattr(command, "commands"):
            for name in sorted(command.commands):
                yield from walk(command.commands[name], f"{prefix} {name}".strip())
        else:
            yield prefix, command

    commands = dict(walk(typer.main.get_command(build_app()), ""))
    assert set(commands) == set(ORDER), f"commands not in ORDER: {sorted(set(commands) ^ set(ORDER))}"
    lines = ["| command | argument / option | meaning |", "| --- | --- | --- |"]
    for name in ORDER:
        params = [p for p in commands[name].params if p.name not in ("help", "ctx")]
        if not params:
            lines.append(f"| `prelnx {name}` | (none) | {commands[name].help.strip().splitlines()[0]} |")
        for index, param in enumerate(params):
            option = param.name.upper() if param.param_type_name == "argument" else ", ".join(f"`{o}`" for o in param.opts)
            meaning = (getattr(param, "help", None) or "").replace("|", "\\|")
            lines.append(f"| {f'`prelnx {name}`' if index == 0 else ''} | {option} | {meaning} |")
    return "\n".join(lines)


def _documented() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n")


def test_the_usage_table_lists_every_option_of_every_command():
    assert _documented() == table(), "docs/usage.md's options table is stale: run python -m tests.commands.test_usage_table"


if __name__ == "__main__":
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text[:text.index(BEGIN) + len(BEGIN)] + "\n" + table() + "\n" + text[text.index(END):], encoding="utf-8")
