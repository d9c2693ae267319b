"""fairseq 0.12 data parallelism under torchrun, on CPU workers (gloo) and with safe loading: fixed here, in one place.

1. CPU workers.
Under torchrun, fairseq reads the rendezvous from the environment (`_infer_torch_distributed_launch_init`) and
sets `device_id = rank % torch.cuda.device_count()`, which divides by zero on a machine without a GPU (and a
device id above 0 makes it call torch.cuda.set_device). Nothing else in fairseq's `legacy_ddp` path needs a GPU.
We replace that function with the same one, except that without a GPU the device id is 0, as if the machine had
one device. With GPUs it is fairseq's own.

2. Resuming with several workers. Rank 0 reads the checkpoint from disk (safely, see safe_loading.py) and sends
the state to the other ranks with `_broadcast_object_slow`: torch.save into a buffer, torch.load out of it. That
state holds fairseq's OmegaConf config, which weights_only loading refuses. The buffer is no file: it is what
rank 0 of this same job just loaded safely. Inside that function only, an in-memory buffer is loaded in full
(`safe_loading.trusted_peer_loads`); a file is still loaded with weights_only=True.
"""

import os

import torch
from fairseq.distributed import utils as distributed_utils

from .safe_loading import trusted_peer_loads

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
    if not getattr(distributed_utils._broadcast_object_slow, "_prelnx_trusted", False):
        distributed_utils._broadcast_object_slow = trusted_peer_loads(distributed_utils._broadcast_object_slow)
