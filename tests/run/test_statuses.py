"""Run statuses are one enum (records/outcome.py RunStatus) with "done" defined once: what a re-run of `prelnx train`
skips, what a Slurm sweep keeps of a job that ended without returning, and what status.json holds (plain words)."""

from __future__ import annotations

import json

import pytest

from prelnx.config.load import load_config
from prelnx.launch.local import check_run_dir
from prelnx.records.outcome import Outcome, RunStatus
from prelnx.records.run_config import write_run_config
from prelnx.exits import STATUS_EXIT
from prelnx.records.status import read_status, recorded_status, write_status
from prelnx.sweep.executors import _ended_without_result

RECORDED = [RunStatus.RUNNING, RunStatus.FINISHED, RunStatus.DIVERGED, RunStatus.FAILED, RunStatus.INTERRUPTED]


@pytest.mark.parametrize("status", RECORDED)
def test_a_run_is_done_when_it_finished_or_diverged_and_every_reader_agrees(status, tiny_config_file, tmp_path):
    config, _ = load_config(tiny_config_file())
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_run_config(run_dir, config)
    write_status(run_dir, status, update=20)
    assert json.loads((run_dir / "status.json").read_text())["status"] == status.value  # the plain word
    assert recorded_status(run_dir) is status and Outcome(status.value, 20).status is status
    done = status in (RunStatus.FINISHED, RunStatus.DIVERGED)
    assert status.done is done and status.ended is (done or status is RunStatus.FAILED)
    assert check_run_dir(run_dir, config, force=False).done is done  # a re-run of prelnx train skips it
    kept = _ended_without_result("13_0", None, run_dir)  # its Slurm job ended without returning
    assert kept is (status if done else RunStatus.FAILED) and (read_status(run_dir)["update"] == 20)
    assert status.value in STATUS_EXIT  # every status has its exit code in the one table (prelnx/exits.py)


def test_a_run_without_a_status_or_with_one_no_prelnx_wrote_is_pending(tmp_path):
    assert recorded_status(tmp_path) is RunStatus.PENDING and not RunStatus.PENDING.done
    (tmp_path / "status.json").write_text('{"status": "exploded"}')
    assert recorded_status(tmp_path) is RunStatus.PENDING
