"""scripts/gpu_check.sh --dry-run: the GPU check's plan holds on any machine (CI has no GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # plans every check, fairseq parses each
def test_gpu_check_dry_run_checks_every_planned_check(tmp_path):
    out = tmp_path / "gpu_check.json"
    env = dict(os.environ, PYTHON=sys.executable, OMP_NUM_THREADS="1")
    done = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--dry-run", "--out", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    names = [check["name"] for check in report["checks"]]
    trains = [f"train/{layout}/{precision}" for layout in ("post", "pre") for precision in ("fp32", "fp16", "bf16")]
    assert names == trains + ["plain/pre/fp32", "plain/pre/fp16", "plain/pre/bf16", "sweep/2 runs sharing the GPU",
                              "torchrun/1 worker", "evaluate/pre fp32"]  # fmt: skip
    assert report["dry_run"] and all(check["ok"] for check in report["checks"])
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ok  ", "FAIL"))]
    assert len(lines) == len(names)  # one line per check
    for check in report["checks"][:6]:  # fairseq's own parser accepted each GPU command, with its precision flag
        assert "fairseq accepts the GPU arguments" in check["detail"]
    assert "--bf16" in report["checks"][2]["detail"] and "--fp16" in report["checks"][1]["detail"]
    if report["gpu"] is None:
        assert "no GPU visible" in done.stdout
