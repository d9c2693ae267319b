"""'Did you mean' for a name the user got wrong: a config key, by meaning where the name is a known alias of ours
(learning_rate -> optimizer.lr) and by spelling of its last part otherwise; a config file, by the closest existing
files. The aliases themselves are vocabulary and live in schema.py."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path


def _split(key: str) -> tuple[str, str]:
    section, _, last = key.rpartition(".")
    return section, last


def closest_key(key: str, known: Collection[str], aliases: Mapping[str, str]) -> str | None:
    """The known key `key` most likely meant, or None.

    1. Its last part is an alias (`learning_rate`) or the right name in another section (`train.lr`): the known key
       with that last part, in the same section if there is one.
    2. Else the same section's key whose last part is spelt closest (`model.layuot` -> `model.layout`).
    3. Else the closest whole key (`optimiser.lr` -> `optimizer.lr`).
    """
    section, last = _split(key)
    meant = aliases.get(last.lower(), last)
    by_meaning = sorted((k for k in known if _split(k)[1] == meant), key=lambda k: (_split(k)[0] != section, k))
    if by_meaning:
        return by_meaning[0]
    same_section = {_split(k)[1]: k for k in known if _split(k)[0] == section}
    near = difflib.get_close_matches(last, list(same_section), n=1)
    if near:
        return same_section[near[0]]
    near = difflib.get_close_matches(key, list(known), n=1)
    return near[0] if near else None


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def closest_files(name: str | Path, roots: Iterable[Path], limit: int = 4) -> list[str]:
    """Up to `limit` existing .yaml files whose last path parts are spelt closest to `name`'s (the best, and those
    nearly as close).

    `configs/demo/preln_nowarmpu.yaml` -> configs/demo/preln_nowarmup.yaml; a bare name is compared by file name.
    Looks under each root (recursively) and beside `name` (its folder, when that exists).
    """
    wanted = Path(name).with_suffix("")
    parts = [p for p in wanted.parts if p not in ("configs", ".")] or [wanted.name]
    folders = [(root, "**/*.yaml") for root in roots]
    if str(Path(name).parent) not in ("", "."):
        folders.append((Path(name).parent, "*.yaml"))
    candidates = {path.resolve(): path for root, pattern in folders if root.is_dir() for path in root.glob(pattern)}
    scored = []
    for resolved, candidate in candidates.items():
        tail = resolved.with_suffix("").parts[-len(parts):]
        ratio = difflib.SequenceMatcher(None, "/".join(parts), "/".join(tail)).ratio()
        if ratio >= 0.75:
            scored.append((-ratio, _shown(candidate)))
    best = min(scored, default=(0.0, ""))[0]
    return [shown for score, shown in sorted(set(scored))[:limit] if score <= best + 0.05]  # the closest ones only
