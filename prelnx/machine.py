"""What this machine can do for training (the one owner of these probes): usable cores, native bf16 on its CPU,
whether it can have a GPU at all, what is installed, whether a process runs.

bf16 on CPU pays only with bf16 in hardware (x86 AVX512-BF16 or AMX-BF16, Arm BF16); elsewhere torch emulates every
bf16 matmul, slower than fp32, so prelnx refuses it before training rather than let a study run slow.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

# The device nodes of the GPU drivers torch's `cuda` runs on (Linux: NVIDIA's, AMD's ROCm, WSL's): without one, no
# GPU, and a CPU-only `prelnx train` need not import torch (0.8-1.1 s) before its fairseq child starts.
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")
X86_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo names, also torch's cpuinfo keys
ARM_FLAGS = ("bf16",)  # /proc/cpuinfo "Features" on aarch64
FAIRSEQ = ("ve-fairseq", "fairseq-fixed", "fairseq")  # the distributions fairseq 0.12 is installed as


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask (a cgroup cpuset, taskset, a Slurm allocation), which
    os.cpu_count() ignores; the machine's count where the OS has no affinity (macOS)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average(decimals: int = 2) -> str:
    """The 1, 5 and 15 minute load averages as the records print them ("1.23 0.98 0.50")."""
    return " ".join(f"{x:.{decimals}f}" for x in os.getloadavg())


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs here (another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def may_have_gpu() -> bool:
    """False only when this machine surely has no GPU torch could use (Linux without any GPU driver's device node);
    True otherwise, where torch must be asked."""
    return platform.system() != "Linux" or any(Path(node).exists() for node in GPU_DEVICE_NODES)


def _cpu_capability() -> dict:
    try:
        import torch

        return dict(torch._C._cpu._get_cpu_capability())  # torch's cpuinfo: private, hence its callers' fallbacks
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return {}


def cpu_bf16_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...] | None:
    """The CPU's native bf16 features found (empty: none), or None when this machine cannot tell."""
    capability = _cpu_capability()
    if any(flag in capability for flag in X86_FLAGS):
        return tuple(flag for flag in X86_FLAGS if capability.get(flag))
    try:
        words = set(cpuinfo.read_text(errors="replace").replace("\t", " ").split())
    except OSError:
        return None
    return tuple(flag for flag in X86_FLAGS + ARM_FLAGS if flag in words)


def cpu_bf16_problem() -> str | None:
    """Why bf16 training on this CPU is refused, or None when it has native bf16 (or cannot tell: then allowed)."""
    flags = cpu_bf16_flags()
    if flags is None or flags:
        return None
    return (f"train.precision: bf16 on CPU needs native bf16 instructions (x86 AVX512-BF16 or AMX-BF16, Arm BF16), "
            f"and this CPU ({cpu_name()}) has none: torch would emulate every bf16 matmul, slower than fp32. "
            f"Use train.precision: fp32 here, or bf16 on a machine that has them (or on a GPU)")  # fmt: skip


def cpu_name() -> str:
    return str(_cpu_capability().get("cpu_name") or platform.processor() or platform.machine())


def installed(*distributions: str) -> tuple[str, str]:
    """(version, distribution) of the first of `distributions` installed here; ("not installed", "") if none is."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in distributions:
        try:
            return version(distribution), distribution
        except PackageNotFoundError:
            continue
    return "not installed", ""

