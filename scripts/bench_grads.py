"""Cost of the gradient study: its wall time against the time its forward+backward passes take.

Runs `prelnx grads` on a config (default: the paper-size Figure-3 grid on the synthetic task) and prints the wall
time, the forward+backward seconds summed over the models, and the cost ratio wall x workers / fwd+bwd (1.0 = the
cores did nothing but forward+backward passes; the target is <= 1.2). With --compare, it runs the same study again
in one process that gives every core to each model in turn (intra-op threads), and prints both wall times.

    python scripts/bench_grads.py                              # the full grid: 2 layouts x 5 depths x 10 seeds
    python scripts/bench_grads.py --quick                      # the --quick preset
    python scripts/bench_grads.py --depths 6,14 --seeds 2 --compare
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from prelnx import console
from prelnx.analysis.grads.run import run_study
from prelnx.analysis.grads.study import QUICK, GradStudy
from prelnx.analysis.grads.summary import report_lines
from prelnx.commands.grads import parse_depths
from prelnx.commands.options import parse_seeds
from prelnx.config.load import load_config
from prelnx.machine import usable_cores


def load_average() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="grads/figure3_synthetic.yaml")
    parser.add_argument("--quick", action="store_true", help="the --quick preset (explicit options win)")
    parser.add_argument("--depths", default=None)
    parser.add_argument("--seeds", default=None)
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_grads"))
    parser.add_argument("--compare", action="store_true", help="run the study again in 1 process x all cores, and compare")
    args = parser.parse_args()

    console.configure()  # the study's progress lines on stdout, as `prelnx grads` prints them
    config, _ = load_config(args.config)
    study = GradStudy(
        config,
        depths=parse_depths(args.depths) if args.depths else (QUICK["depths"] if args.quick else GradStudy.depths),
        seeds=parse_seeds(args.seeds or str(QUICK["seeds"] if args.quick else 10)),
        batches=args.batches or 1,
        max_tokens=args.max_tokens or (QUICK["max_tokens"] if args.quick else None),
        workers=args.workers,
        threads=args.threads,
    )
    print(f"{usable_cores()} cores; load average before: {load_average()}", flush=True)
    started = time.perf_counter()
    outcome = run_study(study, args.out)
    total = time.perf_counter() - started
    timing = outcome.summary["timing"]
    print("\n".join(report_lines(outcome.summary)))
    print(f"load average after: {load_average()}")
    print(f"wall (whole command, with plots): {total:.1f} s")
    print(f"wall (measurement):               {timing['wall_s']:.1f} s   [setup {timing['setup_s']:.1f} s, models {timing['models_s']:.1f} s]")
    print(f"forward+backward, summed:         {timing['fwdbwd_sum_s']:.1f} s over {timing['models']} models "
          f"({timing['workers']} workers x {timing['threads_per_worker']} threads)")  # fmt: skip
    print(f"  per worker:                     {timing['fwdbwd_sum_s'] / timing['workers']:.1f} s")
    print(f"build {timing['build_sum_s']:.1f} s, data {timing['data_sum_s']:.1f} s (summed over workers)")
    print(f"ratio wall / fwd+bwd sum:         {total / timing['fwdbwd_sum_s']:.2f}")
    print(f"cost ratio wall x workers / fwd+bwd: {total * timing['workers'] / timing['fwdbwd_sum_s']:.2f}  (target <= 1.2)")

    if args.compare:
        serial_study = GradStudy(**{**vars(study), "workers": 1, "threads": usable_cores()})
        print(f"again, in one process with {usable_cores()} threads per model:", flush=True)
        started = time.perf_counter()
        serial = run_study(serial_study, args.out / "one_process")
        serial_total = time.perf_counter() - started
        serial_timing = serial.summary["timing"]
        print(f"1 process x {usable_cores()} threads: wall {serial_total:.1f} s, fwd+bwd {serial_timing['fwdbwd_sum_s']:.1f} s, "
              f"cost ratio {serial_total / serial_timing['fwdbwd_sum_s']:.2f}")  # fmt: skip
        print(f"{timing['workers']} processes x {timing['threads_per_worker']} threads: wall {total:.1f} s; "
              f"speed-up of the pool: {serial_total / total:.2f}x")  # fmt: skip

if __name__ == "__main__":
    main()
