"""Data parallelism: how many workers a run has, how they are launched (torchrun on one machine, gloo on CPU and
NCCL on GPUs; across nodes, one Slurm job's tasks meeting through fairseq's Slurm rendezvous, the only place
train.nodes > 1 is accepted), and the batch they keep: with `train.effective_batch_tokens`, update_freq is derived
exactly or the config is refused with values that would work, so 1, 8 or 16 GPUs run the same optimisation.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from prelnx.config.schema import Config
from prelnx.exits import Refusal
from prelnx.machine import usable_cores

SLURM_PORT_ENV = "PRELNX_SLURM_PORT"  # set by a Slurm task of `prelnx train --executor slurm`: its rendezvous port


class BatchError(Refusal):
    """train.effective_batch_tokens cannot be reached exactly with these workers and max_tokens."""


@dataclass(frozen=True)
class Parallel:
    processes: int  # workers on this machine
    nodes: int
    cuda: bool
    port: int | None = None  # fairseq's Slurm rendezvous port when the workers are Slurm tasks; None otherwise

    @property
    def world_size(self) -> int:
        return self.processes * self.nodes

    def fairseq_argv(self) -> list[str]:
        """fairseq's distributed options (none for one worker)."""
        if self.world_size == 1:
            return []
        argv = ["--distributed-world-size", str(self.world_size), "--distributed-backend",
                "nccl" if self.cuda else "gloo", "--distributed-no-spawn",
                # each rank reads the checkpoint itself (safely) instead of receiving a pickle from rank 0
                "--load-checkpoint-on-all-dp-ranks"]  # fmt: skip
        if not self.cuda:
            argv += ["--ddp-backend", "legacy_ddp"]  # PyTorch's DDP wants device ids; fairseq's own does not
        if self.port is not None:  # fairseq reads the rest (hosts, ranks) from SLURM_*
            argv += ["--distributed-port", str(self.port)]
        return argv

    def launcher(self) -> list[str]:
        """torchrun's arguments before the module, for several workers on this machine; [] for one or Slurm tasks.
        `--standalone`: a free rendezvous port; `--max-restarts 0`: one dead worker ends the group."""
        if self.processes == 1 or self.port is not None:
            return []
        return ["--standalone", "--nproc-per-node", str(self.processes), "--max-restarts", "0"]

    def slurm_tasks(self) -> list[str]:
        """srun's arguments that start these workers as Slurm tasks (for command.txt); [] when not on Slurm."""
        return [] if self.port is None else ["--nodes", str(self.nodes), "--ntasks-per-node", str(self.processes)]

    def threads(self, configured: int | None) -> int:
        """Torch threads per worker: the configured number, else a Slurm task's CPUs, else the cores shared."""
        slurm_cpus = os.environ.get("SLURM_CPUS_PER_TASK", "")
        if self.port is not None and slurm_cpus.isdigit():
            return configured or int(slurm_cpus)
        return configured or max(1, usable_cores() // self.processes)


def visible_gpus(env: dict[str, str] | None = None) -> int:
    if env and "CUDA_VISIBLE_DEVICES" in env:
        return len([d for d in env["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()])
    import torch

    return torch.cuda.device_count()


def _fitting(visible: int, max_tokens: int, effective: int | None) -> int:
    """The most workers, up to `visible`, whose batches add up to `effective` exactly (all of them if unset)."""
    if effective is None:
        return max(1, visible)
    return max([p for p in range(1, max(1, visible) + 1) if effective % (max_tokens * p) == 0] or [1])


def rendezvous_port(job_id: str) -> int:
    """The port of a Slurm job's rendezvous, the same in every task of it: 20000 + job id % 20000."""
    digits = "".join(ch for ch in str(job_id).split("_")[0] if ch.isdigit())
    return 20000 + int(digits or 0) % 20000


def resolve(config: Config, cuda: bool, env: dict[str, str] | None = None) -> Parallel:
    """The workers of this run; `env`: its own environment additions (CUDA_VISIBLE_DEVICES, PRELNX_SLURM_PORT).
    Without train.processes: every GPU it sees, but no more than train.effective_batch_tokens allows; 1 on CPU."""
    t = config.train
    port = (env or {}).get(SLURM_PORT_ENV)
    if port is not None:
        return Parallel(processes=t.processes or 1, nodes=t.nodes, cuda=cuda, port=int(port))
    if t.nodes > 1:
        raise BatchError(f"train.nodes: {t.nodes} (one run across {t.nodes} machines) is launched only by "
                         f"`prelnx train --executor slurm`, which starts the Slurm tasks; plain `prelnx train` and "
                         f"sweeps train each run on one machine: use train.nodes: 1 there")  # fmt: skip
    visible = visible_gpus(env) if cuda else 0
    processes = t.processes or (_fitting(visible, t.max_tokens, t.effective_batch_tokens) if cuda else 1)
    if cuda and processes > visible:
        raise BatchError(f"train.processes: {processes} GPU workers requested, {visible} GPU(s) visible")
    return Parallel(processes=processes, nodes=t.nodes, cuda=cuda)


def derive_update_freq(effective: int, max_tokens: int, workers: int) -> int:
    per_step = max_tokens * workers
    if effective % per_step == 0:
        return effective // per_step
    fits = [m for m in (512, 1024, 2048, 3072, 4096, 6144, 8192) if effective % (m * workers) == 0]
    lower, upper = (effective // per_step) * per_step, (effective // per_step + 1) * per_step
    options = ([f"train.max_tokens {', '.join(map(str, fits))}"] if fits else []) + [
        f"train.effective_batch_tokens {' or '.join(str(v) for v in (lower, upper) if v > 0)}"]  # fmt: skip
    raise BatchError(f"train.effective_batch_tokens: {effective} is not max_tokens x workers x update_freq for whole "
                     f"update_freq (max_tokens {max_tokens} x {workers} worker(s) = {per_step} per step). Would work: "
                     + "; or ".join(options))  # fmt: skip


def with_effective_batch(config: Config, parallel: Parallel) -> Config:
    """The config with update_freq derived from train.effective_batch_tokens (unchanged when it is not set)."""
    t = config.train
    if t.effective_batch_tokens is None:
        return config
    update_freq = derive_update_freq(t.effective_batch_tokens, t.max_tokens, parallel.world_size)
    if t.update_freq not in (1, update_freq):
        raise BatchError(f"train.update_freq: {t.update_freq}, but train.effective_batch_tokens "
                         f"{t.effective_batch_tokens} with {parallel.world_size} worker(s) x max_tokens {t.max_tokens} "
                         f"needs {update_freq}; set one of the two")  # fmt: skip
    return dataclasses.replace(config, train=dataclasses.replace(t, update_freq=update_freq))


def describe_batch(config: Config, parallel: Parallel) -> str:
    t = config.train
    total = t.max_tokens * parallel.world_size * t.update_freq
    how = "train.effective_batch_tokens" if t.effective_batch_tokens is not None else "train.update_freq"
    return (f"batch per update: {total} tokens = max_tokens {t.max_tokens} x {parallel.world_size} worker(s) "
            f"x update_freq {t.update_freq} (from {how})")  # fmt: skip
