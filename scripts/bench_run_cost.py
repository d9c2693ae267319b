"""Where a Multi30k run's wall time goes, and what validation BLEU costs a seed (issue 48).

    python scripts/bench_run_cost.py records docs/results/cpu_multi30k/runs
    nice -n 10 python scripts/bench_run_cost.py measure [--updates 46] [--repeats 2] [--set data.path=...]

`records DIR`: reads committed run dirs (no training). Per run and summarised: run-minutes per seed (mean, median,
by seed), the split of wall time the records allow and the CPU of machine.json. What a run dir records: each
metrics.jsonl row's `wall_seconds` (prelnx's clock since it started following the child, taken when the row's
validation was logged; records/metrics.py), machine.json's attempt start and status.json's end time (1-second clocks).
So a run splits into: start-up + the first interval; intervals between validations (a checkpoint save, the updates,
one validation); the extra of an interval that crosses an epoch (a new epoch's batches); and the tail (prelnx's
set-up before it follows the child, the last save, the process's exit). Updates, validation and checkpoints inside
an interval cannot be told apart from these files: fairseq's train.log says it (`train_wall`, "writing took"), and
records/raw_data.py's RUN_FILES does not keep train.log.

`measure`: paired tiny real trainings (`prelnx train` as a subprocess, whole-process wall time, one thread each,
serialised, arms alternated A B C A B C) of configs/cpu/multi30k_base.yaml at Study A's settings with validation
BLEU off (A, Study A's choice), on (B, the base config's greedy BLEU) and off at half the validation cadence (C).
From each run's train.log: the seconds in updates (fairseq's train_wall), in validation (by the log lines' clock),
in checkpoint writing and the rest of fairseq's clock; the rest of the process's wall is start-up and exit. Update-
equivalents (seconds over the run's seconds per update) carry over to a machine loaded differently. Checks that the
valid losses are identical between A and B (BLEU changes nothing trained) and at C's validated updates. Prints
numbers; times are as loaded as the machine is.
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

from prelnx import child_report
from prelnx.records.machine_record import read_machines
from prelnx.records.metrics import read_metrics
from prelnx.records.status import read_status

CONFIG = "configs/cpu/multi30k_base.yaml"
STUDY_A = ("eval.bleu.enabled=false", "eval.every_updates=23")  # configs/sweeps/cpu_multi30k.yaml's `set`
SAVED = re.compile(r"writing took ([0-9.]+) seconds")
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \|")  # fairseq's log line clock
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
class LogSplit:
    """What a train.log says of a training's time (seconds; fairseq's clocks count whole seconds)."""

    updates_s: float  # the epoch summaries' train_wall: in updates (forward, backward, optimizer step)
    saves_s: float  # checkpoint writing, as fairseq logs it
    validation_s: float  # "begin validation" -> the `valid` record, by the log lines' clock
    fairseq_s: float  # fairseq's own clock (from the trainer's start) at its last epoch summary
    updates: int


@dataclass(frozen=True)
class Measured:
    arm: str
    wall: float  # the whole `prelnx train` process
    log: LogSplit
    valid_losses: dict[int, float]

    @property
    def per_update(self) -> float:
        return self.log.updates_s / self.log.updates

    @property
    def other_s(self) -> float:
        """Inside fairseq's clock, neither updates, validation nor saves: batches between updates, epoch set-up."""
        return self.log.fairseq_s - self.log.updates_s - self.log.saves_s - self.log.validation_s

    @property
    def outside_s(self) -> float:
        """Start-up (imports, data, model) and exit, outside fairseq's clock."""
        return self.wall - self.log.fairseq_s


def log_split(log_text: str) -> LogSplit:
    events = map(child_report.parse, log_text.splitlines())  # the child's records; fairseq's clock from its lines
    trains = [event.stats for event in events if isinstance(event, child_report.Stats) and event.tag == "train"]
    if not trains:
        raise RuntimeError("no train record in the log")
    validation, began = 0.0, None
    for line in log_text.splitlines():
        stamp = STAMP.match(line)
        if stamp and "begin validation on" in line:
            began = dt.datetime.fromisoformat(stamp.group(1))
        elif stamp and began is not None and "| valid |" in line:
            validation += (dt.datetime.fromisoformat(stamp.group(1)) - began).total_seconds()
            began = None
    # the epoch summary's keys are prefixed: train_train_wall (its updates), train_wall (fairseq's clock)
    return LogSplit(sum(float(r["train_train_wall"]) for r in trains),
                    sum(float(m.group(1)) for m in SAVED.finditer(log_text)), validation,
                    float(trains[-1]["train_wall"]), int(trains[-1]["train_num_updates"]))  # fmt: skip


def train_once(arm: str, run_dir: Path, updates: int, extra: list[str]) -> float:
    """Train one arm's run in `run_dir`; the whole process's wall seconds."""
    sets = [*STUDY_A, *ARMS[arm], f"train.max_update={updates}", "train.threads=1", *extra]
    argv = [sys.executable, "-m", "prelnx.cli", "train", "--config", CONFIG, "--run-dir", str(run_dir)]
    argv += [a for text in sets for a in ("--set", text)]
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{arm}: prelnx train failed ({done.returncode})\n{done.stdout[-3000:]}")
    return wall


