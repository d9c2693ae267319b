"""The report's Machines section (issue 48): each run's CPU (machine.json) read back, each kind's mean beside the
pooled one when an arm's seeds trained on several kinds; nothing added for raw data from before machine.json."""

from __future__ import annotations

import json

from prelnx.records.machine_record import MachineRecord, read_machines, record_machine
from prelnx.report.machines import machines_section
from tests.report.runs import Sweep


def _on(run_dir, cpu: str, bf16: tuple[str, ...]) -> None:
    entry = MachineRecord(cpu, bf16, 2, "cpu", "2026-12-04T18:00:00")
    (run_dir / "machine.json").write_text(json.dumps({"attempts": [entry.__dict__ | {"bf16": list(bf16)}]}))


def test_an_arm_trained_on_two_cpu_kinds_shows_each_kinds_mean_beside_the_pooled_one(tmp_path):
    sweep = Sweep(tmp_path / "sweep")
    sweep.seeds("pre", 0, [6.0, 6.2, 7.0, 7.2])
    sweep.seeds("post", 0, [8.0, 8.4])
    folder = sweep.save()
    assert machines_section(folder) == []  # raw data from before machine.json: the report is unchanged
    for point in sweep.points:
        seed = point["overrides"]["train.seed"]
        _on(folder / point["name"], "AMD EPYC", ("avx512_bf16",)) if seed <= 2 else _on(folder / point["name"],
                                                                                             "Intel Xeon", ())
    lines = machines_section(folder)
    header = next(line for line in lines if line.startswith("| arm |"))
    assert header == "| arm | AMD EPYC (avx512_bf16) | Intel Xeon (no native bf16) | pooled |"
    pre = next(line for line in lines if "model.layout=pre" in line)
    assert pre.endswith("| 6.100 (2) | 7.100 (2) | 6.600 (4) |")  # seeds 1-2 on one kind, 3-4 on the other
    post = next(line for line in lines if "model.layout=post" in line)
    assert post.endswith("| 8.200 (2) | - | 8.200 (2) |")
    assert "Runs per CPU kind: AMD EPYC (avx512_bf16): 4; Intel Xeon (no native bf16): 2." in lines


def test_one_kind_is_one_line_and_each_attempt_is_kept(tmp_path):
    sweep = Sweep(tmp_path / "sweep")
    sweep.seeds("pre", 0, [6.0, 6.2])
    folder = sweep.save()
    for point in sweep.points:
        record_machine(folder / point["name"], "cpu")
    record_machine(folder / sweep.points[0]["name"], "cpu")  # resumed: a second attempt
    assert len(read_machines(folder / sweep.points[0]["name"])) == 2
    [line] = [line for line in machines_section(folder) if line.startswith("Every run")]
    assert line.startswith("Every run trained on one CPU kind: ")


def test_a_run_resumed_on_another_cpu_counts_for_the_kind_that_finished_it(tmp_path):
    sweep = Sweep(tmp_path / "sweep")
    sweep.seeds("pre", 0, [6.0, 7.0])
    folder = sweep.save()
    first, second = (folder / point["name"] for point in sweep.points)
    _on(first, "Intel Xeon", ())
    _on(second, "Intel Xeon", ())
    record = json.loads((first / "machine.json").read_text())  # seed 1 resumed and finished on another kind
    later = MachineRecord("AMD EPYC", ("avx512_bf16",), 2, "cpu", "2026-12-04T19:00:00")
    record["attempts"].append(later.__dict__ | {"bf16": ["avx512_bf16"]})
    (first / "machine.json").write_text(json.dumps(record))
    lines = machines_section(folder)
    assert next(line for line in lines if line.startswith("| arm |")) == \
        "| arm | AMD EPYC (avx512_bf16) | Intel Xeon (no native bf16) | pooled |"  # fmt: skip
    assert next(line for line in lines if "model.layout=pre" in line).endswith("| 6.000 (1) | 7.000 (1) | 6.500 (2) |")
