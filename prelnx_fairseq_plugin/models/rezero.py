"""ReZero (Bachlechner, Majumder, Mao, Cottrell & McAuley 2020, "ReZero is All You Need: Fast Convergence at Large
Depth", arXiv:2003.04887; code: github.com/majumderb/rezero, and Transformer-Clinic's `--init-type rezero`).

No LayerNorm; each residual sublayer's output enters the shortcut through a learned scalar that starts at 0:

  x_{i+1} = x_i + a * f_i(x_i),   a = 0 at initialisation

One scalar per layer, shared by the layer's sublayers (self-attention and FFN in the encoder; self-attention,
cross-attention and FFN in the decoder), as in the authors' `ReZeroEncoderLayer` / `ReZeroDecoderLayer`
(`resweight`) and in Transformer-Clinic (`rezero_weight`). At initialisation every layer is the identity, so the
model's output is its embeddings' projection. (The paper's "ReZero + Post-Norm" variant, which keeps the norms, is
not built here.)

Weight decay: the authors exclude a from weight decay; fairseq applies one weight decay to every parameter, so
prelnx refuses `layout: rezero` with `optimizer.weight_decay` > 0 (prelnx's recipes use 0) rather than decaying a.
LayerNorms are replaced by nn.Identity (no parameters, nothing unused for DDP).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, drop_layer_norms, register


@register
class ReZero(LayoutScheme):
    name = "rezero"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        drop_layer_norms(layer)
        layer.rezero_alpha = nn.Parameter(torch.zeros(1))

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual + layer.rezero_alpha * x
