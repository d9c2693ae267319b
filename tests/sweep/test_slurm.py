"""Sweeps on a real (one-node, local) Slurm cluster through submitit: a sweep finishes; a request the partition
can never meet is reported and cancelled instead of waited for. Skipped with the reason where no cluster starts."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm  # noqa: F401 (the fixture)

# one worker runs every test of the cluster (pytest -n: --dist loadgroup), so two never share or race it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]


def sweep(config, out, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prelnx.cli", "sweep", "--config", str(config), "--grid",
                           "optimizer.lr=0.001,0.002", "--out", str(out), "--executor", "slurm", *extra],
                          capture_output=True, text=True, timeout=600, env=env)  # fmt: skip


def logged_squeue(folder: Path) -> dict[str, str]:
    """An environment whose `squeue` logs its arguments to folder/calls.txt, then is Slurm's own."""
    folder.mkdir()
    real = shutil.which("squeue")
    (folder / "squeue").write_text(f'#!/bin/sh\necho "$@" >> {folder / "calls.txt"}\nexec {real} "$@"\n')
    (folder / "squeue").chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def test_a_two_point_sweep_finishes_on_slurm_followed_by_one_watcher(slurm, tiny_config_file, tmp_path):
    started = time.monotonic()
    done = sweep(tiny_config_file(train={"max_epoch": 1}), tmp_path / "s", "--partition", slurm,
                 env=logged_squeue(tmp_path / "bin"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for run in ("lr-0.001", "lr-0.002"):
        assert json.loads((tmp_path / "s" / run / "status.json").read_text())["status"] == "finished"
    # one squeue call at a time for both jobs of the array (its id), at submitit's pace (backing off from 2 s): not a
    # call per job every 2 s (the sweep's tasks call no squeue: they run prelnx train, not a watcher)
    calls = [line.split() for line in (tmp_path / "bin" / "calls.txt").read_text().splitlines()]
    array = calls[0][calls[0].index("-j") + 1]
    print(f"{len(calls)} squeue calls in {time.monotonic() - started:.0f} s: {calls[:2]}")
    assert array.isdigit() and all(call[call.index("-j") + 1] == array for call in calls), calls
    took = time.monotonic() - started  # submitit asks after max(2 s, half the time since the submission), then 60 s
    assert len(calls) <= 4 + math.log(max(took, 4) / 4, 1.5) + took / 60, calls


def test_a_request_the_partition_can_never_meet_is_reported(slurm, tiny_config_file, tmp_path):
    done = sweep(tiny_config_file(train={"max_epoch": 1}), tmp_path / "s", "--partition", slurm,
                 "--cpus-per-run", str((os.cpu_count() or 1) * 4))  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    status = json.loads((tmp_path / "s" / "lr-0.001" / "status.json").read_text())
    assert status["status"] == "failed" and "can never start: PartitionConfig" in status["reason"], status
    queue = subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout
    assert queue.strip() == "", queue  # cancelled, not left pending


def test_a_run_whose_job_was_killed_before_returning_is_recorded_failed_not_waited_for(tmp_path):
    """Without Slurm's accounting, submitit never calls such a job done; the sweep asks squeue instead."""
    from prelnx.records.status import read_status, write_status
    from prelnx.sweep.executors import _ended_without_result

    write_status(tmp_path, "running", update=20)
    assert _ended_without_result("13_0", None, tmp_path) == "failed"
    status = read_status(tmp_path)
    assert status["update"] == 20 and "Slurm job 13_0 left Slurm's queue before the run returned" in status["reason"]
    write_status(tmp_path, "finished", update=30)  # it had ended the run itself: that stands
    assert _ended_without_result("13_0", "CANCELLED", tmp_path) == "finished"


def test_a_sigterm_to_the_sweep_on_slurm_interrupts_it_as_ctrl_c_does(slurm, tiny_config_file, tmp_path):
    """kill (SIGTERM) of `prelnx sweep --executor slurm` while its job trains: exit 130 with the interrupted line,
    as the local executor and Ctrl-C (was: killed silently by the signal, exit -15 / 143, no line), naming the job
    that trains on; the same command run again leaves the run to that job (exit 5 while it trains)."""
    from tests.helpers import FAR_EPOCHS, epochs_recorded

    config = tiny_config_file(train={"max_epoch": FAR_EPOCHS})
    argv = [sys.executable, "-m", "prelnx.cli", "sweep", "--config", str(config), "--grid", "optimizer.lr=0.001",
            "--out", str(tmp_path / "s"), "--executor", "slurm", "--cpus-per-run", "1"]  # fmt: skip
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not epochs_recorded(tmp_path / "s" / "base") and time.monotonic() < deadline:
            assert client.poll() is None, client.stdout.read()
            time.sleep(0.5)
        client.terminate()
        output, _ = client.communicate(timeout=60)
        jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
        again = subprocess.run(argv, capture_output=True, text=True, timeout=300)  # while that job trains
    finally:
        client.kill()
        subprocess.run(["scancel", "--user", "root"], capture_output=True)
    assert client.returncode == 130 and "interrupted" in output, (client.returncode, output)
    # what is true is said: the job trains on, how to follow it and stop it (was: "re-run to resume")
    assert len(jobs) == 1 and f"Slurm jobs {jobs[0]} train on" in output, (jobs, output)
    assert f"`prelnx status {tmp_path / 's'}`" in output and f"`scancel {jobs[0]}`" in output, output
    assert again.returncode == 5 and "[base] running elsewhere" in again.stdout, again  # not trained twice
