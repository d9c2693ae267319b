"""Slurm, asked in one place: the partition's CPUs (a task's default: its CPUs per node shared by the node's tasks, up
to 8), which of squeue's states and reasons mean a job is still on its way or can never start (then it is cancelled
and reported with the reason, not waited for in silence), cancelling it. The one watcher of jobs is slurm_watch.py.
"""

from __future__ import annotations

import subprocess

# squeue reasons that no amount of waiting changes (Slurm's documentation of job reason codes).
NEVER_STARTS = {"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount",
                "InvalidQOS", "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "AssocMaxCpuPerJobLimit",
                "MaxCpuPerAccount", "ReqNodeNotAvail"}  # fmt: skip


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def partition_cpus(partition: str | None) -> int | None:
    """CPUs per node of `partition` (the default partition if None), from sinfo; None if Slurm does not say."""
    out = _run(["sinfo", "-h", "-o", "%P %c"] + (["-p", partition] if partition else []))
    if not out:
        return None
    for line in out.splitlines():
        name, _, cpus = line.partition(" ")
        if partition is None and not name.endswith("*"):
            continue
        digits = cpus.strip().rstrip("+")
        if digits.isdigit():
            return int(digits)
    return None


DEFAULT_CPUS_CAP = 8  # the CPUs a task gets when none are asked: the partition's per node, shared, up to this


def default_cpus_per_run(partition: str | None, tasks_per_node: int = 1) -> int:
    """CPUs for each of `tasks_per_node` tasks: the partition's CPUs per node shared by them, up to DEFAULT_CPUS_CAP."""
    cpus = partition_cpus(partition)
    return max(1, min(DEFAULT_CPUS_CAP, cpus // tasks_per_node)) if cpus else DEFAULT_CPUS_CAP


UNKNOWN = "UNKNOWN"  # squeue has not answered yet (the controller busy, a timeout): not a reason to think the job ended
ENDED = "ENDED"  # squeue no longer lists the job: it ended (how, Slurm no longer says)
# squeue states of a job that has not ended (a requeued job passes through REQUEUED and PENDING again)
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING",
          "SUSPENDED", "STAGE_OUT", "SIGNALING", "RESV_DEL_HOLD", "PREEMPTED", UNKNOWN}  # fmt: skip


def never_starts(reason: str | None) -> bool:
    return bool(reason) and any(reason.startswith(code) for code in NEVER_STARTS)


def cancel(job_id: str) -> None:
    _run(["scancel", str(job_id)])
