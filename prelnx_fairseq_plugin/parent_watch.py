"""Under `prelnx train`, the fairseq process never outlives its prelnx parent.

A fairseq child left running after prelnx is killed would write checkpoints no record follows, and a re-run would
start a second trainer on the same run dir. prelnx sets PRELNX_PARENT_PID in the child's environment (never in
command.txt); at plugin import the child asks Linux for SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG), then
checks the parent is still the one that started it (a parent that died while fairseq imported); without prctl a
daemon thread polls the parent every second. A PRELNX_PARENT_PID that is neither this process's parent nor, for a
torchrun worker, torchrun's parent was inherited from another machine or tree (a Slurm task sets its own) and is
not watched. This runs in the child rather than in a `preexec_fn`, which is unsafe in prelnx's threaded sweeps.
"""

import ctypes
import os
import signal
import sys
import threading
import time

from prelnx.machine import pid_alive  # the bottom layer (README: what the plugin may import)

PR_SET_PDEATHSIG = 1


def _die() -> None:
    sys.stderr.write("prelnx: the prelnx process that started this training is gone; stopping\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGTERM)


def _set_parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_parent() -> None:
    expected = os.environ.get("PRELNX_PARENT_PID")
    if not expected or not expected.isdigit():
        return
    expected_pid = int(expected)
    if os.getppid() != expected_pid:
        if "TORCHELASTIC_RUN_ID" not in os.environ or "LOCAL_RANK" not in os.environ:  # not started by torchrun
            return  # the variable came from another machine or process tree (e.g. through a Slurm submission)
        # A data-parallel worker on prelnx's machine: torchrun, not prelnx, is its parent. The kernel signal would
        # follow torchrun; poll prelnx's pid instead (torchrun then sees its worker gone and stops the others).
        _poll(lambda: not pid_alive(expected_pid))
        return
    # Processes this one starts (fairseq's spawned GPU workers, which import the plugin again) watch this one,
    # not prelnx: their parent is this process.
    os.environ["PRELNX_PARENT_PID"] = str(os.getpid())
    kernel = _set_parent_death_signal()
    if os.getppid() != expected_pid:
        _die()
    if not kernel:
        _poll(lambda: os.getppid() != expected_pid)


def _poll(gone) -> None:  # type: ignore[no-untyped-def]
    def poll() -> None:
        while not gone():
            time.sleep(1.0)
        _die()

    threading.Thread(target=poll, name="prelnx-parent-watch", daemon=True).start()
