"""B2T connection (Takase, Kiyono, Kobayashi & Suzuki 2022, "On Layer Normalizations and Residual Connections in
Transformers", arXiv:2206.00330, published as "B2T Connection: Serving Stability and Performance in Deep
Transformers", Findings of ACL 2023; code: github.com/takase/b2t_connection, `--residual-bottom-to-top`).

Post-LN plus the layer's input x added before its last LayerNorm, a gradient path around every other norm:

  encoder   h = LN1(x + SA(x));                   y = LN2(h + FFN(h) + x)
  decoder   h1 = LN1(x + SA(x)); h2 = LN2(h1 + CA(h1));   y = LN3(h2 + FFN(h2) + x)

(x without dropout; the sublayers' outputs after dropout, as in fairseq.) The authors' code also rescales every
non-LayerNorm weight of the layer, biases excluded, by N^(-1/2) for a stack of N layers (`rescaling_init`);
prelnx follows the code (B2T_RESCALE): takase/b2t_connection at commit 4d80167fe2d58c1a4dc93545bb319c252dfc36e4
(fairseq/modules/transformer_layer.py, `rescaling_init`), with the README recipe of the next commit
(6d97ab8365bc5d48c5700926403c536e15a9a809; configs/warmup_free/b2t_iwslt14.yaml). The 2022 code had no rescaling.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .norms import is_layer_norm
from .schemes import LayoutScheme, register, stack_layers, sublayer_count

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
                    parameter.data.mul_(stack_layers(cfg, side) ** -0.5)

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        if index == layer.b2t_last_sublayer:
            return residual + x + layer.layer_input
        return residual + x
