"""A layout's options (Layout API v1, docs/your_layout.md): declared once, on the layout (a shipped layout's row in
prelnx/layouts.py, a user's class's `options`), read by the config's check, the plan's --layout-options and the
plugin's LayoutScheme.option; and the one coercion of a value to a scalar type (`scalar`), the config's too. Standard
library only: the plugin reads it too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}  # the scalar types, in words


def scalar(value: Any, kind: type) -> Any:
    """`value` as `kind` (one of KINDS), else ValueError: a bool is no int, nor an int a bool; an int or a number's
    text widens to float (YAML 1.1 reads 5e-4, without a dot, as text)."""
    if kind is float and isinstance(value, (int, str)) and not isinstance(value, bool):
        value = float(value)  # ValueError for text that is no number
    if kind not in KINDS or not isinstance(value, kind) or (kind is bool) != isinstance(value, bool):
        raise ValueError(f"expected {KINDS.get(kind, kind)}, got {value!r}")
    return value


@dataclass(frozen=True)
class Option:
    """One option of a layout, `model.<key>`: its default (whose type, one of KINDS, is the option's), the allowed
    values (`choices`, or the closed range `low`..`high` of a number) and help."""

    key: str
    default: bool | int | float | str
    help: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kind = KINDS[type(self.default)]
        bounds = f" in [{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}]"
        return kind + (bounds if (self.low, self.high) != (None, None) else "")

    def coerce(self, value: Any) -> Any:
        """The value as the option's type, or ValueError naming what is allowed."""
        try:
            value = scalar(value, type(self.default))
            ok = value == value and (not self.choices or value in self.choices)  # NaN is no value
            ok = ok and (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"expected {self.allowed()}, got {value!r}")
        return value


def option_values(row: Any, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A layout's (its row's, or a plugin scheme class's) option values from `given`, defaults for the rest and keys it
    does not declare dropped; and a (key, problem) pair for each bad value, which is kept as given."""
    values, problems = {}, []
    name = getattr(row, "display", "") or getattr(row, "display_name", "") or getattr(row, "__name__", row.name)
    for option in row.options:
        try:
            values[option.key] = option.coerce(given.get(option.key, option.default))
        except ValueError as error:  # the config with a problem is refused
            values[option.key] = given[option.key]
            problems.append((f"model.{option.key}", f"{error} (layout {name}: {option.help})"))
    return values, problems

