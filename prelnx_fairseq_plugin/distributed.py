"""fairseq 0.12 data parallelism on CPU workers (gloo), under torchrun or as Slurm tasks: fixed here, in one place.

Under torchrun, fairseq's `_infer_torch_distributed_launch_init` sets `device_id = rank % torch.cuda.device_count()`,
which divides by zero without a GPU. As Slurm tasks (`prelnx train --executor slurm`), `_infer_slurm_init` sets
`device_id = SLURM_LOCALID` (torch.cuda.set_device on a CPU node) and, with one task per node, counts the node's
GPUs as its workers (a world of size 0). Without a GPU both are replaced by the same rendezvous with device 0 (and,
under Slurm, the world from SLURM_NTASKS); with GPUs they are fairseq's own.

Resuming with several workers: rank 0 would send the state to the others as a pickle over the process group, which
safe loading refuses and nothing authenticates; prelnx passes `--load-checkpoint-on-all-dp-ranks` instead
(prelnx/plan/parallel.py), so every rank reads the file itself with weights_only=True.
"""

import os
import subprocess

import torch
from fairseq.distributed import utils as distributed_utils

_original = distributed_utils._infer_torch_distributed_launch_init
_original_slurm = distributed_utils._infer_slurm_init


def _infer_torch_distributed_launch_init(cfg):
    if torch.cuda.device_count() > 0:
        return _original(cfg)
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = 0  # fairseq calls torch.cuda.set_device for a device id above 0
    cfg.distributed_no_spawn = True  # processes are created by torchrun


def _infer_slurm_init(cfg, num_pipelines_per_node):
    """fairseq's Slurm rendezvous; on CPU: one worker per Slurm task, device 0. False when not in a Slurm step."""
    if torch.cuda.device_count() > 0 or cfg.pipeline_model_parallel:
        return _original_slurm(cfg, num_pipelines_per_node)
    node_list = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
    if node_list is None or "SLURM_PROCID" not in os.environ or "SLURM_NTASKS" not in os.environ:
        return False
    try:
        hosts = subprocess.check_output(["scontrol", "show", "hostnames", node_list], text=True).split()
    except FileNotFoundError:  # Slurm is not installed here (as fairseq: not a Slurm launch)
        return False
    tasks = int(os.environ["SLURM_NTASKS"])
    if tasks != cfg.distributed_world_size:
        raise ValueError(f"--distributed-world-size {cfg.distributed_world_size}, but this Slurm step has {tasks} "
                         f"tasks (SLURM_NTASKS); start one task per worker")  # fmt: skip
    cfg.distributed_init_method = f"tcp://{hosts[0]}:{cfg.distributed_port}"
    cfg.distributed_rank = int(os.environ["SLURM_PROCID"])
    cfg.device_id = 0  # not SLURM_LOCALID: fairseq calls torch.cuda.set_device for a device id above 0
    cfg.distributed_no_spawn = True  # processes are Slurm's tasks
    return True


def patch_distributed() -> None:
    distributed_utils._infer_torch_distributed_launch_init = _infer_torch_distributed_launch_init
    distributed_utils._infer_slurm_init = _infer_slurm_init
