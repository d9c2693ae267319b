"""`--optimizer radam`: torch.optim.RAdam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate").

Weight decay is decoupled (AdamW-style), like fairseq's own `adam`, so `--weight-decay` means the same for both.
`--second-moment-init gradient` starts v from the first gradient squared (GI-Adam's v_0 = g_1^2, written once in
adam_moments.py). RAdam's first updates (while its rectification term is undefined, rho_t <= 5) do not use v, so
this leaves them unchanged and changes the adaptive steps after them. RAdam has no switch for bias correction: its
rectification is derived for the bias-corrected moments.
"""

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, List

import torch
from omegaconf import II

from fairseq.dataclass import FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer

from .adam_moments import SECOND_MOMENT_INITS, second_moment_gradient


@dataclass
class RAdamConfig(FairseqDataclass):
    adam_betas: Any = field(default=(0.9, 0.999), metadata={"help": "betas for RAdam"})
    adam_eps: float = field(default=1e-8, metadata={"help": "epsilon for RAdam"})
    weight_decay: float = field(default=0.0, metadata={"help": "decoupled weight decay"})
    second_moment_init: SECOND_MOMENT_INITS = field(  # type: ignore[valid-type]
        default="zero", metadata={"help": "v_0: zero (RAdam) or gradient (v_0 = g_1^2, as GI-Adam)"})
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

    def step(self, closure=None, scale=1.0, groups=None):
        if str(getattr(self.cfg, "second_moment_init", "zero")) == "gradient":
            for group in self.optimizer.param_groups:
                for p in group["params"]:
                    state = self.optimizer.state[p]
                    if p.grad is not None and len(state) == 0:  # torch's RAdam fills in nothing it finds set
                        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
                        state["step"] = torch.tensor(0.0, dtype=scalar)
                        state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        second_moment_gradient(state, p.grad / scale)
        super().step(closure, scale, groups)
