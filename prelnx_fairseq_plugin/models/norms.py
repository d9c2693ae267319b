"""The normalisation modules the variants put where fairseq's transformer has a LayerNorm (layernorm, rmsnorm, dyt:
formulas and sources in docs/variants.md; DyT's alpha starts at 0.5, gamma at 1, beta at 0), and `NormVariant`, the
model's options that choose them. eps is 1e-5 for both statistical norms (fairseq's LayerNorm default). RMSNorm is
our own, not torch.nn.RMSNorm, so that its parameter names, and the checkpoints of earlier runs, stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import torch
from fairseq import utils
from torch import nn

DYT_DEFAULT_ALPHA = 0.5  # the DyT paper's default alpha0 (its code's alpha_init_value; it tunes alpha0 for LLMs)


class RMSNorm(nn.Module):
    """gamma * x / sqrt(mean(x^2) + eps) over the last dimension (Zhang & Sennrich 2019)."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # In float32 for half-precision inputs, as fairseq does for its LayerNorm statistics.
        x32 = x.float()
        normalised = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * normalised.type_as(x)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


class DynamicTanh(nn.Module):
    """DyT: gamma * tanh(alpha * x) + beta with one learned scalar alpha (Zhu et al. 2025); no statistics."""

    def __init__(self, dim: int, init_alpha: float = DYT_DEFAULT_ALPHA) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), float(init_alpha)))
        self.weight = nn.Parameter(torch.ones(dim))  # gamma
        self.bias = nn.Parameter(torch.zeros(dim))  # beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * torch.tanh(self.alpha * x) + self.bias

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, alpha={self.alpha.detach().item():g}"


def is_layer_norm(module: nn.Module) -> bool:
    """torch's LayerNorm, or the apex FusedLayerNorm that fairseq's LayerNorm() returns on some GPUs."""
    return isinstance(module, nn.LayerNorm) or type(module).__name__ == "FusedLayerNorm"


def replace_layer_norms(root: nn.Module, make: Callable[[int], nn.Module]) -> None:
    """Swap every LayerNorm below `root` (not `root` itself) for `make(its size)`.

    fairseq builds its LayerNorms inline in the layers' and stacks' constructors (self_attn_layer_norm,
    encoder_attn_layer_norm, final_layer_norm, the stacks' layer_norm and layernorm_embedding, ...), so they are
    replaced after construction, by attribute, wherever they are: the module names stay fairseq's.
    """
    for parent in list(root.modules()):
        for name, child in list(parent.named_children()):
            if is_layer_norm(child):
                setattr(parent, name, make(child.normalized_shape[-1]))


@dataclass(frozen=True)
class NormVariant:
    """The plugin's model options (--norm-type, --deepnorm, --qk-norm, --dyt-init-alpha), read from fairseq's cfg."""

    norm_type: str = "layernorm"
    deepnorm: bool = False
    qk_norm: bool = False
    dyt_init_alpha: float = DYT_DEFAULT_ALPHA

    @classmethod
    def of(cls, cfg: Any) -> NormVariant:
        """Each option from cfg (its field's default where cfg has none), as its field's type."""
        return cls(**{f.name: type(f.default)(utils.safe_getattr(cfg, f.name, f.default)) for f in fields(cls)})

    def norm(self, dim: int) -> nn.Module:
        """A fresh normalisation module of this type over `dim` features (any other type: refused by check_variant)."""
        if self.norm_type == "rmsnorm":
            return RMSNorm(dim)
        if self.norm_type == "dyt":
            return DynamicTanh(dim, self.dyt_init_alpha)
        return nn.LayerNorm(dim, eps=1e-5)

    def swap_norms(self, root: nn.Module) -> None:
        """Every LayerNorm below `root` becomes this variant's norm (none is touched for layernorm)."""
        if self.norm_type != "layernorm":
            replace_layer_norms(root, self.norm)
