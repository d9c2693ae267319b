"""B2T connection (Takase et al. 2022, code: takase/b2t_connection, `--residual-bottom-to-top`): Post-LN plus the
layer's input x (without dropout) added before its last LayerNorm, and the authors' 2023 code's `rescaling_init`
(B2T_RESCALE); the formulas per stack, the commits and the recipe: docs/warmup_free.md ("B2T's rescaling").
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .norms import is_layer_norm
from .schemes import LayoutScheme, register, sublayer_count

B2T_RESCALE = True  # the authors' code's rescaling_init (see the docstring)


@register
class B2T(LayoutScheme):
    name = "b2t"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        layer.b2t_last_sublayer = sublayer_count(layer) - 1
        if B2T_RESCALE:  # the authors' `rescaling_init`: every non-LayerNorm weight of the layer x N^(-1/2)
            norms = {id(p) for module in layer.modules() if is_layer_norm(module) for p in module.parameters()}
            for name, parameter in layer.named_parameters():
                if name.endswith("weight") and id(parameter) not in norms:
                    parameter.data.mul_(getattr(cfg, side).layers ** -0.5)

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        if index == layer.b2t_last_sublayer:
            return residual + x + layer.layer_input
        return residual + x
