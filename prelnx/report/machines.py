"""The CPUs a sweep's runs trained on (each run's machine.json, issue 48): a study's seeds may come from several
machines, whose fp32 digits differ. The verdicts pool every seed of an arm; this section shows each CPU kind's mean
final valid loss beside the pooled one, so a reader sees whether a kind stands apart.

An arm here is the sweep's own: a run's grid values (sweep.json's overrides) without its seed.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path

from prelnx.records.machine_record import read_machines
from prelnx.records.results import is_finite, read_index, run_results

UNKNOWN = "not recorded (a run dir written before machine.json)"


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.3f} ({len(values)})" if values else "-"


def machines_section(sweep_dir: Path) -> list[str]:
    """The report's lines: a table of each arm's mean per CPU kind when its runs trained on several, one line when on
    one; none for raw data from before machine.json existed."""
    points = read_index(sweep_dir)["runs"]
    runs = [(point, sweep_dir / point["name"]) for point in points if (sweep_dir / point["name"]).is_dir()]
    if not runs:
        return []
    kinds = {p["name"]: m[-1].kind if (m := read_machines(d)) else UNKNOWN for p, d in runs}  # the finishing attempt
    if set(kinds.values()) == {UNKNOWN}:  # raw data from before machine.json: nothing to say, the report unchanged
        return []
    if len(set(kinds.values())) == 1:
        return ["## Machines", "", f"Every run trained on one CPU kind: {next(iter(kinds.values()))}.", ""]
    by_arm: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for point, run_dir in runs:
        arm = ", ".join(f"{k}={v}" for k, v in point.get("overrides", {}).items() if k != "train.seed") or "the base"
        final = run_results(run_dir).get("final_valid_loss")
        if is_finite(final):
            by_arm[arm][kinds[point["name"]]].append(float(final))
    names = sorted(set(kinds.values()))
    lines = ["## Machines", "",
             "Seeds of one arm trained on different CPU kinds are pooled by every verdict above; per kind, the mean "
             "final valid loss of the arm's finished seeds (their number) beside the pooled mean:", "",
             "| arm | " + " | ".join(names) + " | pooled |", "|---" * (len(names) + 2) + "|"]  # fmt: skip
    for arm, per_kind in by_arm.items():
        pooled = [value for values in per_kind.values() for value in values]
        lines.append(f"| {arm} | " + " | ".join(_mean(per_kind.get(name, [])) for name in names)
                     + f" | {_mean(pooled)} |")  # fmt: skip
    counts = sorted(Counter(kinds.values()).items())
    lines += ["", "Runs per CPU kind: " + "; ".join(f"{kind}: {n}" for kind, n in counts) + ".", ""]
    return lines
