"""T-Fixup (Huang et al. 2020): no LayerNorm (each becomes nn.Identity, so DDP sees no unused parameter), the plain
residual x + f(x), and the authors' rescaled initialisation (their `fixup_initialization`): docs/warmup_free.md.
"""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from .schemes import LayoutScheme, drop_layer_norms, register, xavier_ffn_

ENCODER_GAIN = 0.67  # x N^(-1/4)
DECODER_DEPTH_FACTOR = 9  # (9M)^(-1/4)


def embedding_scale(layers: int) -> float:
    """The factor on an embedding matrix of a stack of `layers` layers: (9 layers)^(-1/4)."""
    return (DECODER_DEPTH_FACTOR * layers) ** -0.25


@register
class TFixup(LayoutScheme):
    name = "tfixup"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        layers = getattr(cfg, side).layers  # N: the layers of the stack this layer belongs to
        drop_layer_norms(layer)
        scale = ENCODER_GAIN * layers ** -0.25 if side == "encoder" else embedding_scale(layers)  # (9M)^(-1/4)
        xavier_ffn_(layer)
        for linear in (layer.fc1, layer.fc2):
            linear.weight.data.mul_(scale)
        for name in ("self_attn", "encoder_attn"):
            attention = getattr(layer, name, None)
            if attention is None:
                continue
            attention.out_proj.weight.data.mul_(scale)
            undo_gain = math.sqrt(2) if attention.qkv_same_dim else 1.0  # fairseq's gain 1/sqrt(2), see above
            attention.v_proj.weight.data.mul_(undo_gain * scale)

    def build_model(self, model: nn.Module, args: Any) -> None:
        model.encoder.embed_tokens.weight.data.mul_(embedding_scale(int(args.encoder_layers)))
        if model.decoder.embed_tokens is not model.encoder.embed_tokens:
            model.decoder.embed_tokens.weight.data.mul_(embedding_scale(int(args.decoder_layers)))
