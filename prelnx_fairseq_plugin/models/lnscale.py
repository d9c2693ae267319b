"""LayerNorm Scaling (Sun, Song, Li, Yin, Zheng & Liu, "The Curse of Depth in Large Language Models",
arXiv:2502.05795): Pre-LN whose every sublayer-input norm output is divided by sqrt(l), l the layer's place in its
stack counted from 1:

  x_{i+1} = x_i + F_i(LN(x_i) / sqrt(l))                        and Pre-LN's final LN, unscaled

Reference read: lmsdss/LayerNorm-Scaling at commit 3ac54dde961b04780b152bc8b38b71b2f8e1c16a,
peft_pretraining/modeling_llama.py (`LlamaDecoderLayer.forward`, the 'LNS' branch): input_layernorm's and
post_attention_layernorm's outputs times 1 / math.sqrt(self.layer_index + 1); the final norm is not scaled. Here a
forward hook scales each of the layer's input norms (a decoder's cross-attention norm too: the rule is every norm
of block l); encoder and decoder count their own layers. The reference's case mismatch of `NORM_TYPE` against 'LNS'
is in docs/placements.md: prelnx follows the formula. Its README asks for plain (not depth-scaled) init, as
fairseq's is. Deviations, outside the placement: --norm-type's norm (the reference's LLaMA uses RMSNorm); fairseq's
attention, ReLU FFN, positions and init.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import INPUT_NORMS, LayoutScheme, register


def _depth_scaled(module: nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
    return output * module.depth_scale


@register
class LayerNormScaling(LayoutScheme):
    name = "lnscale"

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        for number, layer in enumerate(stack.layers, start=1):
            for norm in (getattr(layer, name, None) for name in INPUT_NORMS):
                if norm is not None:
                    norm.depth_scale = number**-0.5  # 1 / sqrt(l), l counted from 1
                    norm.register_forward_hook(_depth_scaled)
