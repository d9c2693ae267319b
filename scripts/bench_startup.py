"""Start-up cost of a fairseq process, and `prelnx train`'s wall time over its own plain command.

Three measurements, each alternated (A B A B ...) so that a machine whose load drifts affects both sides alike:
1. `import fairseq_cli.train` in a fresh process: plain (what fairseq imports, what every prelnx child paid before)
   against prelnx's entry (prelnx/launch/fairseq_entry.py: without the modules that import scikit-learn).
2. A 1-update training: `prelnx train` (its CLI, the parent, the child through the entry) against the plain command
   of its command.txt (`fairseq-train`, i.e. `python -m fairseq_cli.train`): the whole process, wall time.
3. The same with `--updates` (default 100) on the demo config: the wall-time ratio prelnx / plain (goal <= 1.02).
Prints every pair, the medians, the CPU model and the load average before and after.

    python scripts/bench_startup.py [--config configs/demo/preln_nowarmup.yaml] [--updates 100] [--repeats 3]
        [--import-repeats 5] [--skip-long]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN_IMPORT = "import fairseq_cli.train"
ENTRY_IMPORT = ("from prelnx.launch import fairseq_entry; fairseq_entry.install(['--task', 'translation']); "
                "import fairseq_cli.train")  # fmt: skip


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            flags = Path("/proc/cpuinfo").read_text(errors="replace")
            bf16 = "AVX512-BF16" if "avx512_bf16" in flags else ("AMX" if "amx_bf16" in flags else "no native bf16")
            return f"{line.split(':', 1)[1].strip()} ({bf16}), {os.cpu_count()} cores"
    return f"unknown CPU, {os.cpu_count()} cores"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {shlex.join(argv)}\n{done.stdout[-3000:]}")
    return elapsed


def prelnx_train(config: str, updates: int, run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "prelnx.cli", "train", "--config", config, "--run-dir", str(run_dir),
            "--set", f"train.max_update={updates}", "--set", "train.max_epoch=1000"]  # fmt: skip


def plain_command(run_dir: Path, save_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The plain command of a run's command.txt, saving to `save_dir` (its own checkpoints)."""
    command = (run_dir / "command.txt").read_text().strip().splitlines()[-1]
    command = command.replace(str(run_dir / "checkpoints"), str(save_dir))
    env_part, _, fairseq_part = command.partition(" fairseq-train ")
    env = dict(os.environ, **dict(item.split("=", 1) for item in shlex.split(env_part)))
    return [sys.executable, "-m", "fairseq_cli.train", *shlex.split(fairseq_part)], env


def pairs(name: str, first: tuple[str, callable], second: tuple[str, callable], repeats: int) -> list[float]:
    """Alternate the two measurements `repeats` times; print each pair and the medians; return the ratios."""
    ratios = []
    a_times, b_times = [], []
    for repeat in range(repeats):
        a, b = first[1](repeat), second[1](repeat)
        a_times.append(a)
        b_times.append(b)
        ratios.append(b / a)
        print(f"  {name} pair {repeat + 1}: {first[0]} {a:.2f} s | {second[0]} {b:.2f} s | ratio {b / a:.3f}", flush=True)
    print(f"  {name}: median {first[0]} {statistics.median(a_times):.2f} s, {second[0]} "
          f"{statistics.median(b_times):.2f} s, ratio {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f})", flush=True)  # fmt: skip
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/demo/preln_nowarmup.yaml")
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--import-repeats", type=int, default=5)
    parser.add_argument("--skip-long", action="store_true", help="only the import and the 1-update measurements")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_startup."))
    print(f"machine: {cpu_model()}; load before: {load()}", flush=True)

    print("1. import fairseq_cli.train in a fresh process", flush=True)
    python = [sys.executable, "-c"]
    pairs("import", ("plain", lambda r: timed([*python, PLAIN_IMPORT])),
          ("prelnx entry", lambda r: timed([*python, ENTRY_IMPORT])), args.import_repeats)

    for updates, label in ((1, "2. a 1-update training"), (args.updates, f"3. a {args.updates}-update training")):
        if updates != 1 and args.skip_long:
            continue
        print(f"{label} ({args.config}): the plain command vs prelnx train, whole process", flush=True)
        probe = work / f"probe{updates}"
        timed(prelnx_train(args.config, updates, probe))  # also prepares the data and writes command.txt
        argv, env = plain_command(probe, work / "unused")

        def plain(repeat: int, argv=argv, env=env, updates=updates) -> float:
            save = work / f"plain{updates}-{repeat}"
            return timed([a.replace(str(work / "unused"), str(save)) for a in argv], env)

        def prelnx(repeat: int, updates=updates) -> float:
            return timed(prelnx_train(args.config, updates, work / f"prelnx{updates}-{repeat}"))

        pairs(f"{updates} update(s)", ("plain", plain), ("prelnx train", prelnx), args.repeats)
    print(f"load after: {load()}; work folder {work} (delete it when done)", flush=True)


if __name__ == "__main__":
    main()
