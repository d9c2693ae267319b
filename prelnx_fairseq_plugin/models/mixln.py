"""Mix-LN (Li, Yin & Liu, "Mix-LN: Unleashing the Power of Deeper Layers by Combining Pre-LN and Post-LN",
ICLR 2025, arXiv:2412.13795): the first floor(alpha L) layers of a stack of L are Post-LN, the rest Pre-LN, and
the stack ends with a final norm:

  layer l < floor(alpha L)   x_{i+1} = LN(x_i + F_i(x_i))           (Post-LN)
  layer l >= floor(alpha L)  x_{i+1} = x_i + F_i(LN(x_i))           (Pre-LN)        (l counted from 0)

alpha = model.mixln_alpha (--layout-options; declared as prelnx/layouts.py MIXLN_ALPHA), 0.25 the paper's value.

Reference read: pixeli99/MixLN at commit ff458269dff837f1900025fb7cc864b404b9c7e6,
peft_pretraining/modeling_llama.py: NORM_TYPE=post_pre builds `LlamaDecoderLayer(config, layer_index)` as Post-LN
when layer_index < POST_NUM (an integer of the run scripts: 3 of 12 layers, 6 of 24, which alpha with floor
gives) and `LlamaModel` applies its final norm whatever the layout. Here each of fairseq's Pre-LN layers is
switched to Post-LN by its `normalize_before` once the stack is built; encoder and decoder count their own layers.
Deviations, outside the placement: --norm-type's norm (the reference's LLaMA uses RMSNorm); fairseq's attention,
ReLU FFN, positions and init.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from prelnx.layouts import post_ln_layers

from .schemes import LayoutScheme, register


@register
class MixLN(LayoutScheme):
    name = "mixln"

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        alpha = self.option("mixln_alpha")  # declared on its row (prelnx/layouts.py MIXLN_ALPHA: [0, 1], 0.25)
        for layer in list(stack.layers)[: post_ln_layers(alpha, len(stack.layers))]:
            layer.normalize_before = False
