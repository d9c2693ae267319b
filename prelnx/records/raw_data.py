"""A study's raw data: the files of each run a report is computed from, kept in the repository
(docs/results/<study>/runs/, no checkpoints) and put back into a sweep folder, so that the same sweep resumed on a
fresh clone trains only what is missing (issue 48: studies outlive their machine). Only done runs (finished, diverged)
travel either way: an unfinished one is trained again from the start, never resumed from a half-copied record."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from prelnx.records.status import recorded_status

RUN_FILES = ("status.json", "metrics.jsonl", "config.yaml", "machine.json", "diagnostics.jsonl", "eval/test.json")
COMPRESS_ABOVE = 1_000_000  # bytes: a file above this is kept as .gz


def keep_run(run_dir: Path, dest: Path, portable=lambda text: text) -> bool:
    """Copy a done run's files into `dest` (a large one gzipped; config.yaml through `portable`); False if not done."""
    if not recorded_status(run_dir).done:
        return False
    for name in RUN_FILES:
        source, target = run_dir / name, dest / name
        if not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if name == "config.yaml":
            target.write_text(portable(source.read_text()))
        elif source.stat().st_size > COMPRESS_ABOVE:
            target.with_name(target.name + ".gz").write_bytes(gzip.compress(source.read_bytes(), mtime=0))
        else:
            shutil.copyfile(source, target)
    return True


def restore_runs(raw: Path, sweep_dir: Path, names: list[str]) -> list[str]:
    """Put each named run that `raw` holds as done, and `sweep_dir` does not hold at all, into `sweep_dir`; returns
    the names restored. A run dir already in the sweep folder is never touched (it may be training)."""
    restored = []
    for name in names:
        source, target = raw / name, sweep_dir / name
        if target.exists() or not source.is_dir() or not recorded_status(source).done:
            continue
        shutil.copytree(source, target)
        for packed in target.rglob("*.gz"):
            packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
        restored.append(name)
    return restored
