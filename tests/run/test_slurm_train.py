"""`prelnx train --executor slurm`: one run as the tasks of one Slurm job, on a real (one-node, local) cluster.

The proof of the distributed semantics across Slurm tasks: 2 tasks x max_tokens 512, meeting through fairseq's
Slurm rendezvous, train exactly as 1 process with update_freq 2. A cancelled job is resumed by the re-run; a
request the partition can never meet is reported and cancelled. Skipped with the reason where no cluster starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prelnx.config.load import load_config
from prelnx.records.checkpoints import checkpoint_info, load_checkpoint
from prelnx.records.metrics import read_metrics
from prelnx.launch.local import train
from tests.helpers import FAR_EPOCHS, logged, processes_mentioning, run_until_it_trains_past
from tests.run.test_data_parallel import NO_DROPOUT, inner_losses
from tests.slurm_cluster import slurm  # noqa: F401 (the fixture)

# one worker runs every test of the cluster (pytest -n: --dist loadgroup), so two never share or race it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]


def train_on_slurm(config: Path, run_dir: Path, partition: str, *extra: str, cpus: int = 2) -> list[str]:
    """`prelnx train --executor slurm`, one CPU per task of a 2-task run (`cpus`: the run's in all)."""
    return [sys.executable, "-m", "prelnx.cli", "train", "--config", str(config), "--run-dir", str(run_dir),
            "--executor", "slurm", "--partition", partition, "--cpus-per-run", str(cpus), "--time-min", "10",
            *extra]  # fmt: skip


def test_two_slurm_tasks_train_exactly_as_one_process_accumulating_two_batches(slurm, tiny_config_file, tmp_path):
    common = {"max_epoch": 2, "log_interval": 1, "threads": 1, "max_tokens": 512}
    two = tiny_config_file(model=NO_DROPOUT, train={**common, "processes": 2})
    done = subprocess.run(train_on_slurm(two, tmp_path / "two", slurm), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "submitted Slurm job" in done.stdout and "epoch 2" in done.stdout, done.stdout  # rank 0's progress
    one, _ = load_config(tiny_config_file(model=NO_DROPOUT, train={**common, "update_freq": 2}))
    assert train(one, run_dir=tmp_path / "one").status == "finished"

    command = (tmp_path / "two" / "command.txt").read_text()
    assert "srun --nodes 1 --ntasks-per-node 2 fairseq-train" in command and "--distributed-port" in command
    assert "torchrun" not in command
    losses_two, losses_one = inner_losses(tmp_path / "two"), inner_losses(tmp_path / "one")
    print("per-update losses, 2 Slurm tasks:", losses_two, "\n1 process, update_freq 2:", losses_one)
    assert len(losses_two) == len(losses_one) >= 4
    assert max(abs(float(a) - float(b)) for a, b in zip(losses_two, losses_one)) < 1e-4
    a = load_checkpoint(tmp_path / "two" / "checkpoints" / "checkpoint_last.pt")["model"]
    b = load_checkpoint(tmp_path / "one" / "checkpoints" / "checkpoint_last.pt")["model"]
    assert max((a[key].float() - b[key].float()).abs().max().item() for key in a) < 1e-4
    assert json.loads((tmp_path / "two" / "status.json").read_text())["status"] == "finished"


def _job_id(other_than: str | None = None) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
        out = [job for job in out if job != other_than]
        if out:
            return out[0]
        time.sleep(0.2)
    raise AssertionError("no Slurm job")


def test_a_cancelled_job_ends_unfinished_and_the_rerun_resumes(slurm, tiny_config_file, tmp_path):
    """A 2-task job cancelled after an epoch: its client ends unfinished, Slurm ends every task's fairseq, and the
    re-run resumes. Then that re-run's client is killed while its job trains on: a further re-run is refused,
    naming the job that still trains this run (one job's worth of training for both)."""
    run_dir, epochs = tmp_path / "run", FAR_EPOCHS  # neither job can end before it is cancelled
    config = tiny_config_file(train={"max_epoch": epochs, "threads": 1, "processes": 2})
    client = subprocess.Popen(train_on_slurm(config, run_dir, slurm), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)  # fmt: skip
    job = _job_id()
    deadline = time.monotonic() + 240
    while not read_metrics(run_dir):
        assert time.monotonic() < deadline and client.poll() is None, "the first epoch never ended"
        time.sleep(0.2)
    subprocess.run(["scancel", job], check=True)
    output, _ = client.communicate(timeout=120)
    assert client.returncode != 0, output
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] in ("interrupted", "failed") and status["reason"], status
    assert status["epochs"] < epochs, status
    _wait_until_no_fairseq(run_dir)  # Slurm ends every task's fairseq

    cancelled_at = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch
    still_training: list[str] = []

    def kill_the_client(client: subprocess.Popen) -> None:  # the submitting side dies; the job goes on
        still_training.append(_job_id(other_than=job))
        client.kill()

    try:
        said = run_until_it_trains_past(train_on_slurm(config, run_dir, slurm), run_dir, cancelled_at,
                                        tmp_path / "rerun.txt", stop=kill_the_client)  # fmt: skip
        assert "resuming" in said, said[-3000:]
        [job] = still_training
        rerun = subprocess.run(train_on_slurm(config, run_dir, slurm), capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 4, rerun.stdout + rerun.stderr
        assert f"Slurm job {job} still trains this run" in rerun.stderr and f"scancel {job}" in rerun.stderr
        assert "Traceback" not in rerun.stderr
    finally:
        for job in still_training:
            subprocess.run(["scancel", job])
    _wait_until_no_fairseq(run_dir)
    deadline = time.monotonic() + 60
    while subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split():
        assert time.monotonic() < deadline, "the cancelled job never left Slurm's queue"
        time.sleep(0.5)  # the next test finds the queue empty, as after a client that followed its job to the end
    recorded = [row["epoch"] for row in read_metrics(run_dir)]
    assert recorded == list(range(1, len(recorded) + 1)) and recorded[-1] > cancelled_at  # each epoch once, trained on


def _wait_until_no_fairseq(run_dir: Path) -> None:
    deadline = time.monotonic() + 60
    while processes_mentioning(str(run_dir / "checkpoints")):
        assert time.monotonic() < deadline, "fairseq outlived its cancelled job"
        time.sleep(0.5)


def test_a_request_the_partition_can_never_meet_is_reported_and_cancelled(slurm, tiny_config_file, tmp_path):
    config = tiny_config_file(train={"max_epoch": 1, "processes": 2})
    command = train_on_slurm(config, tmp_path / "run", slurm)
    command[command.index("--cpus-per-run") + 1] = "128"  # 64 per task
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "can never start: PartitionConfig" in done.stderr, done.stdout + done.stderr
    assert "--cpus-per-run" in done.stderr and "Traceback" not in done.stderr
    assert subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip() == ""
    assert not (tmp_path / "run" / "status.json").exists()  # only rank 0 writes the run dir, and none ran


def test_several_nodes_without_slurm_and_slurm_options_without_it_are_refused(tiny_config_file, tmp_path):
    config = tiny_config_file(train={"nodes": 2})
    base = [sys.executable, "-m", "prelnx.cli", "train", "--config", str(config), "--run-dir", str(tmp_path / "r")]
    done = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "train.nodes: 2" in done.stderr and "--executor slurm" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "r").exists()
    config = tiny_config_file()
    done = subprocess.run([*base[:5], str(config), *base[6:], "--cpus-per-run", "2"], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--cpus-per-run: Slurm option(s); add --executor slurm" in done.stderr, done.stderr


def test_without_slurm_the_submission_is_refused_in_one_line(tiny_config_file, tmp_path):
    import os

    command = train_on_slurm(tiny_config_file(train={"max_epoch": 1}), tmp_path / "r", "cpu")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": str(tmp_path)})  # no sbatch, srun, squeue here  # fmt: skip
    assert done.returncode == 2 and "--executor slurm: the job could not be submitted" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def fake_squeue(folder: Path, answers: list[tuple[int, str] | tuple[int, str, str]]) -> str:
    """A `squeue` program that gives `answers` (exit code, output[, error output: a failure's default is a timeout])
    in turn, the last one for ever, and logs its arguments; returns a PATH that finds it first."""
    folder.mkdir(exist_ok=True)
    (folder / "answers.json").write_text(json.dumps(answers))
    script = folder / "squeue"
    script.write_text(f"""#!{sys.executable}
import json, sys
from pathlib import Path
folder = Path({str(folder)!r})
calls = folder / "calls.txt"
n = len(calls.read_text().splitlines()) if calls.exists() else 0
calls.open("a").write(" ".join(sys.argv[1:]) + "\\n")
answers = json.loads((folder / "answers.json").read_text())
code, out, *err = answers[min(n, len(answers) - 1)]
sys.stdout.write(out)
timeout = "slurm_load_jobs error: Socket timed out on send/recv operation\\n"
sys.stderr.write(err[0] if err else "" if code == 0 else timeout)
sys.exit(code)
""")
    script.chmod(0o755)
    return f"{folder}:{os.environ.get('PATH', '')}"


def a_job(tmp_path: Path, job_id: str = "7"):
    """What follow() reads of a submitit job: its id and rank 0's log and result paths."""
    from types import SimpleNamespace

    (tmp_path / f"{job_id}_0_log.out").write_text("starting tiny\nsubmitit INFO (x) - Starting with JobEnvironment\n")
    paths = SimpleNamespace(stdout=tmp_path / f"{job_id}_0_log.out", stderr=tmp_path / f"{job_id}_0_log.err",
                            result_pickle=tmp_path / f"{job_id}_0_result.pkl", folder=tmp_path)  # fmt: skip
    return SimpleNamespace(job_id=job_id, paths=paths, task=lambda rank: SimpleNamespace(paths=paths))


def test_waiting_survives_squeue_not_answering_and_reports_a_job_that_ended_without_rank_0(tmp_path, monkeypatch):
    """The one watcher (launch/slurm_watch.py) asks a real program: squeue failing is no end of the job."""
    from prelnx.launch import slurm_job
    from prelnx.launch.slurm_task import SlurmRequest
    from prelnx.launch.slurm_watch import QueueWatcher

    monkeypatch.setenv("PATH", fake_squeue(tmp_path / "bin", [(1, ""), (0, "7|RUNNING|None\n"), (1, ""),
                                                              (0, "7|CANCELLED|None\n")]))  # fmt: skip
    with logged() as lines:
        message, code = slurm_job.follow(a_job(tmp_path), SlurmRequest(1, 2, 1), poll_s=0.01,
                                         watcher=QueueWatcher(delay_s=0))  # fmt: skip
    assert lines == ["starting tiny", "Slurm job 7: running"]  # rank 0's lines, not submitit's
    assert code == 1 and "ended (cancelled) before rank 0 returned" in message
    calls = (tmp_path / "bin" / "calls.txt").read_text().splitlines()
    assert len(calls) == 4 and all(call.endswith("-j 7") for call in calls), calls

    monkeypatch.setenv("PATH", fake_squeue(tmp_path / "bin2", [(1, "")]))  # squeue never answers
    monkeypatch.setattr(slurm_job, "UNANSWERED_S", 0.3)
    message, code = slurm_job.follow(a_job(tmp_path, "8"), SlurmRequest(1, 1, 1), poll_s=0.01,
                                     watcher=QueueWatcher(delay_s=0))  # fmt: skip
    assert code == 1 and "squeue has not answered" in message and "Slurm job 8 may still run" in message


def test_one_watcher_asks_squeue_once_for_all_its_jobs_and_a_job_it_no_longer_lists_has_ended(tmp_path, monkeypatch):
    from prelnx.launch.slurm_watch import QueueWatcher

    monkeypatch.setenv("PATH", fake_squeue(tmp_path / "bin", [(0, "12_0|RUNNING|None\n12_1|PENDING|Priority\n"
                                                                  "13|PENDING|PartitionConfig\n"), (0, "12_1|RUNNING|None\n")]))  # fmt: skip
    watcher = QueueWatcher()  # submitit's pace: the first look asks Slurm, the next ones (within 2 s) read its answer
    for job_id in ("12_0", "12_1", "13"):
        watcher.register_job(job_id)
    looks = [watcher.look(job_id) for job_id in ("12_0", "12_1", "13")]
    assert [(look.state, look.active, look.never_starts) for look in looks] == [
        ("RUNNING", True, False), ("PENDING", True, False), ("PENDING", True, True)]
    calls = (tmp_path / "bin" / "calls.txt").read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith("-j 12,13"), calls  # one call for the three jobs
    watcher.update()  # the next round: a job squeue no longer lists has ended
    assert [watcher.get_state(job_id, mode="cache") for job_id in ("12_0", "12_1", "13")] == ["ENDED", "RUNNING", "ENDED"]
    watcher.update()
    calls = (tmp_path / "bin" / "calls.txt").read_text().splitlines()
    assert len(calls) == 3 and calls[2].endswith("-j 12"), calls  # ended jobs are asked about no more


def test_a_job_squeue_refuses_as_an_invalid_job_id_has_ended(tmp_path, monkeypatch):
    """squeue forgets an ended job after a while, and then refuses its id (exit 1, "Invalid job id specified")
    instead of listing nothing: the job has ended, where a failure of another kind (a timeout) says nothing."""
    from prelnx.launch.slurm_watch import Look, QueueWatcher

    refused = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
    monkeypatch.setenv("PATH", fake_squeue(tmp_path / "bin", [(0, "21|RUNNING|None\n"), (1, ""), refused]))
    watcher = QueueWatcher()
    watcher.register_job("21")
    assert watcher.look("21") == Look("RUNNING", "None") and watcher.look("21").active
    answered = watcher.answered
    watcher.update()  # a timeout: no news, the job still runs
    assert watcher.get_state("21", mode="cache") == "RUNNING" and not watcher.is_done("21", mode="cache")
    assert watcher.answered == answered
    watcher.update()  # the refusal: an answer, and the job has ended
    assert watcher.get_state("21", mode="cache") == "ENDED" and watcher.is_done("21", mode="cache")
    assert watcher.answered > answered and not watcher.look("21").active
    watcher.update()
    calls = (tmp_path / "bin" / "calls.txt").read_text().splitlines()
    assert len(calls) == 3 and all(call.endswith("-j 21") for call in calls), calls  # an ended job is asked no more
