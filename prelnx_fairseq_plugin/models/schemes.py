"""The warm-up-free layouts (`--layout-scheme`): what each changes in fairseq's Post-LN transformer, by hook.

A scheme is one published recipe that keeps Post-LN-like training stable without learning-rate warm-up by changing
the residual connection and/or the initialisation. Each lives in its own module (`admin`, `tfixup`, `rezero`:
rezero and rezero_postln, `b2t`), with its formula and sources, and registers itself here when imported
(`normalized_transformer` imports them all). A scheme acts at three points, all of them fairseq's own seams:

  build_layer(layer, cfg, side)   once fairseq has built an encoder or decoder layer: add parameters, drop the
                                  LayerNorms, rescale the initial weights
  residual(layer, i, x, residual) fairseq's `residual_connection(x, residual)` of sublayer i of the layer
                                  (encoder: 0 self-attention, 1 FFN; decoder: 0 self-attention, 1 cross-attention,
                                  2 FFN); x is the sublayer's output after dropout, residual its input;
                                  `layer.layer_input` is the layer's own input
  build_stack(stack, cfg, side)   once fairseq has built an encoder or decoder stack and its layers: what
                                  depends on a layer's place in the stack (its index l), or spans the stack
  build_model(model, args)        once the whole model is built (embeddings, a profiling forward pass)

Where the norms sit is fairseq's: a scheme says whether it is built on Post-LN (`pre_ln` false: every warm-up-free
scheme) or on fairseq's Pre-LN (`pre_ln` true: --encoder/--decoder-normalize-before, the layers' input norms and
the stacks' final norm; the placements `peri`, `reorder`, `mixln`, `lnscale`), and `check_variant` refuses a
command line that says otherwise. `norm_types`, `allows_qk_norm` and `language_model` say which --norm-type and
--qk-norm it is defined with, and whether the decoder-only model (`normalized_lm`) may use it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from .norms import is_layer_norm

SCHEMES: dict[str, type[LayoutScheme]] = {}
NO_SCHEME = "none"


class LayoutScheme:
    """The default hooks: fairseq's Post-LN unchanged."""

    name: ClassVar[str]
    pre_ln: ClassVar[bool] = False  # built on fairseq's Pre-LN (normalize_before) rather than Post-LN
    norm_types: ClassVar[tuple[str, ...]] = ("layernorm",)  # the --norm-type values it is defined with
    allows_qk_norm: ClassVar[bool] = False
    language_model: ClassVar[bool] = False  # defined for the decoder-only model too (no encoder, no cross-attention)

    def __init__(self, args: Any) -> None:
        self.args = args

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        """Called once fairseq has built `layer` (side: encoder or decoder)."""

    def build_stack(self, stack: nn.Module, cfg: Any, side: str) -> None:
        """Called once fairseq has built the encoder or decoder `stack` with its layers (`stack.layers`)."""

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual + x

    def build_model(self, model: nn.Module, args: Any) -> None:
        """Called once the whole model is built."""


def register(scheme: type[LayoutScheme]) -> type[LayoutScheme]:
    SCHEMES[scheme.name] = scheme
    return scheme


def scheme_name(cfg: Any) -> str:
    """The configured scheme's name ("none" when the option is absent: every model before this option)."""
    from fairseq import utils

    return str(utils.safe_getattr(cfg, "layout_scheme", None) or NO_SCHEME)


def make_scheme(cfg: Any) -> LayoutScheme | None:
    name = scheme_name(cfg)
    if name == NO_SCHEME:
        return None
    if name not in SCHEMES:
        raise ValueError(f"--layout-scheme: unknown {name!r}; allowed: {', '.join((NO_SCHEME, *SCHEMES))}")
    return SCHEMES[name](cfg)


def sublayer_count(layer: nn.Module) -> int:
    """Residual sublayers of a fairseq layer: 2 in the encoder, 3 in a decoder with cross-attention."""
    return 3 if getattr(layer, "encoder_attn", None) is not None else 2


def stack_layers(cfg: Any, side: str) -> int:
    """N, the number of layers of the encoder or decoder the layer belongs to."""
    return int(cfg.encoder.layers if side == "encoder" else cfg.decoder.layers)


def drop_layer_norms(layer: nn.Module) -> int:
    """Every LayerNorm of the layer becomes an nn.Identity (no parameters: none left unused, which DDP's unused-
    parameter check would refuse); the attribute names stay fairseq's so its forward runs unchanged."""
    dropped = 0
    for parent in list(layer.modules()):
        for name, child in list(parent.named_children()):
            if is_layer_norm(child):
                setattr(parent, name, nn.Identity())
                dropped += 1
    return dropped


INPUT_NORMS = ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")  # fairseq's, in sublayer order


def input_norms(layer: nn.Module) -> list[nn.Module]:
    """The layer's sublayer norms in sublayer order (self-attention, cross-attention if any, FFN): under Pre-LN
    (normalize_before) each is applied to its sublayer's input."""
    return [norm for norm in (getattr(layer, name, None) for name in INPUT_NORMS) if norm is not None]


def stack_norm_type(cfg: Any) -> str:
    """--norm-type of the model (layernorm when absent)."""
    from fairseq import utils

    return str(utils.safe_getattr(cfg, "norm_type", None) or "layernorm")
