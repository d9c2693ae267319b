"""Runner overhead: the same training through `prelnx train` and through the plain command in its command.txt.

Alternates the two (A B A B ...), each for the same number of updates, and prints fairseq's own words-per-second
(target tokens/s over the run, from its final `train` record) and the ratio prelnx / plain (goal >= 0.98).

    python scripts/bench_runner.py [--config configs/demo/preln_nowarmup.yaml] [--updates 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from prelnx.config.load import load_config
from prelnx.launch.local import train

# fairseq's --log-format json line: the plain command reports no prelnx events, so a benchmark against it reads this
FAIRSEQ_RECORD = re.compile(r"\|\s*(\w+)\s*\|\s*(\{.*\})\s*$")


def fairseq_records(log_text: str, tag: str) -> list[dict]:
    """The values of fairseq's own JSON log lines of `tag` (`train`, `valid`), as fairseq wrote them (strings)."""
    found = (FAIRSEQ_RECORD.search(line) for line in log_text.splitlines())
    return [json.loads(match.group(2)) for match in found if match and match.group(1) == tag]


def final_wps(log_text: str) -> float:
    """Words (target tokens) per second of the last `train` (epoch) record."""
    values = [record["train_wps"] for record in fairseq_records(log_text, "train")]
    if not values:
        raise RuntimeError("no train record in the log")
    return float(values[-1])


def bench_arguments(description: str, updates: int) -> argparse.Namespace:
    """--config, --updates, --repeats: what the benchmark scripts share."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", default="configs/demo/preln_nowarmup.yaml")
    parser.add_argument("--updates", type=int, default=updates)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args()


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], updates=60)
    overrides = [f"train.max_update={args.updates}", "train.max_epoch=100", "eval.bleu.enabled=false",
                 "train.keep_last_epochs=0"]  # fmt: skip
    config, _ = load_config(args.config, overrides)
    work = Path(tempfile.mkdtemp(prefix="bench_runner."))
    prelnx_wps, plain_wps = [], []
    for repeat in range(args.repeats):
        run_dir = work / f"prelnx{repeat}"
        result = train(config, run_dir=run_dir)
        assert result.status == "finished", result.reason
        prelnx_wps.append(final_wps((run_dir / "train.log").read_text()))

        command = (run_dir / "command.txt").read_text().strip()
        plain_dir = work / f"plain{repeat}"
        command = command.replace(str(run_dir / "checkpoints"), str(plain_dir / "checkpoints"))
        env_part, _, fairseq_part = command.partition(" fairseq-train ")
        env = dict(os.environ, **dict(item.split("=", 1) for item in shlex.split(env_part)))
        argv = [sys.executable, "-m", "fairseq_cli.train", *shlex.split(fairseq_part)]
        completed = subprocess.run(argv, env=env, capture_output=True, text=True)
        assert completed.returncode == 0, completed.stdout[-2000:]
        plain_wps.append(final_wps(completed.stdout))
        print(f"repeat {repeat + 1}: prelnx train {prelnx_wps[-1]:.0f} wps | plain fairseq-train {plain_wps[-1]:.0f} wps",
              flush=True)
    shutil.rmtree(work, ignore_errors=True)
    ratio = statistics.mean(prelnx_wps) / statistics.mean(plain_wps)
    print(f"config {args.config}, {args.updates} updates x {args.repeats} repeats, {os.cpu_count()} cores")
    print(f"mean wps: prelnx {statistics.mean(prelnx_wps):.0f}, plain {statistics.mean(plain_wps):.0f}; ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
