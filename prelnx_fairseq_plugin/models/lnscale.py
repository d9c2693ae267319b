"""LayerNorm Scaling (Sun, Song, Li, Yin, Zheng & Liu, "The Curse of Depth in Large Language Models",
arXiv:2502.05795): Pre-LN whose every sublayer-input norm output is divided by sqrt(l), l the layer's place in its
stack counted from 1:

  x_{i+1} = x_i + F_i(LN(x_i) / sqrt(l))                        and Pre-LN's final LN, unscaled

Reference read: lmsdss/LayerNorm-Scaling at commit 3ac54dde961b04780b152bc8b38b71b2f8e1c16a,
peft_pretraining/modeling_llama.py (`LlamaDecoderLayer.forward`, the 'LNS' branch): input_layernorm's and
post_attention_layernorm's (the pre-MLP norm's) outputs both multiplied by 1 / math.sqrt(self.layer_index + 1),
layer_index from 0; `LlamaModel`'s final norm is not scaled. Here the scale is applied to each of the layer's input
norms (self_attn_layer_norm, final_layer_norm, and in a decoder with cross-attention encoder_attn_layer_norm too:
the reference is decoder-only, and its rule, every norm of block l, is carried over) by a forward hook on the
norm (`depth_scale` on the module; its parameters and names stay fairseq's), set when the stack has built its
layers; the encoder and the decoder each count their own layers from 1.

A caveat of the reference at that commit: the layer lower-cases the NORM_TYPE environment variable and then
compares it with 'LNS' (upper case), so the branch reads as intended only if that comparison is meant case-blind;
prelnx follows the paper's formula, which that branch writes. Its README asks for plain (not depth-scaled)
initialisation with LNS: fairseq's init here is not depth-scaled.
Deviations, outside the placement: --norm-type's norm (LayerNorm by default; the reference's LLaMA uses RMSNorm);
fairseq's attention, ReLU FFN, positions and init.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, input_norms, register


def _depth_scaled(module: nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
    return output * module.depth_scale


def depth_scale(layer_number: int) -> float:
    """1 / sqrt(l), l counted from 1."""
    return layer_number ** -0.5


@register
class LayerNormScaling(LayoutScheme):
    name = "lnscale"

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        for number, layer in enumerate(stack.layers, start=1):
            for norm in input_norms(layer):
                norm.depth_scale = depth_scale(number)
                norm.register_forward_hook(_depth_scaled)
