"""ReZero (Bachlechner et al. 2020): x_{i+1} = x_i + a f_i(x_i) with one scalar a per layer, a = 0 at init, the
LayerNorms nn.Identity (`rezero`) or kept as Post-LN's (`rezero_postln`, Transformer-Clinic's layer); the FFN's init
(`model.rezero_ffn_init`) and a's weight decay: docs/warmup_free.md.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, drop_layer_norms, register, xavier_ffn_


@register
class ReZero(LayoutScheme):
    name = "rezero"
    keeps_layer_norms = False

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        if not self.keeps_layer_norms:
            drop_layer_norms(layer)
        if self.option("rezero_ffn_init") == "xavier":  # declared on its row (prelnx/layouts.py REZERO_FFN_INIT)
            xavier_ffn_(layer)
        layer.rezero_alpha = nn.Parameter(torch.zeros(1))

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual + layer.rezero_alpha * x


@register
class ReZeroPostLN(ReZero):
    """ReZero with Post-LN's LayerNorms kept: LN(x + a * f(x)); fairseq's layer applies the norm after the add."""

    name = "rezero_postln"
    keeps_layer_norms = True
