"""fairseq's transformer encoder and decoder layers (same forward, same module names), changed once built only where
the variant or the scheme says so; where the norm sits is fairseq's normalize_before.
"""

from __future__ import annotations

from typing import Any

import torch
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from torch import nn

from .deepnorm import deepnorm_coefficients, deepnorm_init_
from .norms import NormVariant
from .qk_norm_attention import normalize_qk
from .schemes import LayoutScheme, make_scheme


def _apply_variant(layer: nn.Module, cfg: Any, side: str) -> None:
    """What both layer kinds do once fairseq has built them."""
    variant = NormVariant.of(cfg)
    if variant.qk_norm:  # first: as if fairseq had built the attentions with their norms
        for attention in (layer.self_attn, getattr(layer, "encoder_attn", None)):
            if attention is not None:
                normalize_qk(attention, variant.norm, layer.quant_noise, layer.quant_noise_block_size)
    variant.swap_norms(layer)
    layer.residual_alpha = 1.0
    if variant.deepnorm:
        layer.residual_alpha, beta = deepnorm_coefficients(side, cfg.encoder.layers, cfg.decoder.layers)
        deepnorm_init_(layer, beta)
    layer.scheme = make_scheme(cfg)
    if layer.scheme is not None:
        layer.scheme.build_layer(layer, cfg, side)


class _ScaledResidual:
    """DeepNorm's residual, alpha * residual + x (alpha = 1 leaves fairseq's own residual), or the scheme's.

    fairseq's forward calls residual_connection once per sublayer, in order; forward numbers them (from 0 at every
    call, so activation checkpointing's re-run and incremental decoding count alike) and keeps the layer's input
    for the schemes that use it (B2T).
    """

    residual_alpha: float
    scheme: LayoutScheme | None
    layer_input: torch.Tensor | None = None
    _sublayer: int = 0

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        self._sublayer, self.layer_input = 0, x
        try:
            return super().forward(x, *args, **kwargs)  # type: ignore[misc]
        finally:
            self.layer_input = None  # not kept alive between calls

    def residual_connection(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        if self.scheme is not None:
            index, self._sublayer = self._sublayer, self._sublayer + 1
            return self.scheme.residual(self, index, x, residual)
        return residual * self.residual_alpha + x

    def extra_repr(self) -> str:
        return f"residual_alpha={self.residual_alpha:.4g}" if self.residual_alpha != 1.0 else ""


class NormalizedEncoderLayer(_ScaledResidual, TransformerEncoderLayerBase):
    def __init__(self, cfg: Any, return_fc: bool = False) -> None:
        super().__init__(cfg, return_fc=return_fc)
        _apply_variant(self, cfg, "encoder")


class NormalizedDecoderLayer(_ScaledResidual, TransformerDecoderLayerBase):
    def __init__(self, cfg: Any, no_encoder_attn: bool = False, add_bias_kv: bool = False, add_zero_attn: bool = False):
        super().__init__(cfg, no_encoder_attn=no_encoder_attn, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
        _apply_variant(self, cfg, "decoder")
