"""QK-Norm (Dehghani et al. 2023): fairseq's multi-head attention with queries and keys normalised per head before
the dot product, by the model's --norm-type (formula: docs/variants.md). q_proj and k_proj become
`HeadNormedLinear`s, so every path of fairseq's attention that projects q or k normalises them (cached keys are
stored normalised); `skip_embed_dim_check = True` keeps fairseq off its fused path, which reads q_proj.weight
directly and would skip the norm.
"""

from __future__ import annotations

from typing import Callable

import torch
from fairseq.modules import MultiheadAttention
from fairseq.modules.quant_noise import quant_noise
from torch import nn


class HeadNormedLinear(nn.Linear):
    """A Linear projection to num_heads * head_dim features, then `head_norm` over each head's head_dim features."""

    def __init__(self, linear: nn.Linear, num_heads: int, head_norm: nn.Module) -> None:
        """`linear` taken over: the same projection (the very same weight and bias tensors), now head-normalised. Its
        placeholder weights are on the meta device: no random draws, so the model starts from the weights of the same
        seed without it. Its features split into the heads: fairseq's attention has asserted it."""
        super().__init__(linear.in_features, linear.out_features, bias=linear.bias is not None, device="meta")
        self.num_heads = num_heads
        self.head_norm = head_norm
        self.weight = linear.weight
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        projected = super().forward(x)
        per_head = projected.view(*projected.shape[:-1], self.num_heads, -1)
        return self.head_norm(per_head).view(projected.shape)


class QKNormMultiheadAttention(MultiheadAttention):
    """fairseq's MultiheadAttention with per-head query and key norms (what `normalize_qk` makes of one)."""


def normalize_qk(attention: MultiheadAttention, head_norm: Callable[[int], nn.Module], q_noise: float,
                 block_size: int) -> None:  # fmt: skip
    """fairseq's attention as its layer built it becomes a QKNormMultiheadAttention: q_proj and k_proj are taken
    over by HeadNormedLinears (`head_norm(head_dim)` builds each norm), with the layer's quant noise as fairseq's."""

    def normed(projection: nn.Linear) -> nn.Module:
        taken = HeadNormedLinear(projection, attention.num_heads, head_norm(attention.head_dim))
        return quant_noise(taken, q_noise, block_size)

    attention.q_proj = normed(attention.q_proj)
    attention.k_proj = normed(attention.k_proj)
    # Never the fused path: it would use q_proj.weight / k_proj.weight without the norms (see the docstring).
    attention.skip_embed_dim_check = True
    attention.__class__ = QKNormMultiheadAttention
