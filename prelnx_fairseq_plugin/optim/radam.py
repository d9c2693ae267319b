"""`--optimizer radam`: torch.optim.RAdam (Liu et al. 2020), weight decay decoupled as fairseq's `adam`.
`--second-moment-init gradient` starts v at the first gradient squared (adam_moments.py); RAdam has no
bias-correction switch. `--radam-first-steps momentum | decay_only`: the step while rho_t <= 5 (torch's and T-Fixup's,
or Transformer-Clinic's weight decay only), each against its reference: docs/warmup_free.md ("RAdam's first steps").
"""

from dataclasses import dataclass, field

import torch

from fairseq.dataclass import ChoiceEnum
from fairseq.optim import FairseqOptimizer, register_optimizer

from .adam_moments import AdamFamilyConfig, adam_options, second_moment_gradient

RADAM_FIRST_STEPS = ChoiceEnum(["momentum", "decay_only"])  # torch's / T-Fixup's, Transformer-Clinic's (docstring)
RECTIFIED_ABOVE = 5.0  # rho_t above which RAdam's adaptive, rectified step is taken (torch's test)


def unrectified(step: int, beta2: float) -> bool:
    """Whether update number `step` (from 1) is one of RAdam's first, unrectified updates: rho_t <= 5."""
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * beta2**step / (1 - beta2**step)
    return rho_t <= RECTIFIED_ABOVE


@dataclass
class RAdamConfig(AdamFamilyConfig):
    radam_first_steps: RADAM_FIRST_STEPS = field(  # type: ignore[valid-type]
        default="momentum", metadata={"help": "updates while rho_t <= 5: momentum (torch, T-Fixup) or decay_only "
                                              "(Transformer-Clinic's radam.py: weight decay only)"})


@register_optimizer("radam", dataclass=RAdamConfig)
class RAdam(FairseqOptimizer):
    supports_flat_params = True  # fairseq's property asks torch's RAdam, which does not say

    def __init__(self, cfg: RAdamConfig, params):
        super().__init__(cfg)
        self._optimizer = torch.optim.RAdam(params, decoupled_weight_decay=True, **self.optimizer_config)

    @property
    def optimizer_config(self):
        return adam_options(self.cfg)

    def step(self, closure=None, scale=1.0, groups=None):
        gradient_init = str(getattr(self.cfg, "second_moment_init", "zero")) == "gradient"
        decay_only = str(getattr(self.cfg, "radam_first_steps", "momentum")) == "decay_only"
        kept = {}  # decay_only: the weights (and lr x weight_decay) of each parameter due an unrectified update
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.optimizer.state[p]
                if gradient_init and len(state) == 0:  # torch's RAdam fills in nothing it finds set
                    scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
                    state["step"] = torch.tensor(0.0, dtype=scalar)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    second_moment_gradient(state, p.grad / scale)
                if decay_only:
                    step = int(state["step"]) + 1 if "step" in state else 1
                    if unrectified(step, group["betas"][1]):
                        kept[p] = (p.data.clone(), float(group["lr"]) * float(group["weight_decay"]))
        super().step(closure, scale, groups)
        for p, (weights, decay) in kept.items():  # Clinic: the moments moved, the weights only by weight decay
            p.data.copy_(weights).mul_(1 - decay)
