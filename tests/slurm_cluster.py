"""A one-node Slurm cluster for the tests, started in a temporary folder (root, Debian's slurmctld/slurmd/munge).

The tests that need it skip with the reason when it cannot start (not root, packages missing: .ci/run installs
them). Ports are chosen free, so a cluster already running on the machine is left alone. Test modules use it
through the `slurm` fixture (import it: `from tests.slurm_cluster import slurm`): one cluster per module.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ensure_munge() -> str | None:
    if shutil.which("munge") and subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
        return None  # munged is up
    if not Path("/etc/munge/munge.key").is_file():
        return "no /etc/munge/munge.key (install munge)"
    for folder in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.chown(folder, "munge", "munge")
    # --force: a socket left by a munged that was killed (not a running one) does not stop it
    done = subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"munged did not start: {done.stderr.strip()}"
    return None


def start(folder: Path) -> tuple[str, dict[str, str]] | str:
    """(partition, environment) of a running cluster, or why none could start."""
    missing = [name for name in DAEMONS if shutil.which(name) is None]
    if missing:
        return f"Slurm is not installed here (missing {', '.join(missing)}; .ci/run installs it)"
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root"
    problem = _ensure_munge()
    if problem:
        return problem
    host = socket.gethostname().split(".")[0]
    (folder / "state").mkdir(parents=True, exist_ok=True)
    (folder / "spool").mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text(f"""ClusterName=prelnxtest
SlurmctldHost={host}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName={host} CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for daemon in ("slurmctld", "slurmd"):
        done = subprocess.run([daemon], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return f"{daemon} did not start: {done.stderr.strip()}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True).stdout.strip()
        if state in ("idle", "mix", "alloc"):
            return "cpu", {"SLURM_CONF": str(conf)}
        time.sleep(0.5)
    return f"the node never became idle (sinfo: {state!r})"


def _processes_of(conf: Path) -> list[int]:
    """Every process of this cluster: its daemons, job steps (slurmstepd) and their tasks carry SLURM_CONF=conf."""
    marker = f"SLURM_CONF={conf}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0") and int(environ.parent.name) != os.getpid():
                found.append(int(environ.parent.name))
        except (OSError, ValueError):
            continue
    return found


def stop(folder: Path, timeout: float = 20.0) -> list[int]:
    """Cancel every job, stop the daemons, and end whatever of the cluster is left (a job step that outlives its
    slurmd); returns the pids that had to be killed. After it, no process of this cluster runs."""
    env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True, timeout=30)
    deadline = time.monotonic() + timeout / 2
    while time.monotonic() < deadline:
        queue = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30)
        if queue.returncode != 0 or not queue.stdout.strip():
            break
        time.sleep(0.3)
    for name in ("slurmd", "slurmctld"):
        pid_file = folder / f"{name}.pid"
        if pid_file.is_file():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass
    deadline = time.monotonic() + timeout / 2
    while _processes_of(folder / "slurm.conf") and time.monotonic() < deadline:
        time.sleep(0.3)
    killed = _processes_of(folder / "slurm.conf")
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return killed


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The partition of a running one-node cluster (SLURM_CONF set for the module); skips with the reason."""
    folder = tmp_path_factory.mktemp("slurm")
    started = start(folder)
    if isinstance(started, str):
        pytest.skip(started)
    partition, env = started
    previous = os.environ.get("SLURM_CONF")
    os.environ.update(env)
    yield partition
    stop(folder)
    if previous is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = previous
