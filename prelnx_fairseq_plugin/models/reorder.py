"""The reordered norm of OLMo 2 (Team OLMo, "2 OLMo 2 Furious", arXiv:2501.00656): no norm on a sublayer's input,
a norm on its output before the residual add:

  x_{i+1} = x_i + Dropout(Norm_i(F_i(x_i)))                      and a final norm after the last layer

Reference read: Hugging Face transformers, src/transformers/models/olmo2/modular_olmo2.py at commit
46474e6759e4160bb54fb49fd0a8fdd71d5ac933: `Olmo2DecoderLayer` (post_attention_layernorm and
post_feedforward_layernorm on the sublayers' outputs, before the adds) and `Olmo2Model`'s final norm. OLMo 2's
QK-norm is the separate --qk-norm here, so the two changes can be measured apart.
Here: fairseq's Pre-LN layer whose input norms become the identity, plus Peri-LN's output norms and moved dropout
(a `PeriLN` subclass). Deviations, outside the placement: --norm-type's norm (OLMo 2's is RMSNorm); --qk-norm
per head (OLMo 2's over all heads); fairseq's attention, ReLU FFN, positions and init.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from .peri import PeriLN
from .schemes import INPUT_NORMS, register


@register
class Reorder(PeriLN):
    name = "reorder"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        for name in INPUT_NORMS:  # by name: a --qk-norm attention's own head norms stay
            if getattr(layer, name, None) is not None:
                setattr(layer, name, nn.Identity())
        super().build_layer(layer, cfg, side)
