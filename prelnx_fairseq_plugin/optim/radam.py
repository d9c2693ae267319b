"""`--optimizer radam`: torch.optim.RAdam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate").

Weight decay is decoupled (AdamW-style), like fairseq's own `adam`, so `--weight-decay` means the same for both.
"""

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, List

import torch
from omegaconf import II

from fairseq.dataclass import FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer


@dataclass
class RAdamConfig(FairseqDataclass):
    adam_betas: Any = field(default=(0.9, 0.999), metadata={"help": "betas for RAdam"})
    adam_eps: float = field(default=1e-8, metadata={"help": "epsilon for RAdam"})
    weight_decay: float = field(default=0.0, metadata={"help": "decoupled weight decay"})
    lr: List[float] = II("optimization.lr")


@register_optimizer("radam", dataclass=RAdamConfig)
class RAdam(FairseqOptimizer):
    def __init__(self, cfg: RAdamConfig, params):
        super().__init__(cfg)
        self._optimizer = torch.optim.RAdam(params, decoupled_weight_decay=True, **self.optimizer_config)

    @property
    def optimizer_config(self):
        betas = self.cfg.adam_betas
        if isinstance(betas, str):
            betas = tuple(float(b) for b in betas.strip("()[] ").split(","))
        return {
            "lr": self.cfg.lr[0] if isinstance(self.cfg.lr, Collection) else self.cfg.lr,
            "betas": tuple(betas),
            "eps": self.cfg.adam_eps,
            "weight_decay": self.cfg.weight_decay,
        }

    @property
    def supports_flat_params(self):
        return True
