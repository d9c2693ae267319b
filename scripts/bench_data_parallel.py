"""Data parallelism on this machine: words/s of the demo model, 1 process x 2 threads against 2 workers x 1 thread.

Both arms keep the same effective batch (train.effective_batch_tokens: 1 process accumulates 2 batches, 2 workers
take one each), run the same number of updates, and are alternated (A B A B ...); the ratio is taken pair by pair.
Then the same two trainings as two 1-worker runs side by side (`prelnx sweep --jobs 2`), for the throughput of
many single-worker runs. Words/s: fairseq's own target tokens per second over the run (its `train` record; for
several workers fairseq sums them).

    python scripts/bench_data_parallel.py [--config configs/demo/preln_nowarmup.yaml] [--updates 40] [--repeats 3]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from prelnx.config.load import load_config
from prelnx.launch.local import train
from prelnx.sweep.execute import run_sweep
from prelnx.sweep.spec import spec_from_command_line

from bench_runner import bench_arguments, final_wps  # scripts/ is on the path when this script runs


def wps(run_dir: Path) -> float:
    return final_wps((run_dir / "train.log").read_text())


def main() -> None:
    args = bench_arguments(__doc__.splitlines()[0], updates=40)
    common = [f"train.max_update={args.updates}", "train.max_epoch=100", "eval.bleu.enabled=false",
              "train.keep_last_epochs=0", "train.effective_batch_tokens=4096", "model.dropout=0"]  # fmt: skip
    arms = {"1 process x 2 threads": common + ["train.processes=1", "train.threads=2"],
            "2 workers x 1 thread": common + ["train.processes=2", "train.threads=1"]}  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="bench_dp."))
    results: dict[str, list[float]] = {name: [] for name in arms}
    for repeat in range(args.repeats):
        for name, overrides in arms.items():
            config, _ = load_config(args.config, overrides)
            run_dir = work / f"{name.replace(' ', '_')}_{repeat}"
            assert train(config, run_dir=run_dir).status == "finished"
            results[name].append(wps(run_dir))
            print(f"{name} #{repeat + 1}: {results[name][-1]:.0f} words/s", flush=True)
    a, b = results.values()
    ratios = [y / x for x, y in zip(a, b)]
    for name, values in results.items():
        print(f"{name}: median {statistics.median(values):.0f} words/s ({', '.join(f'{v:.0f}' for v in values)})")
    print(f"ratio 2 workers / 1 process, pair by pair: {', '.join(f'{r:.3f}' for r in ratios)} "
          f"(median {statistics.median(ratios):.3f})")

    spec = spec_from_command_line(Path(args.config), ["train.seed=1,2"], common + ["train.processes=1"], "bench_dp_sweep")
    started = time.monotonic()
    run_sweep(spec, out=work / "sweep", jobs=2)
    wall = time.monotonic() - started
    per_run = [wps(work / "sweep" / name) for name in ("seed-1", "seed-2")]
    print(f"sweep --jobs 2 (two 1-worker runs x 1 thread side by side): {per_run[0]:.0f} + {per_run[1]:.0f} = "
          f"{sum(per_run):.0f} words/s in all, {wall:.0f} s wall for both")


if __name__ == "__main__":
    main()
