"""Parsing the list-valued options of the study commands: --seeds (grads, theory), --layouts and --depths (grads).

A bad value raises GradsError with the option's name and what is expected; the commands print it and exit 2.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.analysis.grads.study import LAYOUTS, GradsError


def parse_seeds(text: str) -> tuple[int, ...]:
    """`10` -> seeds 1..10; `3,7` -> seeds 3 and 7."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.lstrip("-").isdigit() for part in parts):
        raise GradsError(f"--seeds: expected a count (10 = seeds 1..10) or a list (3,7), got {text!r}")
    if "," not in text:
        count = int(parts[0])
        if count < 1:
            raise GradsError(f"--seeds: need at least 1 seed, got {count}")
        return tuple(range(1, count + 1))
    seeds = tuple(int(part) for part in parts)
    if len(set(seeds)) != len(seeds):
        raise GradsError(f"--seeds: repeated seed in {text!r}")
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


def checkpoint_path(text: str) -> Path:
    """--checkpoint of `prelnx grads`: `RUN_DIR:best`, `RUN_DIR:last`, a run dir (its best), or a checkpoint file,
    with the meaning `best` and `last` have in `prelnx evaluate RUN_DIR --checkpoint best|last|PATH`."""
    from prelnx.records.checkpoints import CHECKPOINT_NAMES, named_checkpoint

    run_dir, sep, which = text.rpartition(":")
    if sep and which in CHECKPOINT_NAMES:
        return named_checkpoint(Path(run_dir), which)
    if Path(text).is_dir():
        return named_checkpoint(Path(text), "best")
    return Path(text)
