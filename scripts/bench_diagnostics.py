"""The cost of train.diagnostics: wall time of the demo config's run without and with diagnostics, alternated.

Each run is a whole `prelnx train` of configs/demo/preln_nowarmup.yaml (start-up, training, per-epoch validation with
BLEU, checkpoints) in a fresh run dir, one thread (OMP_NUM_THREADS, default 1), off on on off on ... so that a
change in the machine's load hits both arms alike. "On" is the suggested setting (README: diagnostics every 25
updates, the sharpness every 100). Prints each pair, the overhead per pair ((on - off) / off) and its median, the CPU
(from /proc/cpuinfo) and the load average before and after: on a shared machine, say so beside the figure.

    python scripts/bench_diagnostics.py [--epochs 3] [--repeats 2] [--every 25] [--sharpness 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path("configs/demo/preln_nowarmup.yaml")


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def load() -> str:
    return os.popen("uptime").read().strip()


def run(work: Path, name: str, sets: list[str]) -> float:
    threads = os.environ.get("OMP_NUM_THREADS", "1")
    command = [sys.executable, "-m", "prelnx.cli", "train", "--config", str(DEMO), "--run-dir", str(work / name),
               "--set", f"train.threads={threads}"] + [arg for s in sets for arg in ("--set", s)]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=threads))
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{name}: prelnx train failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--sharpness", type=int, default=100)
    args = parser.parse_args()
    budget = [f"train.max_epoch={args.epochs}"]
    diagnosed = [f"train.diagnostics.every_updates={args.every}",
                 f"train.diagnostics.sharpness_every_updates={args.sharpness}"]  # fmt: skip
    print(f"CPU: {cpu()}; {os.cpu_count()} cores visible; load before: {load()}")
    print(f"demo config, {args.epochs} epochs, diagnostics every {args.every} updates, sharpness every {args.sharpness}")
    overheads = []
    with tempfile.TemporaryDirectory(prefix="bench-diagnostics-") as tmp:
        work = Path(tmp)
        run(work, "warm-up", budget + ["train.max_epoch=1"])  # data generated and caches warm before timing
        for repeat in range(args.repeats):
            off = run(work, f"off-{repeat}", budget)
            on = run(work, f"on-{repeat}", budget + diagnosed)
            rows = len((work / f"on-{repeat}" / "diagnostics.jsonl").read_text().splitlines())
            overheads.append((on - off) / off)
            print(f"pair {repeat + 1}: off {off:.1f} s, on {on:.1f} s ({rows} diagnostics rows): {overheads[-1]:+.1%}")
    print(f"median overhead: {statistics.median(overheads):+.1%} over {len(overheads)} pairs; load after: {load()}")


if __name__ == "__main__":
    main()
