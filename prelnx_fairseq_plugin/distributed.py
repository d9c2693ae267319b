"""fairseq 0.12 data parallelism under torchrun on CPU workers (gloo): fixed here, in one place.

Under torchrun, fairseq reads the rendezvous from the environment (`_infer_torch_distributed_launch_init`) and
sets `device_id = rank % torch.cuda.device_count()`, which divides by zero on a machine without a GPU (and a
device id above 0 makes it call torch.cuda.set_device). Nothing else in fairseq's `legacy_ddp` path needs a GPU.
We replace that function with the same one, except that without a GPU the device id is 0, as if the machine had
one device. With GPUs it is fairseq's own.

Resuming with several workers: by default rank 0 would read the checkpoint and send the state to the others
through a pickle over the process group, which safe loading refuses (it holds fairseq's OmegaConf config) and
which nothing authenticates. prelnx launches several workers with `--load-checkpoint-on-all-dp-ranks` instead
(run/parallel.py): every rank reads the file itself, with weights_only=True, and nothing is unpickled from the
network.
"""

import os

import torch
from fairseq.distributed import utils as distributed_utils

_original = distributed_utils._infer_torch_distributed_launch_init


def _infer_torch_distributed_launch_init(cfg):
    if torch.cuda.device_count() > 0:
        return _original(cfg)
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = 0  # fairseq calls torch.cuda.set_device for a device id above 0
    cfg.distributed_no_spawn = True  # processes are created by torchrun


def patch_distributed() -> None:
    distributed_utils._infer_torch_distributed_launch_init = _infer_torch_distributed_launch_init
