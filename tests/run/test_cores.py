"""Cores are counted from the affinity mask (machine.usable_cores): under taskset, a cgroup cpuset or a Slurm
allocation a sweep's threads per job and the data workers fit the cores this process may use, not the machine's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = ("from prelnx.machine import usable_cores; from prelnx.data.workers import Workers; "
         "print(usable_cores(), Workers().count)")  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs an affinity mask of 2 cores or more to narrow")  # fmt: skip
def test_a_process_kept_on_one_core_counts_one_core():
    core = min(os.sched_getaffinity(0))
    child = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}}); {PROBE}"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.split() == ["1", "1"], out
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60).stdout
    assert out.split() == [str(len(os.sched_getaffinity(0)))] * 2, out
