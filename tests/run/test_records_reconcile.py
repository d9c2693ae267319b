"""records, reconcile, status, lock, datacheck: fast unit tests (no training)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prelnx.data.check import DataDamaged, check_binarized, check_split, sentence_count
from prelnx.launch.watch import Watch
from prelnx.records.lock import RunLock, RunLocked, is_locked, owner_alive
from prelnx.records.outcome import Signal
from prelnx.records.grain import Grain
from prelnx.records.reconcile import read_log, reconcile_rows
from prelnx import child_report
from prelnx.records.metrics import EpochRows, is_bad_loss
from prelnx.exits import STATUS_EXIT
from prelnx.records.status import read_status, write_status


def record(tag: str, **values) -> str:
    """fairseq's JSON line of a record (values as it formats them), then the child's event of it (as
    launch/fairseq_entry.py reports it): the rows come from the event."""
    formatted = {k: v if k == "epoch" else str(v) for k, v in values.items()}
    update = values.get("num_updates", values.get(f"{tag}_num_updates"))
    return (f"2026-01-01 00:00:00 | INFO | {tag} | {json.dumps(formatted)}\n"
            + child_report.line(child_report.Stats(tag, formatted, update)).rstrip("\n"))


# records.py -------------------------------------------------------------------------------------------------------
def test_a_record_reported_by_the_child_keeps_fairseqs_rounding_with_numbers_as_numbers():
    event = child_report.parse(record("valid", epoch=1, valid_loss=3.5, valid_num_updates=10).splitlines()[1])
    assert event == child_report.Stats("valid", {"epoch": 1, "valid_loss": 3.5, "valid_num_updates": 10.0}, 10)
    assert child_report.Stats("valid", {"valid_loss": "3.142", "note": "x", "ppl": "inf"}, 3).stats == {
        "valid_loss": 3.142, "note": "x", "ppl": float("inf")}
    assert is_bad_loss(float("nan"), None) and is_bad_loss(12.0, 10.0) and not is_bad_loss(9.0, 10.0)


def test_an_epoch_row_joins_valid_and_train_summaries():
    rows = EpochRows()
    assert rows.add("train_inner", {"num_updates": 5.0, "lr": 0.1}, 5) is None
    assert rows.add("valid", {"epoch": 1, "valid_loss": 3.0, "valid_num_updates": 8.0}, 8) is None
    row = rows.add("train", {"epoch": 1, "train_loss": 4.0, "train_num_updates": 8.0, "train_lr": 0.1}, 8)
    assert row["epoch"] == 1 and row["num_updates"] == 8 and row["valid_loss"] == 3.0 and row["train_loss"] == 4.0
    assert rows.add("valid_bleu_subset", {"epoch": 2}, 9) is None and rows.pending_row() is None  # an unknown tag


# reconcile.py -----------------------------------------------------------------------------------------------------
def test_rows_from_the_log_keep_the_latest_attempt_of_an_epoch(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        record("valid", epoch=1, valid_loss=5.0, valid_num_updates=4), record("train", epoch=1, train_loss=6.0, train_num_updates=4),
        record("valid", epoch=2, valid_loss=4.5, valid_num_updates=8),  # killed before the train summary
        "prelnx: resuming fairseq",
        record("valid", epoch=2, valid_loss=4.0, valid_num_updates=8), record("train", epoch=2, train_loss=5.0, train_num_updates=8),
    ]) + "\n")  # fmt: skip
    rows, _ = read_log(log)
    assert [(r["epoch"], r["valid_loss"], r["train_loss"]) for r in rows] == [(1, 5.0, 6.0), (2, 4.0, 5.0)]


def test_the_watch_reads_no_line_past_a_divergence_even_of_a_child_that_has_exited(tmp_path):
    """prelnx's divergence decision is the first one in the log, and no row after it is recorded, however far the child
    got before prelnx read its log (launch/watch.py)."""
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        record("train_inner", epoch=1, loss=float("nan"), num_updates=3),
        record("valid", epoch=1, valid_loss=float("nan"), valid_num_updates=4),
        record("train", epoch=1, train_loss=float("nan"), train_num_updates=4),
    ]) + "\n")  # fmt: skip
    (tmp_path / "run").mkdir()
    watch = Watch(tmp_path / "run", Grain.EPOCH, [], lambda event: None, None, {})
    with subprocess.Popen(["true"]) as ended:
        ended.wait()
        watch.follow(ended, log, 0)
    assert watch.divergence is not None and (watch.divergence.signal, watch.divergence.update) == (Signal.TRAIN_LOSS, 3)
    assert watch.rows == [] and not (tmp_path / "run" / "metrics.jsonl").exists()


def test_reconcile_prefers_saved_rows_rebuilds_missing_ones_and_drops_rows_past_the_checkpoint():
    saved = [{"epoch": 1, "num_updates": 4, "valid_loss": 5.0}, {"epoch": 4, "num_updates": 16, "valid_loss": 3.0}]
    logged = [{"epoch": e, "num_updates": 4 * e, "valid_loss": 6.0 - e} for e in (1, 2)]
    result = reconcile_rows(saved, logged, Grain.EPOCH, completed_epochs=3, checkpoint_update=12)
    assert [r["epoch"] for r in result.rows] == [1, 2]
    assert result.rows[0]["valid_loss"] == 5.0  # prelnx's own row wins
    assert result.recovered == [2] and result.lost == [3] and result.dropped == [4]
    assert result.describe() == ["epochs 2 were missing from metrics.jsonl; rebuilt from train.log",
                                 "epochs 4 are past the last checkpoint; they will be trained again",
                                 "the metrics of epochs 3 were lost (trained, but in no record)"]  # fmt: skip
    assert reconcile_rows(saved[:1], [], Grain.EPOCH, completed_epochs=1, checkpoint_update=4).describe() == []


# status.py --------------------------------------------------------------------------------------------------------
def test_status_round_trip_and_exit_codes(tmp_path):
    write_status(tmp_path, "diverged", reason="nan", update=7, epochs=2)
    status = read_status(tmp_path)
    assert status["status"] == "diverged" and status["update"] == 7 and status["epochs"] == 2
    assert {s: int(STATUS_EXIT[s]) for s in ("finished", "failed", "diverged", "interrupted", "running")} == {
        "finished": 0, "failed": 1, "diverged": 3, "interrupted": 130, "running": 5}
    (tmp_path / "status.json").write_text("{broken")
    assert read_status(tmp_path) == {}
    (tmp_path / "status.json").write_text("[1, 2]")  # JSON, but not a record
    assert read_status(tmp_path) == {} and read_status(tmp_path / "no such run") == {}


# lock.py ----------------------------------------------------------------------------------------------------------
def test_a_held_lock_is_refused_with_the_owner_and_released_by_the_kernel(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from prelnx.records.lock import RunLock; "
        f"RunLock(Path({str(tmp_path)!r})).acquire(); print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert is_locked(tmp_path) and owner_alive(tmp_path)  # owner_alive reads the pid, probes no lock
        with pytest.raises(RunLocked, match=f"pid {holder.pid}"):
            RunLock(tmp_path).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert not owner_alive(tmp_path)  # the pid in the file is gone (prelnx status then says interrupted)
    assert not owner_alive(tmp_path / "never-locked")
    with RunLock(tmp_path):  # the kernel dropped the dead holder's lock: no stale lock
        assert (tmp_path / ".lock").read_text().split() == [str(os.getpid()), socket.gethostname()]


# datacheck.py -----------------------------------------------------------------------------------------------------
def write_split(prefix: Path, sentences: list[list[int]], dtype=np.uint16) -> None:
    """An index and data file in fairseq's mmap format (header, sizes, pointers), as fairseq-preprocess writes."""
    sizes = np.array([len(s) for s in sentences], dtype=np.int32)
    pointers = np.concatenate([[0], np.cumsum(sizes[:-1]) * np.dtype(dtype).itemsize]).astype(np.int64)
    code = {np.uint16: 8, np.int32: 4}[dtype]
    header = b"MMIDIDX\x00\x00" + (1).to_bytes(8, "little") + bytes([code]) + len(sizes).to_bytes(8, "little")
    prefix.with_name(prefix.name + ".idx").write_bytes(header + sizes.tobytes() + pointers.tobytes())
    prefix.with_name(prefix.name + ".bin").write_bytes(np.concatenate(sentences).astype(dtype).tobytes())


def test_the_data_check_names_a_truncated_bin_and_an_index_past_the_dictionary(tmp_path):
    for lang in ("src", "tgt"):
        (tmp_path / f"dict.{lang}.txt").write_text("".join(f"w{i} 1\n" for i in range(6)))  # 4 + 6 = 10 ids
        write_split(tmp_path / f"train.src-tgt.{lang}", [[4, 5, 2], [9, 2]])
    check_binarized(tmp_path, "src", "tgt")
    assert sentence_count(tmp_path / "train.src-tgt.src") == 2
    with pytest.raises(DataDamaged, match="dictionary has only 9 entries"):
        check_split(tmp_path / "train.src-tgt.tgt", vocabulary=9)
    data = tmp_path / "train.src-tgt.src.bin"
    data.write_bytes(data.read_bytes()[:4])
    with pytest.raises(DataDamaged, match=rf"{data}: 4 bytes, but its index .* describes 10: the file is truncated"):
        check_binarized(tmp_path, "src", "tgt")
