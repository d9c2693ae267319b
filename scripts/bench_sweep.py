"""Local sweep scaling: 2 runs with --jobs 2 (unpinned, and pinned: --pin-cores) against the same 2 runs with
--jobs 1 (threads split per job), alternated over --repeats rounds so that a change of load hits all three alike.

Prints each wall time and the speed-ups (jobs-1 time / jobs-2 time), per round and their medians.

    python scripts/bench_sweep.py [--config configs/demo/preln_nowarmup.yaml] [--updates 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from prelnx.sweep.execute import run_sweep
from prelnx.sweep.spec import spec_from_command_line


def timed_sweep(config: Path, updates: int, jobs: int, out: Path, pin: bool = False) -> float:
    fixed = [f"train.max_update={updates}", "train.max_epoch=100", "eval.bleu.enabled=false", "train.keep_last_epochs=0"]
    spec = spec_from_command_line(config, ["train.seed=1,2"], fixed, f"bench_jobs{jobs}")
    started = time.monotonic()
    rows = run_sweep(spec, out=out, jobs=jobs, pin_cores=pin)
    assert all(row["status"] == "finished" for row in rows), rows
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("configs/demo/preln_nowarmup.yaml"))
    parser.add_argument("--updates", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_sweep."))
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    ratios: dict[str, list[float]] = {"jobs 2": [], "jobs 2 pinned": []}
    for round_ in range(1, args.repeats + 1):
        one = timed_sweep(args.config, args.updates, 1, work / f"jobs1-{round_}")
        two = timed_sweep(args.config, args.updates, 2, work / f"jobs2-{round_}")
        pinned = timed_sweep(args.config, args.updates, 2, work / f"pinned-{round_}", pin=True)
        ratios["jobs 2"].append(one / two)
        ratios["jobs 2 pinned"].append(one / pinned)
        print(f"round {round_}: --jobs 1 {one:.1f} s, --jobs 2 {two:.1f} s ({one / two:.2f}x), --jobs 2 --pin-cores "
              f"{pinned:.1f} s ({one / pinned:.2f}x); load average {os.getloadavg()[0]:.2f}", flush=True)
    for name, values in ratios.items():
        print(f"speed-up {name} vs jobs 1: median {statistics.median(values):.2f}x ({', '.join(f'{v:.2f}' for v in values)})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
