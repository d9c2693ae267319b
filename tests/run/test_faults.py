"""Faults, done for real: parent killed, two writers, full disk, planted checkpoints, damaged data, bad YAML.

Each test checks what the run dir says afterwards against what was really trained (the checkpoints).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from prelnx import child_report
from prelnx.config.load import ConfigError, load_config
from prelnx.records.checkpoints import checkpoint_info
from prelnx.records.diagnostics import read_diagnostics
from prelnx.records.metrics import read_metrics
from prelnx.launch.prepare import ensure_data
from prelnx.launch.local import train
from tests.helpers import FAR_EPOCHS, epochs_recorded, processes_mentioning, rendered, scalar_steps, stop_after_an_epoch
from tests.run.test_diagnostics import EVERY, SHARPNESS, diagnosed, measured

pytestmark = pytest.mark.slow
QUIET = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}


def prelnx(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prelnx.cli", *args], timeout=300, **QUIET, **kwargs)


def start_prelnx(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "prelnx.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip


def wait_for(condition, what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def status_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def assert_records_match_checkpoint(run_dir: Path, epochs: int | None = None, status: str = "finished") -> None:
    """metrics.jsonl, TensorBoard and status.json say what the last checkpoint trained: `epochs` epochs (default:
    however many it holds), each once."""
    info = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt")
    rows = read_metrics(run_dir)
    epochs = info.epoch if epochs is None else epochs
    assert info.epoch == epochs
    assert [row["epoch"] for row in rows] == list(range(1, epochs + 1))
    assert rows[-1]["num_updates"] == info.update
    assert scalar_steps(run_dir, "valid/loss") == list(range(1, epochs + 1))  # each epoch once
    status, status_name = status_of(run_dir), status
    assert status["status"] == status_name and status["epochs"] == epochs
    if status_name == "finished":
        assert status["update"] == info.update
    else:  # stopped: the updates it trained, and apart the checkpoint a resume starts from
        assert status["update"] >= info.update and status["checkpoint"] == {"epoch": info.epoch, "update": info.update}


def test_parent_killed_takes_the_child_with_it_and_the_rerun_reconciles(tiny_config_file, tmp_path):
    """prelnx killed (SIGKILL, so no end-of-attempt reconciliation) past its second epoch, with diagnostics on: its
    fairseq child dies with it and the status stays "running"; the re-run resumes from the checkpoint and is stopped
    after the epoch it trains next (budgets it cannot reach: FAR_EPOCHS). The records say what the checkpoint
    trained, each epoch once, and the diagnostics rows are those of the measured updates up to the checkpoint, each
    once, in the file and in TensorBoard (the check tests/run/test_diagnostics.py leaves to this training)."""
    run_dir = tmp_path / "run"
    config_file = tiny_config_file(train=diagnosed(max_epoch=FAR_EPOCHS))  # neither attempt can end before its stop
    parent = start_prelnx("train", "--config", str(config_file), "--run-dir", str(run_dir))
    wait_for(lambda: [epoch for epoch in epochs_recorded(run_dir) if epoch > 1], "the second epoch")  # trains on
    children = processes_mentioning(str(run_dir / "checkpoints"))
    assert children, "no fairseq child found"
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    wait_for(lambda: not processes_mentioning(str(run_dir / "checkpoints")), "the child to die", timeout=10)
    assert status_of(run_dir)["status"] == "running"  # the parent could not say more: the re-run will

    killed_at = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch
    config, _ = load_config(config_file)
    lines: list[str] = []
    resumed = train(config, run_dir=run_dir, on_event=stop_after_an_epoch(lines, past=killed_at))
    assert resumed.status == "interrupted" and lines[0].startswith("resuming"), lines
    assert f"from epoch {killed_at}" in lines[0], lines
    assert_records_match_checkpoint(run_dir, status="interrupted")
    assert checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch > killed_at

    checkpoint = status_of(run_dir)["checkpoint"]["update"]
    assert checkpoint >= 3 * read_metrics(run_dir)[0]["num_updates"]  # two epochs before the kill, one after
    updates = [row["num_updates"] for row in read_diagnostics(run_dir)]
    assert updates == measured(checkpoint)
    assert scalar_steps(run_dir, "diagnostics/grad_norm/encoder.0.ffn") == [u for u in updates if u % EVERY == 0]
    assert scalar_steps(run_dir, "diagnostics/lambda_c") == [u for u in updates if u % SHARPNESS == 0]
    # every record train.log holds up to the checkpoint (both attempts) is in the file once
    events = [child_report.parse(line) for line in (run_dir / "train.log").read_text().splitlines()]
    logged = {event.row["num_updates"] for event in events if isinstance(event, child_report.Diagnosed)}
    assert sorted(u for u in logged if u <= checkpoint) == updates


def test_epochs_the_parent_missed_are_rebuilt_from_fairseqs_own_log(tiny_run):
    config_path, run_dir = tiny_run  # a finished 2-epoch run
    config, _ = load_config(config_path)
    complete = read_metrics(run_dir)
    # What a parent killed after epoch 1 leaves while its child trains on: one row, one TB step, "running".
    (run_dir / "metrics.jsonl").write_text(json.dumps(complete[0]) + "\n")
    for events in run_dir.glob("events.out.tfevents.*"):
        events.unlink()
    (run_dir / "status.json").write_text(json.dumps({"status": "running", "update": complete[0]["num_updates"]}))

    lines: list[str] = []
    assert train(config, run_dir=run_dir, on_event=rendered(lines.append)).status == "finished"
    assert any("rebuilt from train.log" in line for line in lines), lines
    rows = read_metrics(run_dir)
    assert [r["valid_loss"] for r in rows] == [r["valid_loss"] for r in complete]
    assert_records_match_checkpoint(run_dir, 2)


def test_a_second_train_on_a_locked_run_dir_is_refused_with_the_pid(tiny_config_file, tmp_path):
    """Two writers on one run dir: the second `prelnx train` is refused with the first one's pid, one trainer only.
    Then SIGTERM (a scheduler's or `kill`'s stop) to the first, once it has trained an epoch, stops its fairseq child
    and leaves a resumable run: exit code 130, status interrupted, no child left."""
    run_dir = tmp_path / "run"
    config = tiny_config_file(train={"max_epoch": FAR_EPOCHS})  # still training when the second one starts
    first = start_prelnx("train", "--config", str(config), "--run-dir", str(run_dir))
    try:
        wait_for(lambda: (run_dir / "status.json").is_file(), "the first run to start")
        second = prelnx("train", "--config", str(config), "--run-dir", str(run_dir))
        assert second.returncode == 4, second.stderr
        assert f"pid {first.pid}" in second.stderr and "Traceback" not in second.stderr
        assert len(processes_mentioning(str(run_dir / "checkpoints"))) == 1  # one trainer only
        wait_for(lambda: read_metrics(run_dir) and first.poll() is None, "the first epoch")
    finally:
        first.send_signal(signal.SIGTERM)
        code = first.wait(timeout=90)
    assert code == 130
    assert status_of(run_dir)["status"] == "interrupted"
    time.sleep(1)
    assert processes_mentioning(str(run_dir / "checkpoints")) == []


def test_two_sweeps_on_one_folder_train_every_point_once(tiny_config_file, tmp_path):
    config = tiny_config_file(train={"max_epoch": 2})
    out = tmp_path / "sweep"
    # two points: each sweep (one run at a time) finds the one the other is training locked and takes the other
    args = ("sweep", "--config", str(config), "--grid", "optimizer.lr=0.001,0.002", "--out", str(out))
    first = subprocess.Popen([sys.executable, "-m", "prelnx.cli", *args], **QUIET)
    time.sleep(0.5)
    second = subprocess.Popen([sys.executable, "-m", "prelnx.cli", *args], **QUIET)
    outputs = [process.communicate(timeout=600) for process in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outputs
    runs = sorted(p for p in out.iterdir() if (p / "config.yaml").is_file())
    assert len(runs) == 2
    for run in runs:
        log = (run / "train.log").read_text()
        assert log.count("prelnx: starting fairseq") == 1 and "prelnx: resuming" not in log, run
        assert scalar_steps(run, "valid/loss") == [1, 2]
        assert status_of(run)["status"] == "finished"
    said = outputs[0][0] + outputs[1][0]
    assert "running elsewhere" in said or "already finished" in said


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()

    def make(size: str) -> Path:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], **QUIET)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'mount failed'}); needs root")
        return mount

    yield make
    subprocess.run(["umount", "-l", str(mount)], **QUIET)


def test_a_full_disk_is_a_failed_status_with_the_path_and_no_truncated_checkpoint(tiny_config_file, small_disk):
    disk = small_disk("600k")  # room for the logs and records, not for a checkpoint of the tiny model
    run_dir = disk / "run"
    done = prelnx("train", "--config", str(tiny_config_file()), "--run-dir", str(run_dir))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    status = status_of(run_dir)
    assert status["status"] == "failed" and status["reason"].startswith("no space left on device: "), status
    assert str(disk) in status["reason"], status
    assert not list((run_dir / "checkpoints").glob("*.tmp"))
    for name in ("checkpoint_last.pt", "checkpoint_best.pt", "checkpoint1.pt"):
        path = run_dir / "checkpoints" / name
        if path.exists():
            checkpoint_info(path)  # complete, or not there at all

    # A new run on the full disk: one message, no traceback.
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            handle.write(b"\0" * (1 << 20))
        except OSError:
            pass
    again = prelnx("train", "--config", str(tiny_config_file()), "--run-dir", str(disk / "other"))
    assert again.returncode in (1, 2) and "no space left on device" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr


def planted_checkpoint(path: Path, marker: Path) -> None:
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": Payload()}, path)


def test_a_planted_checkpoint_is_refused_everywhere_without_running_it(tiny_run, tmp_path):
    config_path, run_dir = tiny_run  # a finished 2-epoch run
    marker = tmp_path / "pwned"
    checkpoints = run_dir / "checkpoints"
    for name in ("checkpoint_last.pt", "checkpoint_best.pt", "checkpoint2.pt"):
        planted_checkpoint(checkpoints / name, marker)
    (run_dir / "status.json").write_text(json.dumps({"status": "interrupted", "update": 1}))

    attempts = {
        "resume": prelnx("train", "--config", str(config_path), "--run-dir", str(run_dir)),
        "evaluate": prelnx("evaluate", str(run_dir), "--checkpoint", "last"),
        "evaluate --average-last": prelnx("evaluate", str(run_dir), "--average-last", "1"),
        "grads": prelnx("grads", "--config", str(config_path), "--out", str(tmp_path / "g"), "--seeds", "1",
                        "--depths", "2", "--checkpoint", str(checkpoints / "checkpoint_best.pt")),
    }
    for what, done in attempts.items():
        assert done.returncode == 2, (what, done.stdout, done.stderr)
        assert "refused" in done.stderr and "posix.system" in done.stderr, (what, done.stderr)
        assert "weights_only=False" not in done.stderr and "Traceback" not in done.stderr, (what, done.stderr)
        assert done.stderr.count("\n") == 1, (what, done.stderr)  # one message
    assert not marker.exists()


def test_a_damaged_last_checkpoint_falls_back_to_the_newest_intact_one(tiny_run):
    config_path, run_dir = tiny_run  # a finished 2-epoch run, a checkpoint per epoch kept
    config, _ = load_config(config_path)
    (run_dir / "checkpoints" / "checkpoint2.pt").unlink()  # as if killed while epoch 2 was being saved
    last = run_dir / "checkpoints" / "checkpoint_last.pt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    (run_dir / "status.json").write_text(json.dumps({"status": "interrupted", "update": 1}))
    lines: list[str] = []
    assert train(config, run_dir=run_dir, on_event=rendered(lines.append)).status == "finished"
    assert any("checkpoint_last.pt" in line and "checkpoint1.pt" in line for line in lines), lines
    assert list((run_dir / "checkpoints").glob("checkpoint_last.pt.damaged-*"))
    assert_records_match_checkpoint(run_dir, 2)


def _binarized_copy(tiny_config_file, tmp_path: Path) -> tuple[Path, Path]:
    config, _ = load_config(tiny_config_file())
    data = tmp_path / "data"
    shutil.copytree(ensure_data(config), data)
    return data, tiny_config_file(data={"path": str(data)})


def test_a_truncated_bin_is_named_before_training(tiny_config_file, tmp_path):
    data, config = _binarized_copy(tiny_config_file, tmp_path)
    damaged = data / "train.src-tgt.src.bin"
    damaged.write_bytes(damaged.read_bytes()[:100])
    done = prelnx("train", "--config", str(config), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 2 and str(damaged) in done.stderr and "truncated" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


def test_a_dictionary_shorter_than_the_data_is_named_before_training(tiny_config_file, tmp_path):
    data, config = _binarized_copy(tiny_config_file, tmp_path)
    dictionary = data / "dict.tgt.txt"
    dictionary.write_text("".join(dictionary.read_text().splitlines(keepends=True)[:5]))
    done = prelnx("train", "--config", str(config), "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 2 and "dictionary has only 9 entries" in done.stderr, done.stderr
    assert ".tgt.bin" in done.stderr


def test_duplicated_yaml_keys_name_the_file_the_key_and_both_lines(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("optimizer:\n  lr: 0.001\n  lr: 0.5\nschedule:\n  decay: constant\noptimizer:\n  name: sgd\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert f"{path}: key `optimizer.lr` appears twice (lines 2 and 3)" in message
    assert f"{path}: key `optimizer` appears twice (lines 1 and 6)" in message


def test_a_config_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=rf"{path}: not UTF-8 text"):
        load_config(path)


@pytest.mark.parametrize("name", ["../../escape", "/tmp/absolute-run"])
def test_a_run_name_cannot_leave_the_runs_folder(tiny_config_file, tmp_path, name):
    config = tiny_config_file(name=name)
    done = prelnx("train", "--config", str(config), "--dry-run", cwd=tmp_path)
    assert done.returncode == 2 and "outside runs/" in done.stderr and "--run-dir" in done.stderr, done.stderr
    explicit = prelnx("train", "--config", str(config), "--dry-run", "--run-dir", str(tmp_path / "mine"), cwd=tmp_path)
    assert explicit.returncode == 0, explicit.stderr
