"""The configs prelnx ships, found by name from any folder (`demo/preln_nowarmup`, `iwslt_preln.yaml`): the
top-level `configs/`, which the wheel carries as the namespace package `prelnx._configs` (its folder read from its
spec: importlib.resources would give a MultiplexedPath); an editable install without it uses the checkout's.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CHECKOUT_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PACKAGE = "prelnx._configs"


def shipped_root() -> Path:
    """The folder of the shipped configs: the installed package's, else the checkout's (none there: no configs)."""
    spec = importlib.util.find_spec(PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if Path(location).is_dir():
            return Path(location)
    return CHECKOUT_CONFIGS


CONFIGS_DIR = shipped_root()


def name_of(path: Path, roots: Iterable[Path] = (CONFIGS_DIR,)) -> str | None:
    """`.../configs/demo/preln_nowarmup.yaml` -> `demo/preln_nowarmup`, its name under the first of `roots` that
    holds it (default: the shipped configs); None for a file under none of them."""
    resolved = path.resolve()
    for root in roots:
        if resolved.is_relative_to(root.resolve()):
            return resolved.relative_to(root.resolve()).with_suffix("").as_posix()
    return None


@dataclass(frozen=True)
class Shipped:
    name: str  # what --config takes: demo/preln_nowarmup
    path: Path
    purpose: str  # the first line of its header comment that is not the command that runs it


def _purpose(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text and not text.startswith(("prelnx ", "bash ", "python ", "nohup ", ".venv/")):
            return text
    return ""


def shipped_configs() -> list[Shipped]:
    return [Shipped(path.relative_to(CONFIGS_DIR).with_suffix("").as_posix(), path, _purpose(path))
            for path in sorted(CONFIGS_DIR.rglob("*.yaml"))]  # fmt: skip
