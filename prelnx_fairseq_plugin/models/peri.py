"""Peri-LN (Kim, Lee, Park, Oh, Kim, Yoo, Shin, Han, Shin & Yoo, "Peri-LN: Revisiting Normalization Layer in the
Transformer Architecture", ICML 2025, arXiv:2502.02732): a norm around each sublayer, on its input and on its
output before the residual add, the "sandwich" norm of Gemma 2 / Gemma 3:

  x_{i+1} = x_i + Dropout(LN_out,i(F_i(LN_in,i(x_i))))          and a final LN after the last layer

Reference read (the paper has no code of its own): Hugging Face transformers,
src/transformers/models/gemma2/modeling_gemma2.py at commit 9a80143ca26066ee3266749a57c7b3850d8843be,
`Gemma2DecoderLayer` (input_layernorm -> self_attn -> post_attention_layernorm -> add, pre_feedforward_layernorm ->
mlp -> post_feedforward_layernorm -> add) and `Gemma2Model`'s final norm.
Here: fairseq's Pre-LN layer (its input norms and final norm) plus one output norm per sublayer, `output_norms.<i>`,
applied in the residual hook to F's output before fairseq's residual dropout: the layer's `dropout_module` (used
once per sublayer, just before its add) moves to `branch_dropout`, after the norm.
Deviations, outside the placement: --norm-type's norms (eps 1e-5, Gemma's RMSNorm 1e-6); fairseq's attention, ReLU
FFN, positions and init (the same seed gives Pre-LN's weights plus unit norms); no soft-capping or sliding window.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, register, sublayer_count


@register
class PeriLN(LayoutScheme):
    name = "peri"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        """One --norm-type norm per residual sublayer on F's output (`output_norms`), and fairseq's residual dropout
        moved after it (`branch_dropout`; `dropout_module` becomes the identity)."""
        layer.output_norms = nn.ModuleList(self.make_norm(layer.embed_dim) for _ in range(sublayer_count(layer)))
        layer.branch_dropout = layer.dropout_module
        layer.dropout_module = nn.Identity()

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual + layer.branch_dropout(layer.output_norms[index](x))  # x: F's output, its dropout moved here
