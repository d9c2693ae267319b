"""The machine described for a bug report (`prelnx env`, a reproduction's report.md): prelnx.machine's probes plus
the installed versions, the GPUs and whether Slurm answers. Here, not in prelnx.machine, because asking Slurm starts a
process (`sinfo --version`) and prelnx's bottom layer, which records, plan and the plugin import, never does."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

from prelnx.machine import FAIRSEQ, cpu_bf16_flags, cpu_name, installed, may_have_gpu, usable_cores


def _slurm() -> str:
    sinfo = shutil.which("sinfo")
    if sinfo is None:
        return "no (sinfo not on PATH)"
    try:
        done = subprocess.run([sinfo, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"sinfo at {sinfo} did not answer ({error})"
    job = os.environ.get("SLURM_JOB_ID")
    inside = f"; inside job {job}" if job else ""
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"{sinfo} reaches no cluster ({reason}){inside}"
    return f"{done.stdout.strip() or sinfo}{inside}"


def environment() -> list[tuple[str, str]]:
    """(what, value) pairs in a bug report's order (`prelnx env`, a reproduction's report.md); torch is imported (its
    CUDA and CPU probes need it)."""
    rows = [("prelnx", installed("prelnx")[0]), ("Python", f"{platform.python_version()} ({sys.executable})"),
            ("platform", platform.platform())]  # fmt: skip
    try:
        import torch
    except ImportError as error:
        return rows + [("torch", f"cannot be imported ({error})")]
    fairseq, distribution = installed(*FAIRSEQ)
    rows += [("torch", torch.__version__), ("fairseq", f"{fairseq} ({distribution})" if distribution else fairseq)]
    rows.append(("CUDA (torch built with)", torch.version.cuda or "none (a CPU build)"))
    flags = cpu_bf16_flags()
    bf16 = "cannot tell" if flags is None else (", ".join(flags) if flags else "none (train.precision: bf16 refused)")
    rows += [("CPU", f"{cpu_name()}; {usable_cores()} usable cores"), ("CPU native bf16", bf16)]
    gpus = "none visible to torch" if may_have_gpu() else "none (no GPU driver device node)"
    if may_have_gpu() and torch.cuda.is_available():
        gpus = "; ".join(f"{i}: {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count()))
    rows += [("GPUs", gpus), ("Slurm", _slurm())]
    return rows
