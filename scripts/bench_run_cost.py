"""Where a Multi30k run's wall time goes, and what validation BLEU costs a seed (issue 48).

    python scripts/bench_run_cost.py records docs/results/cpu_multi30k/runs
    nice -n 10 python scripts/bench_run_cost.py measure [--updates 46] [--repeats 2] [--set data.path=...]

`records DIR`: reads committed run dirs (no training). Per run and summarised: run-minutes per seed (mean, median,
by seed), the split of wall time the records allow and the CPU of machine.json. What a run dir records: each
metrics.jsonl row's `wall_seconds` (prelnx's clock since it started following the child, taken when the row's
validation was logged; records/rows.py), machine.json's attempt start and status.json's end time (1-second clocks).
So a run splits into: start-up + the first interval; intervals between validations (a checkpoint save, the updates,
one validation); the extra of an interval that crosses an epoch (a new epoch's batches); and the tail (prelnx's
set-up before it follows the child, the last save, the process's exit). Updates, validation and checkpoints inside
an interval cannot be told apart from these files: fairseq's train.log says it (`train_wall`, "writing took"), and
records/raw_data.py's RUN_FILES does not keep train.log.

`measure`: paired tiny real trainings (`prelnx train` as a subprocess, whole-process wall time, one thread each,
serialised, arms alternated A B C A B C) of configs/cpu/multi30k_base.yaml at Study A's settings with validation
BLEU off (A, Study A's choice), on (B, the base config's greedy BLEU) and off at half the validation cadence (C).
From each run's train.log: the seconds in updates, in checkpoint writing, and the rest of fairseq's clock
(validation); the rest of the process's wall is start-up and exit. Checks that the valid losses are identical
between A and B (BLEU changes nothing trained) and at C's validated updates. Prints numbers; times are as loaded
as the machine is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from prelnx.records.machine_record import read_machines
from prelnx.records.metrics import read_metrics
from prelnx.records.rows import parse_record
from prelnx.records.status import read_status

CONFIG = "configs/cpu/multi30k_base.yaml"
STUDY_A = ("eval.bleu.enabled=false", "eval.every_updates=23")  # configs/sweeps/cpu_multi30k.yaml's `set`
SAVED = re.compile(r"writing took ([0-9.]+) seconds")
NOT_SPLIT = ("updates vs validation vs checkpoint save inside an interval (train.log, which says it, is not in "
             "records/raw_data.py's RUN_FILES); forward vs backward vs optimizer step (one fairseq meter, train_wall)")


# ---- records ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunCost:
    """One run dir's wall time as its records split it (seconds; None where the records do not tell)."""

    name: str
    seed: int | None
    cpu: str
    validations: int
    updates: int
    wall: float  # the last row's wall_seconds: start of following the child -> the last validation logged
    first: float  # the first row's wall_seconds: start-up, the first interval's updates and validation
    intervals: tuple[float, ...]  # between validations within an epoch
    crossings: tuple[float, ...]  # between validations in different epochs
    clock: float | None  # status.json's time - the last attempt's start (None: resumed, or no clock)

    @property
    def tail(self) -> float | None:
        return None if self.clock is None else self.clock - self.wall

    @property
    def total(self) -> float:
        """The run's wall time: the attempt's clock where known, else the last row's wall_seconds."""
        return self.clock if self.clock is not None else self.wall


def _seed(run_dir: Path) -> int | None:
    match = re.search(r"seed-(\d+)$", run_dir.name)
    return int(match.group(1)) if match else None


def _clock(run_dir: Path) -> float | None:
    machines, status = read_machines(run_dir), read_status(run_dir) or {}
    if len(machines) != 1 or not isinstance(status.get("time"), str):
        return None  # a resumed run's wall_seconds spans attempts; the clock of its last one does not
    start, end = (dt.datetime.fromisoformat(t) for t in (machines[0].time, status["time"]))
    return (end - start).total_seconds()


