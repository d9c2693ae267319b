"""Slurm, asked in one place: what a job asks for (submitit's parameters, the partition's CPUs), which of squeue's
states and reasons mean a job is still on its way or can never start, and cancelling it. Used by `prelnx train
--executor slurm` and by Slurm sweeps; the one watcher of their jobs is launch/slurm_watch.py.

Defaults fit the partition (`sinfo`): CPUs per task (a sweep's run is one task; `prelnx train --executor slurm`'s
run is nodes x tasks) = the partition's CPUs per node shared by the tasks of a node, up to 8; memory only when asked
(`--mem-gb-per-run`). A pending job whose reason means the request can never be met (the partition's limits, an
invalid account, ...) is cancelled and reported with the reason, instead of waited for in silence.
"""

from __future__ import annotations

import subprocess
from typing import Any

# squeue reasons that no amount of waiting changes (Slurm's documentation of job reason codes).
NEVER_STARTS = {"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount",
                "InvalidQOS", "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "AssocMaxCpuPerJobLimit",
                "MaxCpuPerAccount", "ReqNodeNotAvail"}  # fmt: skip


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
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


def submitit_parameters(name: str, *, cpus_per_task: int, time_min: int, nodes: int = 1, tasks_per_node: int = 1,
                        gpus_per_node: int = 0, mem_gb: int | None = None, partition: str | None = None,
                        array_parallelism: int | None = None) -> dict[str, Any]:  # fmt: skip
    """submitit's parameters of a job (or of each job of an array)."""
    found: dict[str, Any] = {"name": name, "nodes": nodes, "tasks_per_node": tasks_per_node,
                             "cpus_per_task": cpus_per_task, "timeout_min": time_min}  # fmt: skip
    if gpus_per_node:
        found["gpus_per_node"] = gpus_per_node
    if mem_gb:
        found["mem_gb"] = mem_gb
    if partition:
        found["slurm_partition"] = partition
    if array_parallelism is not None:
        found["slurm_array_parallelism"] = array_parallelism
    return found
