"""The list-valued options: --seeds (every command that takes seeds), --layouts and --depths (grads); a bad value is
a Refusal naming the option (--checkpoint's one grammar is records/checkpoints.py's)."""

from __future__ import annotations

from prelnx.analysis.grads.study import LAYOUTS, GradsError
from prelnx.config.errors import Refusal

SEEDS_HELP = "a count N (seeds 1..N) or a list (3,7)"  # the one grammar of --seeds, in every command


def parse_seeds(text: str) -> tuple[int, ...]:
    """`10` -> seeds 1..10; `3,7` -> seeds 3 and 7 (every command's --seeds)."""
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


def parse_layouts(text: str) -> tuple[str, ...]:
    layouts = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown or not layouts:
        raise GradsError(f"--layouts: unknown layout {', '.join(unknown) or repr(text)}; allowed: {', '.join(LAYOUTS)} (e.g. post,pre)")
    return tuple(dict.fromkeys(layouts))


def parse_depths(text: str) -> tuple[int, ...]:
    try:
        depths = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise GradsError(f"--depths: expected layer counts like 6,8,10, got {text!r}") from None
    if not depths or any(depth < 1 for depth in depths):
        raise GradsError(f"--depths: every depth must be >= 1 (layers per encoder and decoder), got {text!r}")
    return tuple(dict.fromkeys(depths))