def run_cost(run_dir: Path) -> RunCost | None:
    """None for a run dir without a timed metrics row."""
    rows = [r for r in read_metrics(run_dir) if isinstance(r.get("wall_seconds"), (int, float))]
    if not rows:
        return None
    walls = [float(r["wall_seconds"]) for r in rows]
    steps = list(zip(rows, rows[1:]))
    gaps = [later["wall_seconds"] - earlier["wall_seconds"] for earlier, later in steps]
    within = tuple(g for g, (a, b) in zip(gaps, steps) if a["epoch"] == b["epoch"])
    across = tuple(g for g, (a, b) in zip(gaps, steps) if a["epoch"] != b["epoch"])
    machines = read_machines(run_dir)
    return RunCost(run_dir.name, _seed(run_dir), machines[-1].kind if machines else "unknown (no machine.json)",
                   len(rows), int(rows[-1]["num_updates"]), walls[-1], walls[0], within, across, _clock(run_dir))


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(costs: list[RunCost]) -> dict:
    """The numbers `records` prints, in seconds (minutes where named so)."""
    minutes = [c.total / 60 for c in costs]
    interval = _median([g for c in costs for g in c.intervals])
    crossing = _median([g for c in costs for g in c.crossings])
    tails = [c.tail for c in costs if c.tail is not None]
    by_seed: dict[int | None, list[float]] = {}
    for cost in costs:
        by_seed.setdefault(cost.seed, []).append(cost.total / 60)
    return {
        "runs": len(costs),
        "minutes_mean": statistics.mean(minutes) if minutes else None,
        "minutes_median": _median(minutes),
        "minutes_total": sum(minutes),
        "by_seed": {seed: (len(v), statistics.mean(v)) for seed, v in sorted(by_seed.items(), key=lambda i: i[0] or 0)},
        "interval_median": interval,
        "crossing_extra_median": None if crossing is None or interval is None else crossing - interval,
        "startup_median": None if interval is None else _median([c.first - interval for c in costs]),
        "tail_median": _median(tails),
        "cpus": sorted({c.cpu for c in costs}),
    }


def records(directory: Path) -> list[RunCost]:
    costs = []
    for run_dir in sorted(p for p in directory.iterdir() if p.is_dir()):
        cost = run_cost(run_dir)
        if cost is not None:
            costs.append(cost)
    return costs


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def print_records(directory: Path) -> None:
    costs = records(directory)
    print(f"{'run':<55} {'cpu':<28} {'vals':>4} {'upd':>4} {'minutes':>7} {'first':>6} {'interval':>8} "
          f"{'crossing':>8} {'tail':>5}")  # fmt: skip
    for c in costs:
        print(f"{c.name:<55} {c.cpu[:28]:<28} {c.validations:>4} {c.updates:>4} {c.total / 60:>7.2f} {c.first:>6.1f} "
              f"{_s(_median(list(c.intervals))):>8} {_s(_median(list(c.crossings))):>8} {_s(c.tail):>5}")
    s = summarise(costs)
    if not costs:
        print(f"no run dir with a timed metrics row under {directory}")
        return
    print(f"\n{s['runs']} runs; CPU (machine.json): {', '.join(s['cpus'])}")
    print(f"run-minutes per seed: mean {s['minutes_mean']:.2f}, median {s['minutes_median']:.2f}; "
          f"{s['minutes_total']:.1f} run-minutes in all")
    print("by seed (runs, mean minutes): " + "; ".join(f"seed {k}: {n}, {m:.2f}" for k, (n, m) in s["by_seed"].items()))
    print(f"split (medians over runs, seconds): start-up beyond one interval {_s(s['startup_median'])}; one interval "
          f"(checkpoint save + updates + one validation) {_s(s['interval_median'])}; extra of an interval crossing an "
          f"epoch {_s(s['crossing_extra_median'])}; tail (set-up before following the child, last save, exit) "
          f"{_s(s['tail_median'])}")
    print(f"not split from these records: {NOT_SPLIT}")


# ---- measure ---------------------------------------------------------------------------------------------------

ARMS = {  # name -> overrides on top of Study A's
    "A bleu off, every 23": (),
    "B bleu on (greedy), every 23": ("eval.bleu.enabled=true",),
    "C bleu off, every 46": ("eval.every_updates=46",),
}


@dataclass(frozen=True)
class Measured:
    arm: str
    wall: float  # the whole `prelnx train` process
    updates_s: float  # fairseq's train_wall: the updates (forward, backward, optimizer step)
    saves_s: float  # checkpoint writing, as fairseq logs it
    fairseq_s: float  # fairseq's own clock at its last train record (integer seconds)
    updates: int
    valid_losses: dict[int, float]

    @property
    def validation_s(self) -> float:
        return self.fairseq_s - self.updates_s - self.saves_s

    @property
    def outside_s(self) -> float:
        """Start-up (imports, data, model) and exit, outside fairseq's clock."""
        return self.wall - self.fairseq_s


