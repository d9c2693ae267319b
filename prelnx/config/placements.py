"""The keys of the norm placements (docs/placements.md) and their checks: Mix-LN's share of Post-LN layers. Which
layouts are placements, and their norms, are rows of prelnx/layouts.py (checked by the schema's layout_problems).
Read by prelnx.config.schema, the one place that knows the YAML vocabulary; imports nothing of prelnx at run time
(the schema imports this module).
"""

from __future__ import annotations

import math
from typing import Any


def mixln_post_ln_layers(alpha: float, layers: int) -> int:
    """floor(alpha L): Mix-LN's Post-LN layers in a stack of L (the plugin's mixln.post_ln_layers, the same rule)."""
    return math.floor(alpha * layers + 1e-9)


def placement_problems(m: Any) -> list[tuple[str, str]]:
    """m: the config's ModelConfig (not imported: the schema imports this module). (key, message) for Mix-LN's
    alpha, and for a Mix-LN without a Post-LN layer (it would be Pre-LN)."""
    problems = []
    if not 0.0 <= m.mixln_alpha <= 1.0:
        problems.append(("model.mixln_alpha", f"must be in [0, 1], got {m.mixln_alpha}"))
    elif m.layout == "mixln":
        for key in ("encoder_layers", "decoder_layers"):
            layers = getattr(m, key)
            if layers is not None and layers >= 1 and mixln_post_ln_layers(m.mixln_alpha, layers) == 0:
                problems.append((f"model.{key}", f"layout: mixln with mixln_alpha {m.mixln_alpha} has no Post-LN layer "
                                 f"in {layers} layers (floor(alpha L) = 0: it would be Pre-LN); use more layers or a "
                                 f"larger model.mixln_alpha"))  # fmt: skip
    return problems
