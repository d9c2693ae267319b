"""One watcher of Slurm's queue for every job this process follows (`prelnx train --executor slurm`, a sweep's array).

submitit's InfoWatcher is the machinery: ONE command asks about all registered jobs not ended, at submitit's pace (2 s
after a submission, then half the time since, at most `delay_s` apart). Its Slurm watcher asks `sacct`, which needs
Slurm's accounting database: without it (small clusters, the tests' cluster) every job is UNKNOWN for ever, and one
killed before it returned never done. This one asks `squeue` (`--states=all` keeps an ended job listed a while), which
also says why a pending job waits (NEVER_STARTS: it is cancelled, not waited for). Imported only where a job is
followed (submitit: 0.1 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from submitit.slurm.slurm import SlurmInfoWatcher

from prelnx.launch.slurm_task import ENDED, run_slurm

DELAY_S = 60  # the longest wait between two looks at the queue (submitit's default)
# squeue reasons that no amount of waiting changes (Slurm's documentation of job reason codes).
NEVER_STARTS = ("PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "InvalidAccount",
                "InvalidQOS", "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "AssocMaxCpuPerJobLimit",
                "MaxCpuPerAccount", "ReqNodeNotAvail")  # fmt: skip
UNKNOWN = "UNKNOWN"  # squeue has not answered yet (the controller busy, a timeout): not a reason to think the job ended
# squeue states of a job that has not ended (a requeued job passes through REQUEUED and PENDING again)
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING",
          "SUSPENDED", "STAGE_OUT", "SIGNALING", "RESV_DEL_HOLD", "PREEMPTED", UNKNOWN}  # fmt: skip


@dataclass(frozen=True)
class Look:
    """What the watcher last heard of a job."""

    state: str  # squeue's state; ENDED once Slurm no longer lists the job; UNKNOWN before squeue first answered
    reason: str = ""  # why a pending job waits (squeue's %r)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def never_starts(self) -> bool:
        return self.state == "PENDING" and self.reason.startswith(NEVER_STARTS)


class QueueWatcher(SlurmInfoWatcher):
    def __init__(self, delay_s: int = DELAY_S) -> None:
        super().__init__(delay_s=delay_s)
        self.answered = time.monotonic()  # when squeue last answered (from the start: no failure yet)

    def update(self) -> None:
        """One squeue call for every job not ended; a job it does not list has ENDED; no answer changes nothing."""
        ids = sorted({job_id.split("_")[0] for job_id in self._registered - self._finished})
        if not ids:
            return
        self._num_calls += 1
        # an array's elements are listed one a line (-r) under the array's id
        done = run_slurm(["squeue", "-h", "-r", "--states=all", "-o", "%i|%T|%r", "-j", ",".join(ids)])
        # squeue refuses a list of job ids of which it knows none ("Invalid job id"): they have all ended
        if done is not None and (done.returncode == 0 or "Invalid job id" in done.stderr):
            self.answered = time.monotonic()
            listed = {}
            for line in (done.stdout if done.returncode == 0 else "").splitlines():
                job_id, _, rest = line.strip().partition("|")
                state, _, reason = rest.partition("|")
                if job_id and state:
                    listed[job_id] = {"State": state.split()[0], "Reason": reason.strip()}
            for job_id in self._registered - self._finished:
                self._info_dict[job_id] = listed.get(job_id, {"State": ENDED, "Reason": ""})
        self._last_status_check = time.time()
        self._finished |= {job_id for job_id in self._registered - self._finished if self.is_done(job_id, "cache")}

    def is_done(self, job_id: str, mode: str = "standard") -> bool:
        return self.get_state(job_id, mode) not in ACTIVE

    def look(self, job_id: str) -> Look:
        info = self.get_info(job_id, mode="standard")  # asks Slurm only when submitit's pace says so
        return Look(info.get("State", UNKNOWN), info.get("Reason", ""))


WATCHER = QueueWatcher()  # one per process, as submitit's own: every job this process follows shares its calls
