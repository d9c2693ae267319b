"""A training's records come from the child's events (prelnx/child_report.py `Stats`, reported by the plugin's
stats_events.py from fairseq's own progress bar), never from fairseq's log lines: the session's real tiny training,
its log split into the events and the rest, read back by the parent's Watch and by the reconciliation."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from prelnx import child_report
from prelnx.launch.watch import Watch
from prelnx.records.grain import Grain
from prelnx.records.metrics import read_metrics
from prelnx.records.reconcile import read_log

FAIRSEQ_LINE = re.compile(r"\| (\w+) \| (\{.*\})$")  # the test's own reading of fairseq's JSON line, to compare
KEPT = ("wall_seconds", "from_log")  # what the parent adds to a row: when it saw it, and how


def split_log(run_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the child's event lines only, every other line only) of the run's train.log, as two logs."""
    lines = (run_dir / "train.log").read_text().splitlines(keepends=True)
    events, text = tmp_path / "events.log", tmp_path / "text.log"
    events.write_text("".join(line for line in lines if child_report.parse(line) is not None))
    text.write_text("".join(line for line in lines if child_report.parse(line) is None))
    return events, text


def watched_rows(log: Path, tmp_path: Path, name: str) -> list[dict]:
    """The rows the parent's Watch records following `log` (its child already exited)."""
    run_dir = tmp_path / name
    run_dir.mkdir()
    watch = Watch(run_dir, Grain.EPOCH, [], lambda event: None, None, {})
    with subprocess.Popen(["true"]) as done:
        done.wait()
        watch.follow(done, log, 0)
    return read_metrics(run_dir)


def values(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in KEPT} for row in rows]


def test_each_record_fairseq_logs_is_reported_once_as_it_logged_it_at_its_update(finished_tiny_run):
    logged, reported = [], []
    for line in (finished_tiny_run / "train.log").read_text().splitlines():
        if isinstance(event := child_report.parse(line), child_report.Stats):
            reported.append(event)
        elif found := FAIRSEQ_LINE.search(line):
            logged.append((found.group(1), json.loads(found.group(2))))
    assert [tag for tag, _ in logged] == [event.tag for event in reported]
    assert {"train_inner", "valid", "train"} <= {event.tag for event in reported}
    for (tag, record), event in zip(logged, reported):
        assert event.stats == child_report.Stats(tag, record, None).stats  # fairseq's rounding, as numbers
        update = record.get("num_updates", record.get(f"{tag}_num_updates"))
        assert event.step == int(update), (tag, record, event)  # the update fairseq logged it at


def test_the_rows_come_from_the_events_alone(finished_tiny_run, tmp_path):
    recorded = read_metrics(finished_tiny_run)
    events, text = split_log(finished_tiny_run, tmp_path)
    assert [row["epoch"] for row in recorded] == [1, 2]
    # the parent following the child: the events alone give every row; fairseq's lines alone give none
    assert values(watched_rows(events, tmp_path, "events")) == values(recorded)
    assert watched_rows(text, tmp_path, "text") == []
    # the reconciliation rebuilding rows after a restart, likewise
    assert values(read_log(events)[0]) == values(recorded)
    assert read_log(text) == ([], [])


def test_a_diagnostics_row_measured_again_by_a_resumed_attempt_replaces_the_first(tmp_path):
    """train.log holds every attempt: an update measured before a kill and again after the resume (from an earlier
    checkpoint) is one diagnostics row, the later attempt's, as a metrics row is (ChildRecords.take)."""
    log = tmp_path / "train.log"
    first = [child_report.Diagnosed({"num_updates": update, "grad_norm": 1.0}) for update in (1, 2, 3)]
    again = [child_report.Diagnosed({"num_updates": update, "grad_norm": 2.0}) for update in (3, 4)]
    log.write_text("".join(child_report.line(event) for event in [*first, *again]) + "not an event\n")
    kept = [(row["num_updates"], row["grad_norm"]) for row in read_log(log)[1]]
    assert kept == [(1, 1.0), (2, 1.0), (3, 2.0), (4, 2.0)]
