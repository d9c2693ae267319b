"""Generated data built once per settings: in a temporary sibling folder, renamed into place when complete.

An interrupted build never looks finished; a stale or foreign folder under the name is replaced; when another
process finished the same build first, its copy is used.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable


def build_cached(out_dir: Path, is_built: Callable[[Path], bool], build: Callable[[Path], None]) -> Path:
    """`build(staging)` writes everything (its manifest included) unless `is_built(out_dir)`; returns `out_dir`."""
    if is_built(out_dir):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        build(staging)
        if out_dir.exists() and not is_built(out_dir):
            shutil.rmtree(out_dir)  # a stale or foreign folder under our cache name
        try:
            staging.rename(out_dir)
        except OSError:
            if not is_built(out_dir):  # another process finished the same build first: use its copy
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir
