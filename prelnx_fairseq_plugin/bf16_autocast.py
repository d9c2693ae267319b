"""`--bf16` without a TPU: bf16 mixed precision under torch.autocast, fp32 weights and optimizer state, wherever
torch_xla is missing (fairseq 0.12's `--bf16` is TPU-only); what it means for a run: docs/parallel.md. Fixed here:
`distributed_utils.call_main` turns `--tpu` back off before fairseq branches on it, and `Trainer.__init__` turns
fairseq's bf16 path off and wraps the criterion's forward (model and loss) in autocast, CPU with `--cpu`, else CUDA;
the backward and BLEU's beam search run outside it. The checkpoints' cfg says `bf16: false` (fp32 weights). prelnx
refuses bf16 on a CPU without native bf16 instructions (prelnx/machine.py); this plugin does not check.
"""

from __future__ import annotations

import functools

import torch
from fairseq import utils as fairseq_utils
from fairseq.distributed import utils as distributed_utils
from fairseq.trainer import Trainer

_original_call_main = distributed_utils.call_main
_original_trainer_init = Trainer.__init__


def _without_xla(common) -> bool:
    """fairseq's bf16 asked for, and no TPU possible (torch_xla is not installed): autocast is ours."""
    return bool(common.bf16) and fairseq_utils.xm is None


def call_main(cfg, main, **kwargs):
    if _without_xla(cfg.common):
        # set by fairseq's option parsing for --bf16 and copied into every group with the field (the rendezvous,
        # Adam (no fused Adam on a GPU), masked_lm's criterion (the vocabulary projected for every token))
        for name in cfg:
            group = cfg[name]
            if group is not None and not isinstance(group, (str, int, float, bool)) and "tpu" in group:
                group.tpu = False
    return _original_call_main(cfg, main, **kwargs)


def trainer_init(self, cfg, task, model, criterion, quantizer=None):
    if not _without_xla(cfg.common):
        return _original_trainer_init(self, cfg, task, model, criterion, quantizer)
    device_type = "cpu" if cfg.common.cpu or not torch.cuda.is_available() else "cuda"
    cfg.common.tpu = False  # when the trainer is built without fairseq_cli's call_main
    cfg.common.bf16 = False  # fairseq's bf16 path: bf16 weights, FP16Optimizer, bf16 samples
    cfg.common.memory_efficient_bf16 = False
    forward = criterion.forward

    @functools.wraps(forward)
    def forward_under_autocast(*args, **kwargs):  # the criterion's forward (model + loss); its backward outside
        with torch.autocast(device_type, dtype=torch.bfloat16):
            return forward(*args, **kwargs)

    criterion.forward = forward_under_autocast
    _original_trainer_init(self, cfg, task, model, criterion, quantizer)
    self.prelnx_autocast = device_type  # for tests and readers: this trainer's forward runs under autocast


def enable_bf16_autocast() -> None:
    """Idempotent."""
    distributed_utils.call_main = call_main
    Trainer.__init__ = trainer_init
