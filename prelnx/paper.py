"""The paper's claims and numbers, read from prelnx/paper.yaml: the one place they are written down (read by the
gradient study and the report alike)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml


def paper_data() -> dict[str, Any]:
    """prelnx/paper.yaml: `training`, `gradients`, `bert` claims; `figure3`, `figure5a` numbers."""
    return yaml.safe_load(resources.files("prelnx").joinpath("paper.yaml").read_text())


def figure5a_fraction() -> float:
    """Pre-LN's updates to reach the valid loss Post-LN reaches, as a fraction of Post-LN's (500k / 700k)."""
    numbers = paper_data()["figure5a"]
    return numbers["preln_updates"] / numbers["postln_updates"]