def read_measured(arm: str, run_dir: Path, wall: float) -> Measured:
    losses = {int(r["num_updates"]): r["valid_loss"] for r in read_metrics(run_dir)}
    return Measured(arm, wall, log_split((run_dir / "train.log").read_text()), losses)


def show(round_: int, r: Measured) -> None:
    print(f"  round {round_} {r.arm:<28} wall {r.wall:5.1f} s | updates {r.log.updates_s:4.0f} s ({r.per_update:.3f} "
          f"s/update) | validation {r.log.validation_s:4.0f} s | saves {r.log.saves_s:4.1f} s | other in fairseq "
          f"{r.other_s:4.1f} s | start-up and exit {r.outside_s:4.1f} s | valid losses {r.valid_losses}", flush=True)


def measure(updates: int, repeats: int, extra: list[str]) -> Path:
    """Train the rounds (A B C each) in a new work folder, whose walls.json keeps each run's wall seconds."""
    work = Path(tempfile.mkdtemp(prefix="bench_run_cost."))
    walls: dict[str, list] = {}
    for repeat in range(repeats):
        for index, arm in enumerate(ARMS):
            run_dir = work / f"{repeat}-{index}"
            walls[run_dir.name] = [arm, train_once(arm, run_dir, updates, extra)]
            (work / "walls.json").write_text(json.dumps(walls, indent=1))
            show(repeat + 1, read_measured(arm, run_dir, walls[run_dir.name][1]))
    return work


def reread(work: Path) -> list[list[Measured]]:
    """The rounds of a work folder, each [A, B, C] (from walls.json and each run's train.log and metrics.jsonl)."""
    runs = {name: read_measured(arm, work / name, wall) for name, (arm, wall) in json.loads(
        (work / "walls.json").read_text()).items()}  # fmt: skip
    rounds = sorted({int(name.split("-")[0]) for name in runs})
    return [[runs[f"{r}-{i}"] for i in range(len(ARMS))] for r in rounds if all(f"{r}-{i}" in runs for i in range(3))]


def _list(values: list[float], digits: int = 1) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


def report_measure(rounds: list[list[Measured]]) -> None:
    """Pair by pair: what BLEU adds to a validation (B - A) and what one loss-only validation and its save cost
    (A - C), in seconds by fairseq's clocks (the updates' noise left out) and in update-equivalents (seconds over that
    run's seconds per update: a ratio that carries over to a machine loaded differently); the whole walls too."""
    n = len(rounds[0][0].valid_losses)
    gap = n - len(rounds[0][2].valid_losses)
    bleu = [(b.log.validation_s - a.log.validation_s) / n for a, b, _ in rounds]
    loss_only = [(a.log.validation_s + a.log.saves_s - c.log.validation_s - c.log.saves_s) / gap for a, _, c in rounds]
    print(f"\n{len(rounds)} rounds; A validates {n} times, C {n - gap}")
    for index, arm in enumerate(ARMS):
        runs = [r[index] for r in rounds]
        print(f"  {arm:<28} median wall {statistics.median(r.wall for r in runs):5.1f} s, seconds per update "
              f"{_list([r.per_update for r in runs], 3)}, "
              f"validation seconds {_list([r.log.validation_s for r in runs], 0)}")
    print(f"  BLEU adds per validation (B - A): {_list(bleu)} s = "
          f"{_list([x / a.per_update for x, (a, _, _) in zip(bleu, rounds)])} update-equivalents; "
          f"whole wall per validation {_list([(b.wall - a.wall) / n for a, b, _ in rounds])} s")
    print(f"  one loss-only validation + its save (A - C): {_list(loss_only)} s = "
          f"{_list([x / a.per_update for x, (a, _, _) in zip(loss_only, rounds)])} update-equivalents; "
          f"whole wall {_list([(a.wall - c.wall) / gap for a, _, c in rounds])} s")
    same_ab = all(a.valid_losses == b.valid_losses for a, b, _ in rounds)
    same_c = all(c.valid_losses.items() <= a.valid_losses.items() for a, _, c in rounds)
    same_rounds = all(r.valid_losses == rounds[0][0].valid_losses for a, b, _ in rounds for r in (a, b))
    print(f"  valid losses identical (as logged, 3 decimals): BLEU on vs off {same_ab}; C at its validated updates "
          f"{same_c}; across rounds {same_rounds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("records", help="run-minutes and their split from committed run dirs (no training)")
    rec.add_argument("directory", type=Path, help="a folder of run dirs, e.g. docs/results/cpu_multi30k/runs")
    mea = commands.add_parser("measure", help="paired tiny trainings: BLEU at validation off / on, cadence halved")
    mea.add_argument("--updates", type=int, default=46, help="train.max_update of each run (a multiple of 46)")
    mea.add_argument("--repeats", type=int, default=2, help="rounds of A B C")
    mea.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more overrides, e.g. data.path")
    mea.add_argument("--reread", type=Path, metavar="WORK", help="no training: report a former measure's work folder")
    args = parser.parse_args()
    if args.command == "records":
        print_records(args.directory)
        return
    if args.reread is None:
        print(f"CPU: {read_cpu()}; load before: {_load()}", flush=True)
        work = measure(args.updates, args.repeats, args.set)
        print(f"load after: {_load()}; work folder {work} (delete it when done)")
    rounds = reread(args.reread or work)
    if args.reread is not None:
        for number, runs in enumerate(rounds, 1):
            for run in runs:
                show(number, run)
    report_measure(rounds)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def read_cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
