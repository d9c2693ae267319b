"""ReZero (Bachlechner, Majumder, Mao, Cottrell & McAuley 2020, "ReZero is All You Need: Fast Convergence at Large
Depth", arXiv:2003.04887; code: github.com/majumderb/rezero, and Transformer-Clinic's `--init-type rezero`), in
its two forms:

  rezero          no LayerNorm:              x_{i+1} = x_i + a * f_i(x_i)
  rezero_postln   Post-LN's norms kept:      x_{i+1} = LN(x_i + a * f_i(x_i))
                  a = 0 at initialisation in both

One scalar a per layer, shared by the layer's sublayers, as in the authors' `RZTXEncoderLayer` / `RZTXDecoderLayer`
(`resweight`) and Transformer-Clinic (`rezero_weight`); f_i(x) is the sublayer's output after dropout (the same
product as the authors' order). `rezero` replaces the LayerNorms by nn.Identity (nothing unused for DDP);
`rezero_postln` is Transformer-Clinic's layer for an `--init-type` that contains "rezero" but is not "rezero"
(it adds `rezero_weight` and keeps the norms): at initialisation each layer is LN2(LN1(x)) (decoder LN3(LN2(LN1(x)))).

FFN initialisation (model.rezero_ffn_init, declared as prelnx/layouts.py REZERO_FFN_INIT; both forms):
  xavier   the default: Transformer-Clinic's layers (fairseq/fairseq/modules/transformer_layer.py at commit
           70f72b708ab074db5ca3726494e3263516041159, lines 91-92 and 436-437) build fc1/fc2 with the file's `Linear`
           helper (line 688: xavier_uniform_ weight, bias 0), rezero included; every shipped ReZero config follows it.
  torch    majumderb/rezero's layers build the FFN with torch's `nn.Linear` (Kaiming-uniform, non-zero bias), which
           is also fairseq 0.12's FFN init.

Weight decay decays a with the rest, as Transformer-Clinic's recipe (nmt-experiments/iwslt14_de-en.md at commit
70f72b708ab074db5ca3726494e3263516041159: `--init-type rezero --weight-decay 0.0001`, one parameter group).
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
