"""ResiDual (Xie, Zhang, Guo, Tan, Bian, Awadalla, Menezes, Qin & Yan 2023, "ResiDual: Transformer with Dual
Residual Connections", arXiv:2304.14802): two residual streams through the same sublayers. x_a is Post-LN's stream,
x_d sums every sublayer's output unnormalised, and the stack's output joins them:

  x_a <- LN_i(x_a + F_i(x_a))        x_d <- x_d + F_i(x_a)        (every sublayer i; F_i after its dropout)
  output = x_a + LN_d(x_d)           x_a and x_d both start as the stack's input (the embeddings)

Reference read: microsoft/ResiDual at commit 8682f7510be105a0caf5b98a021e712f44f90ace (written for fairseq 0.12):
resi_dual/resi_dual_layers.py (`ResiDualEncoderLayer` / `ResiDualDecoderLayer.forward`: `res = res + x *
res_input_norm_scale`, then fairseq's Post-LN sublayer) and resi_dual/resi_dual.py (`ResiDualEncoder` /
`ResiDualDecoder`: `res` from the embeddings; after the last layer `x = x * alpha + self.layer_norm(res)` with eps
1e-7; hydra_config/iwslt.yaml keeps alpha and res_input_norm_scale at 1.0, which prelnx fixes at 1).

Here: fairseq's Post-LN layers for x_a; the residual hook adds each sublayer's output to x_d, shared by the layers
of a stack through a `DualStream` (dropped at each stack call and when the output reads it, so no tensor outlives a
forward); the stack's `layer_norm` becomes `ResiDualOutput`. Activation checkpointing (which would add each
sublayer twice) is refused. LN_d is --norm-type's norm (LayerNorm by default, as the reference).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .norms import NormVariant, RMSNorm
from .schemes import LayoutScheme, register

OUTPUT_NORM_EPS = 1e-7  # the reference's final LayerNorm (resi_dual.py)


class DualStream:
    """x_d of one stack during one forward (not a module: nothing to save, nothing to move between devices)."""

    def __init__(self) -> None:
        self.x_d: torch.Tensor | None = None

    def reset(self, *_: Any) -> None:  # also a forward pre-hook of the stack
        self.x_d = None


class ResiDualOutput(nn.Module):
    """The stack's output x_a + LN_d(x_d), in place of fairseq's final norm."""

    def __init__(self, dim: int, norm_type: str, stream: DualStream) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=OUTPUT_NORM_EPS) if norm_type == "layernorm" else RMSNorm(dim, eps=OUTPUT_NORM_EPS)
        self.stream = stream

    def forward(self, x_a: torch.Tensor) -> torch.Tensor:
        x_d, self.stream.x_d = self.stream.x_d, None
        return x_a + self.norm(x_a if x_d is None else x_d)  # no layer ran (LayerDrop): x_d is still the input


@register
class ResiDual(LayoutScheme):
    name = "residual"

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        if getattr(cfg, "checkpoint_activations", False):
            raise ValueError("--layout-scheme residual: activation checkpointing would add each sublayer to x_d twice")
        stream = DualStream()
        for layer in stack.layers:
            layer.dual_stream = stream
        dim = getattr(cfg, side).embed_dim  # fairseq's final norm's size
        stack.layer_norm = ResiDualOutput(dim, NormVariant.of(cfg).norm_type, stream)
        stack.register_forward_pre_hook(stream.reset)

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        stream = layer.dual_stream
        stream.x_d = (layer.layer_input if stream.x_d is None else stream.x_d) + x
        return residual + x
