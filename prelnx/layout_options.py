"""A layout's options (Layout API v1, docs/your_layout.md): declared once, on the layout (a shipped layout's row in
prelnx/layouts.py, a user's class's `options`), read by the config's check, the plan's --layout-options and the
plugin's LayoutScheme.option. Standard library only: the plugin reads it too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Option:
    """One option of a layout: its config key `model.<key>`, default (whose type is the option's: bool, int, float
    or str), the allowed values (`choices`, or a closed range `low`..`high` for a number) and help. This one
    declaration drives the config's check (option_values), the plan's argument (--layout-options, JSON) and the
    plugin's value (LayoutScheme.option)."""

    key: str
    default: bool | int | float | str
    help: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kind = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[type(self.default)]
        bounds = f" in [{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}]"
        return kind + (bounds if (self.low, self.high) != (None, None) else "")

    def coerce(self, value: Any) -> Any:
        """The value as the option's type, or ValueError naming what is allowed."""
        kind = type(self.default)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        ok = isinstance(value, kind) and (kind is bool) == isinstance(value, bool) and value == value
        if ok and self.choices:
            ok = value in self.choices
        if ok and self.low is not None:
            ok = value >= self.low
        if ok and self.high is not None:
            ok = value <= self.high
        if not ok:
            raise ValueError(f"expected {self.allowed()}, got {value!r}")
        return value


def option_values(row: Any, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The option values of a layout (its row, or a plugin scheme's class: its `options`) from `given` (model.<key>
    -> value; the rest its defaults; keys it does not declare dropped), and (key, problem) pairs naming each bad
    value and what is allowed."""
    values, problems = {}, []
    name = getattr(row, "display", "") or getattr(row, "display_name", "") or getattr(row, "__name__", row.name)
    for option in row.options:
        try:
            values[option.key] = option.coerce(given.get(option.key, option.default))
        except ValueError as error:  # kept as given: the config with a problem is refused
            values[option.key] = given[option.key]
            problems.append((f"model.{option.key}", f"{error} (layout {name}: {option.help})"))
    return values, problems


def declared_options(cls: type) -> tuple[Option, ...]:
    """A user class's `options`, checked: Options with identifier keys, distinct, their defaults allowed (ValueError
    saying what is wrong, in one line, otherwise)."""
    declared = tuple(getattr(cls, "options", ()) or ())
    for option in declared:
        if not isinstance(option, Option) or not option.key.isidentifier():
            raise ValueError(f"each an Option(key, default, help, ...) (prelnx.layouts.Option) with an identifier "
                             f"key, got {option!r}")
        try:
            option.coerce(option.default)
        except (ValueError, KeyError):
            raise ValueError(f"{option.key}'s default {option.default!r} is not allowed: a bool, int, float or str "
                             f"within its choices/range") from None
    if len({o.key for o in declared}) < len(declared):
        raise ValueError("a key is declared twice")
    return declared