def log_split(log_text: str) -> tuple[float, float, float, int]:
    """(seconds in updates, in checkpoint writing, fairseq's wall clock, updates) from a train.log."""
    trains = [r for line in log_text.splitlines() if (p := parse_record(line)) and p[0] == "train" for r in [p[1]]]
    if not trains:
        raise RuntimeError("no train record in the log")
    saves = sum(float(m.group(1)) for m in SAVED.finditer(log_text))
    # the epoch summary's keys are prefixed: train_train_wall (its updates), train_wall (fairseq's clock); whole seconds
    return (sum(float(r["train_train_wall"]) for r in trains), saves, float(trains[-1]["train_wall"]),
            int(trains[-1]["train_num_updates"]))


def train_once(arm: str, run_dir: Path, updates: int, extra: list[str]) -> Measured:
    sets = [*STUDY_A, *ARMS[arm], f"train.max_update={updates}", "train.threads=1", *extra]
    argv = [sys.executable, "-m", "prelnx.cli", "train", "--config", CONFIG, "--run-dir", str(run_dir)]
    argv += [a for text in sets for a in ("--set", text)]
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{arm}: prelnx train failed ({done.returncode})\n{done.stdout[-3000:]}")
    updates_s, saves_s, fairseq_s, count = log_split((run_dir / "train.log").read_text())
    losses = {int(r["num_updates"]): r["valid_loss"] for r in read_metrics(run_dir)}
    return Measured(arm, wall, updates_s, saves_s, fairseq_s, count, losses)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(updates: int, repeats: int, extra: list[str]) -> list[Measured]:
    work = Path(tempfile.mkdtemp(prefix="bench_run_cost."))
    results = []
    for repeat in range(repeats):
        for index, arm in enumerate(ARMS):
            result = train_once(arm, work / f"{repeat}-{index}", updates, extra)
            results.append(result)
            print(f"  round {repeat + 1} {arm:<30} wall {result.wall:6.1f} s | updates {result.updates_s:5.1f} s "
                  f"({result.updates_s / result.updates:.3f} s/update) | saves {result.saves_s:4.1f} s | validation "
                  f"{result.validation_s:5.1f} s | outside fairseq's clock {result.outside_s:5.1f} s | valid losses "
                  f"{result.valid_losses}", flush=True)  # fmt: skip
    print(f"work folder {work} (delete it when done)")
    return results


def report_measure(results: list[Measured], updates: int) -> None:
    by_arm = {arm: [r for r in results if r.arm == arm] for arm in ARMS}
    a, b, c = (by_arm[arm] for arm in ARMS)
    median = lambda rs, f: statistics.median(f(r) for r in rs)  # noqa: E731
    print(f"\nmedians over {len(a)} rounds, {updates} updates a run:")
    for arm, rs in by_arm.items():
        print(f"  {arm:<30} wall {median(rs, lambda r: r.wall):6.1f} s, per update "
              f"{median(rs, lambda r: r.updates_s / r.updates):.3f} s, validation {median(rs, lambda r: r.validation_s):5.1f} s "
              f"over {len(rs[0].valid_losses)} validations")  # fmt: skip
    bleu = [(rb.wall - ra.wall) / len(ra.valid_losses) for ra, rb in zip(a, b)]
    cadence = [(ra.wall - rc.wall) / (len(ra.valid_losses) - len(rc.valid_losses)) for ra, rc in zip(a, c)]
    print(f"  BLEU adds per validation (B - A, pair by pair, whole wall): {', '.join(f'{x:.1f}' for x in bleu)} s")
    print(f"  one loss-only validation + save costs (A - C): {', '.join(f'{x:.1f}' for x in cadence)} s")
    same_ab = all(ra.valid_losses == rb.valid_losses for ra, rb in zip(a, b))
    same_c = all(rc.valid_losses.items() <= ra.valid_losses.items() for ra, rc in zip(a, c))
    same_rounds = all(r.valid_losses == a[0].valid_losses for r in a + b)
    print(f"  valid losses identical: BLEU on vs off {same_ab}; cadence 46 at its updates {same_c}; "
          f"across rounds {same_rounds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("records", help="run-minutes and their split from committed run dirs (no training)")
    rec.add_argument("directory", type=Path, help="a folder of run dirs, e.g. docs/results/cpu_multi30k/runs")
    mea = commands.add_parser("measure", help="paired tiny trainings: BLEU at validation off / on, cadence halved")
    mea.add_argument("--updates", type=int, default=46, help="train.max_update of each run (a multiple of 46)")
    mea.add_argument("--repeats", type=int, default=2, help="rounds of A B C")
    mea.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more overrides, e.g. data.path")
    args = parser.parse_args()
    if args.command == "records":
        print_records(args.directory)
        return
    print(f"CPU: {read_cpu()}; load before: {_load()}", flush=True)
    results = measure(args.updates, args.repeats, args.set)
    report_measure(results, args.updates)
    print(f"load after: {_load()}")


def read_cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
