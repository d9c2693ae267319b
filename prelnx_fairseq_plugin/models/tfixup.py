"""T-Fixup (Huang, Perez, Ba & Volkovs 2020, "Improving Transformer Optimization Through Better Initialization",
ICML 2020; code: github.com/layer6ai-labs/T-Fixup, `--Tfixup --dont-use-layernorm`).

No LayerNorm anywhere; the plain residual x + f(x); a rescaled initialisation. For N encoder and M decoder layers,
as the authors' code does it (their `fixup_initialization` and embedding scaling):

  encoder layer   fc1, fc2, self_attn.out_proj and self_attn.v_proj weights  x 0.67 N^(-1/4)
  decoder layer   fc1, fc2, self_attn.out_proj, encoder_attn.out_proj, self_attn.v_proj and encoder_attn.v_proj
                  weights  x (9M)^(-1/4)
  embeddings      drawn N(0, d^(-1/2)) (fairseq's Embedding init), then the encoder's x (9N)^(-1/4) and the
                  decoder's x (9M)^(-1/4) (left alone when it is the encoder's: --share-all-embeddings)
  v_proj          fairseq draws q/k/v_proj with xavier_uniform_(gain=1/sqrt(2)) when q, k and v have the same size;
                  the authors undo that gain (x sqrt(2)) before scaling
  fc1, fc2        re-drawn with xavier_uniform_ (bias 0), as the authors' fairseq `Linear` helper drew them (fairseq
                  0.12 keeps torch's default), before scaling

q_proj, k_proj and the biases keep fairseq's init. The recipe trains without warm-up
(configs/warmup_free/tfixup_iwslt14.yaml). Which optimizer the authors used (layer6ai-labs/T-Fixup at commit
b17e166d9f60671a92c3f39e24c9b8c93995e5a3: `--optimizer adam`, whose `fairseq/optim/adam.py` runs RAdam without
apex) is open, so both readings ship (`tfixup_iwslt14.yaml`, `tfixup_iwslt14_radam.yaml`; docs/warmup_free.md).
Every LayerNorm of a layer becomes an nn.Identity (the authors' unused `encoder_attn_layer_norm` fails DDP's
unused-parameter check).
"""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from .schemes import LayoutScheme, drop_layer_norms, register, stack_layers, xavier_ffn_

ENCODER_GAIN = 0.67  # x N^(-1/4)
DECODER_DEPTH_FACTOR = 9  # (9M)^(-1/4)


def embedding_scale(layers: int) -> float:
    """The factor on an embedding matrix of a stack of `layers` layers: (9 layers)^(-1/4)."""
    return (DECODER_DEPTH_FACTOR * layers) ** -0.25


@register
class TFixup(LayoutScheme):
    name = "tfixup"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        layers = stack_layers(cfg, side)
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
