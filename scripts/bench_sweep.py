"""Local sweep scaling: 2 runs with --jobs 2 against the same 2 runs with --jobs 1 (threads split per job).

Prints both wall times and the speed-up (jobs-1 time / jobs-2 time).

    python scripts/bench_sweep.py [--config configs/demo/preln_nowarmup.yaml] [--updates 60]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from prelnx.sweep.execute import run_sweep
from prelnx.sweep.spec import spec_from_command_line


def timed_sweep(config: Path, updates: int, jobs: int, out: Path) -> float:
    fixed = [f"train.max_update={updates}", "train.max_epoch=100", "eval.bleu.enabled=false", "train.keep_last_epochs=0"]
    spec = spec_from_command_line(config, ["train.seed=1,2"], fixed, f"bench_jobs{jobs}")
    started = time.monotonic()
    rows = run_sweep(spec, out=out, jobs=jobs, echo=lambda line: None)
    assert all(row["status"] == "finished" for row in rows), rows
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("configs/demo/preln_nowarmup.yaml"))
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_sweep."))
    one = timed_sweep(args.config, args.updates, 1, work / "jobs1")
    print(f"2 runs, --jobs 1 ({os.cpu_count()} threads each): {one:.1f} s", flush=True)
    two = timed_sweep(args.config, args.updates, 2, work / "jobs2")
    print(f"2 runs, --jobs 2 ({max(1, (os.cpu_count() or 1) // 2)} threads each): {two:.1f} s")
    print(f"speed-up jobs 2 vs 1: {one / two:.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
