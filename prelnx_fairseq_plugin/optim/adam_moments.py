"""`--optimizer prelnx_adam`: fairseq's Adam with the two changes the warm-up explanations propose, in one place.

fairseq's own `adam` (fairseq/optim/adam.py, class Adam, fairseq 0.12.2) is, per coordinate, at step t with the
gradient g_t (decoupled weight decay wd, as AdamW):

    m_t = b1 m_{t-1} + (1 - b1) g_t          v_t = b2 v_{t-1} + (1 - b2) g_t^2       m_0 = v_0 = 0
    w_t = w_{t-1} (1 - lr wd) - lr * c_t * m_t / (sqrt(v_t) + eps),   c_t = sqrt(1 - b2^t) / (1 - b1^t)

Each switch changes one term; every later update is the same recurrence from the state reached:
- `--second-moment-init gradient` (GI-Adam, Kalra & Barkeshli 2024, arXiv 2406.09405): v_0 = g_1^2, so v_1 = g_1^2;
  with bias correction kept, the first update is lr * sqrt(1 - b2) * g / (|g| + eps), sqrt(1 - b2) times Adam's.
- `--no-bias-correction` (Kosson et al. 2024, arXiv 2410.23922: bias correction inflates early updates): c_t = 1,
  so the first update is lr * (1 - b1) / sqrt(1 - b2) * g / (|g| + eps / sqrt(1 - b2)).
With neither, this is fairseq's Adam step for step (tests/plugin/test_adam_moments.py).
"""

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, List

import torch
from omegaconf import II

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.optim import FairseqOptimizer, register_optimizer

SECOND_MOMENT_INITS = ChoiceEnum(["zero", "gradient"])


def second_moment_gradient(state: dict, grad: torch.Tensor) -> None:
    """GI-Adam's v_0 = g^2 on a parameter's first step (its state still empty): `exp_avg_sq` holds g^2, so the
    step's own b2 v_0 + (1 - b2) g^2 is g^2. The one place the initialisation is written (Adam and RAdam)."""
    state["exp_avg_sq"] = grad.detach().float().pow(2) if grad.dtype in (torch.float16, torch.bfloat16) else grad.detach().pow(2)


def adam_options(cfg: Any) -> dict[str, Any]:
    """--lr, --adam-betas (a tuple, or fairseq's string of one), --adam-eps and --weight-decay as torch's keywords."""
    betas = cfg.adam_betas
    if isinstance(betas, str):
        betas = tuple(float(b) for b in betas.strip("()[] ").split(","))
    return {"lr": cfg.lr[0] if isinstance(cfg.lr, Collection) else cfg.lr, "betas": (float(betas[0]), float(betas[1])),
            "eps": cfg.adam_eps, "weight_decay": cfg.weight_decay}  # fmt: skip


@dataclass
class AdamFamilyConfig(FairseqDataclass):
    """The options prelnx_adam and radam share (adam_options reads them)."""

    adam_betas: Any = field(default=(0.9, 0.999), metadata={"help": "betas for Adam"})
    adam_eps: float = field(default=1e-8, metadata={"help": "epsilon for Adam"})
    weight_decay: float = field(default=0.0, metadata={"help": "decoupled weight decay (as fairseq's adam)"})
    second_moment_init: SECOND_MOMENT_INITS = field(  # type: ignore[valid-type]
        default="zero", metadata={"help": "v_0: zero (Adam) or gradient (GI-Adam: v_0 = g_1^2)"})
    lr: List[float] = II("optimization.lr")


@dataclass
class AdamMomentsConfig(AdamFamilyConfig):
    no_bias_correction: bool = field(default=False, metadata={"help": "use m_t and v_t without Adam's bias correction"})


class AdamMoments(torch.optim.Optimizer):
    """fairseq's Adam (see the module docstring) with `second_moment_init` and `bias_correction`."""

    supports_memory_efficient_fp16 = True  # both read by fairseq's FairseqOptimizer
    supports_flat_params = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 second_moment_init="zero", bias_correction=True):  # fmt: skip
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        second_moment_init=str(second_moment_init), bias_correction=bool(bias_correction))  # fmt: skip
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.float() if p.grad.dtype in (torch.float16, torch.bfloat16) else p.grad
                weights = p.float() if p.dtype in (torch.float16, torch.bfloat16) else p
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(weights)
                    if group["second_moment_init"] == "gradient":
                        second_moment_gradient(state, grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(weights)
                exp_avg, exp_avg_sq = state["exp_avg"].to(weights), state["exp_avg_sq"].to(weights)
                state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
                state["step"] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.sqrt().add_(group["eps"])
                step_size = group["lr"]
                if group["bias_correction"]:
                    step_size *= math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                if group["weight_decay"] != 0:
                    weights.add_(weights, alpha=-group["weight_decay"] * group["lr"])
                weights.addcdiv_(exp_avg, denom, value=-step_size)
                if weights is not p:
                    p.copy_(weights)
        return loss


@register_optimizer("prelnx_adam", dataclass=AdamMomentsConfig)
class FairseqAdamMoments(FairseqOptimizer):
    def __init__(self, cfg: AdamMomentsConfig, params):
        super().__init__(cfg)
        self._optimizer = AdamMoments(params, **self.optimizer_config)

    @property
    def optimizer_config(self):
        return {**adam_options(self.cfg), "second_moment_init": str(self.cfg.second_moment_init),
                "bias_correction": not self.cfg.no_bias_correction}  # fmt: skip
