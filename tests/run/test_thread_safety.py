"""A sweep runs its jobs in threads of one process: every lazily initialised piece of shared state must survive N
threads reaching its first use at once. Each check runs in a fresh process (the first use is the point), with the
threads released together by a barrier."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

THREADS = 8


def _first_use_at_a_barrier(call: str, *, imports: str = "") -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import threading, traceback
        {imports}
        barrier = threading.Barrier({THREADS})
        errors = []
        def first_use():
            barrier.wait()
            try:
                {call}
            except BaseException as error:
                errors.append(traceback.format_exc())
        threads = [threading.Thread(target=first_use) for _ in range({THREADS})]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        if errors:
            print(errors[0]); raise SystemExit(1)
    """)
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("repetition", range(3))
def test_safe_loading_first_loaded_by_many_threads_at_once(repetition, tmp_path):
    """The race that once recorded a finished run as failed: sys.modules held a half-executed safe_loading."""
    checkpoint = tmp_path / "checkpoint.pt"
    result = _first_use_at_a_barrier(
        f"load_checkpoint(Path({str(checkpoint)!r}))",
        imports=(f"from pathlib import Path; import torch; torch.save({{'w': torch.ones(2)}}, {str(checkpoint)!r}); "
                 "from prelnx.records.checkpoints import load_checkpoint"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
