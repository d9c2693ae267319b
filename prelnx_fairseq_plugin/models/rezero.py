"""ReZero (Bachlechner, Majumder, Mao, Cottrell & McAuley 2020, "ReZero is All You Need: Fast Convergence at Large
Depth", arXiv:2003.04887; code: github.com/majumderb/rezero, and Transformer-Clinic's `--init-type rezero`), in
its two forms:

  rezero          no LayerNorm:              x_{i+1} = x_i + a * f_i(x_i)
  rezero_postln   Post-LN's norms kept:      x_{i+1} = LN(x_i + a * f_i(x_i))
                  a = 0 at initialisation in both

One scalar a per layer, shared by the layer's sublayers (self-attention and FFN in the encoder; self-attention,
cross-attention and FFN in the decoder), as in the authors' `RZTXEncoderLayer` / `RZTXDecoderLayer` (`resweight`)
and in Transformer-Clinic (`rezero_weight`). f_i(x) is the sublayer's output after dropout (fairseq's order; the
authors' layers scale before or after dropout, which is the same product).

`rezero`: the authors' layers have no LayerNorm; at initialisation every layer is the identity, so the model's
output is its embeddings' projection. LayerNorms are replaced by nn.Identity (no parameters, nothing unused for DDP).

`rezero_postln`: fairseq's Post-LN layer with the scalar on the residual branch, as Transformer-Clinic's layer code
builds it for an `--init-type` that contains "rezero" but is not "rezero" itself (it adds `rezero_weight` for any
such type and drops the LayerNorms only for "rezero"; with normalize_before false the norm follows the add). At
initialisation each sublayer is LN(x + 0) = LN(x), so an encoder layer is LN2(LN1(x)) and a decoder layer
LN3(LN2(LN1(x))): the residual branches contribute nothing until a moves, as in `rezero`, but every layer's output
has the norm's scale. Nothing else changes but the FFN's init (below): fairseq's LayerNorms, fairseq's attention.

FFN initialisation (`--rezero-ffn-init`, REZERO_FFN_INITS; both forms):
  xavier   the default: Transformer-Clinic's layers (fairseq/fairseq/modules/transformer_layer.py at commit
           70f72b708ab074db5ca3726494e3263516041159, lines 91-92 and 436-437) build fc1/fc2 with the file's `Linear`
           helper (line 688: xavier_uniform_ weight, bias 0) for every --init-type, rezero included, so fc1/fc2 are
           re-drawn here as Admin's are. Every shipped ReZero config (configs/warmup_free/rezero_iwslt14.yaml, the
           warm-up-free sweeps) follows Clinic, whose IWSLT14 recipe it transcribes.
  torch    majumderb/rezero's `RZTXEncoderLayer` / `RZTXDecoderLayer` build the FFN with torch's `nn.Linear` (Kaiming-
           uniform a = sqrt(5), non-zero bias), which is also fairseq 0.12's own FFN init: at IWSLT14 size fc1's std
           0.0255 against Xavier's 0.0361, an FFN branch variance about 1/8 of Clinic's.

Weight decay: a is a parameter like any other, and fairseq's `--weight-decay` decays it with the rest, as in
Transformer-Clinic's ReZero recipe (nmt-experiments/iwslt14_de-en.md at commit
70f72b708ab074db5ca3726494e3263516041159: `--init-type rezero --weight-decay 0.0001`, one parameter group).
majumderb/rezero states no weight-decay rule for a; prelnx has no option to exclude it (none is needed to run
either recipe).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, drop_layer_norms, register

REZERO_FFN_INITS = ("xavier", "torch")  # Transformer-Clinic's `Linear` (the default), majumderb/rezero's nn.Linear


def xavier_ffn_(layer: nn.Module) -> None:
    """Transformer-Clinic's `Linear` for fc1 and fc2: xavier_uniform_ weight, zero bias."""
    for linear in (layer.fc1, layer.fc2):
        nn.init.xavier_uniform_(linear.weight)
        nn.init.zeros_(linear.bias)


@register
class ReZero(LayoutScheme):
    name = "rezero"
    keeps_layer_norms = False

    def __init__(self, args: Any) -> None:
        from fairseq import utils

        super().__init__(args)
        self.ffn_init = str(utils.safe_getattr(args, "rezero_ffn_init", None) or REZERO_FFN_INITS[0])
        if self.ffn_init not in REZERO_FFN_INITS:
            raise ValueError(f"--rezero-ffn-init: unknown {self.ffn_init!r}; allowed: {', '.join(REZERO_FFN_INITS)}")

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        if not self.keeps_layer_norms:
            drop_layer_norms(layer)
        if self.ffn_init == "xavier":
            xavier_ffn_(layer)
        layer.rezero_alpha = nn.Parameter(torch.zeros(1))

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual + layer.rezero_alpha * x


@register
class ReZeroPostLN(ReZero):
    """ReZero with Post-LN's LayerNorms kept: LN(x + a * f(x)); fairseq's layer applies the norm after the add."""

    name = "rezero_postln"
    keeps_layer_norms = True
