"""`--arch prelnx_<preset>`: fairseq's transformer with RMSNorm, DyT, DeepNorm, QK-Norm, or a layout scheme.

Each of fairseq's presets exists as prelnx_<preset>; with every option at its default the model is fairseq's
transformer, module for module. Where the norms sit is fairseq's --encoder/--decoder-normalize-before; what a scheme
is built on is its row of prelnx/layouts.py, checked by prelnx's config. The formulas: this folder's modules.
"""

from __future__ import annotations

import functools
from dataclasses import fields
from typing import Any, Callable

import torch
from fairseq.distributed import fsdp_wrap
from fairseq.models import register_model, register_model_architecture
from fairseq.models import transformer as fairseq_transformer
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerEncoderBase, TransformerModel
from fairseq.modules.checkpoint_activations import checkpoint_wrapper
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase, TransformerEncoderLayerBase
from torch import nn

from prelnx.layouts import ALL_NORMS, ARCH_PRESETS  # ALL_NORMS: the one owner of the norms' names

from .norms import NormVariant
from .qk_norm_attention import normalize_qk
from .schemes import NO_SCHEME, SCHEMES, LayoutScheme, make_scheme, scheme_class

MODEL_NAME = "prelnx_transformer"


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
    """fairseq's encoder layer (same forward, same module names), changed by `_built_layer` once fairseq built it."""


class NormalizedDecoderLayer(_ScaledResidual, TransformerDecoderLayerBase):
    """fairseq's decoder layer, as NormalizedEncoderLayer is the encoder's."""


def deepnorm_coefficients(side: str, encoder_layers: int, decoder_layers: int) -> tuple[float, float]:
    """DeepNorm (Wang et al. 2022, arXiv:2203.00555): a Post-LN sublayer becomes x -> LN(alpha * x + f(x)), with the
    paper's beta-scaled Xavier init (biases keep fairseq's). (alpha, beta) of the paper's encoder-decoder table (also
    in docs/variants.md): the residual weight in LN(alpha * x + f(x)), and the xavier_normal_ gain of v_proj,
    out_proj, fc1 and fc2 (the decoder's depend on M only). The same values are in xformers
    (`get_deepnorm_coefficients`); Microsoft's torchscale (the paper's code) multiplies the existing init by
    1.15 * (N^4 M)^(-1/16) for the encoder instead: we follow the paper."""
    if side == "encoder":
        depth = (encoder_layers**4 * decoder_layers) ** (1 / 16)
        return 0.81 * depth, 0.87 / depth
    return (3 * decoder_layers) ** 0.25, (12 * decoder_layers) ** -0.25


def deepnorm_init_(layer: nn.Module, beta: float) -> None:
    """Re-initialise one fairseq transformer layer's weights as DeepNet does (biases untouched)."""
    for attention_name in ("self_attn", "encoder_attn"):
        attention = getattr(layer, attention_name, None)
        if attention is None:
            continue
        for name, gain in (("q_proj", 1.0), ("k_proj", 1.0), ("v_proj", beta), ("out_proj", beta)):
            nn.init.xavier_normal_(getattr(attention, name).weight, gain=gain)
    nn.init.xavier_normal_(layer.fc1.weight, gain=beta)
    nn.init.xavier_normal_(layer.fc2.weight, gain=beta)


def _built_layer(layer: nn.Module, cfg: Any, side: str) -> nn.Module:
    """A layer fairseq has just built, changed only where the variant or the scheme says so, then wrapped as fairseq's
    build_encoder_layer / build_decoder_layer wrap it (activation checkpointing, FSDP)."""
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
    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)


class NormalizedTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg: Any, dictionary: Any, embed_tokens: nn.Embedding, return_fc: bool = False) -> None:
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        build_stack(self, cfg, "encoder")

    def build_encoder_layer(self, cfg: Any) -> nn.Module:
        return _built_layer(NormalizedEncoderLayer(cfg, return_fc=self.return_fc), cfg, "encoder")


class NormalizedTransformerDecoder(TransformerDecoderBase):
    def __init__(self, cfg: Any, dictionary: Any, embed_tokens: nn.Embedding, no_encoder_attn: bool = False) -> None:
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        build_stack(self, cfg, "decoder")

    def build_decoder_layer(self, cfg: Any, no_encoder_attn: bool = False) -> nn.Module:
        return _built_layer(NormalizedDecoderLayer(cfg, no_encoder_attn), cfg, "decoder")


def build_stack(stack: nn.Module, cfg: Any, side: str) -> None:
    """Once fairseq has built the stack: its norms swapped, the scheme's final norm and its changes by layer place."""
    NormVariant.of(cfg).swap_norms(stack)  # layer_norm (Pre-LN), layernorm_embedding
    scheme = make_scheme(cfg)
    if scheme is not None:
        stack.layer_norm = scheme.final_norm(stack, cfg, side, stack.layer_norm)
        scheme.build_stack(stack, cfg, side)


def check_variant(args: Any) -> None:
    """Refuse the combinations that are not a defined model (the prelnx config refuses them first)."""
    variant = NormVariant.of(args)
    if variant.norm_type not in ALL_NORMS:
        raise ValueError(f"--norm-type: unknown {variant.norm_type!r}; allowed: {', '.join(ALL_NORMS)}")
    if variant.deepnorm and any(getattr(args, f"{side}_normalize_before", False) for side in ("encoder", "decoder")):
        raise ValueError("--deepnorm is a Post-LN scheme; drop --encoder/--decoder-normalize-before")
    if variant.deepnorm and variant.norm_type == "dyt":  # alpha up-weights a stream only a statistical norm rescales
        raise ValueError("--deepnorm needs a statistical norm (--norm-type layernorm or rmsnorm), not dyt")
    if variant.deepnorm and scheme_class(args) is not None:
        raise ValueError("--deepnorm and --layout-scheme/--layout-file are two layouts: choose one")


@register_model(MODEL_NAME)
class NormalizedTransformerModel(TransformerModel):
    @classmethod
    def add_args(cls, parser: Any) -> None:
        super().add_args(parser)
        # No argparse defaults here, as in fairseq's own add_args: the architecture functions set them.
        parser.add_argument("--norm-type", choices=ALL_NORMS, help="the module in place of every LayerNorm")
        parser.add_argument("--dyt-init-alpha", type=float, metavar="A", help="DyT: initial alpha (default 0.5)")
        parser.add_argument("--deepnorm", action="store_true", help="Post-LN with residual alpha*x + f(x), beta init")
        parser.add_argument("--qk-norm", action="store_true", help="normalise queries and keys per head")
        parser.add_argument("--layout-scheme", choices=(NO_SCHEME, *SCHEMES), help="a warm-up-free scheme or a placement")
        parser.add_argument("--layout-file", metavar="PATH.py:CLASS", help="a user's own scheme (docs/your_layout.md)")
        parser.add_argument("--layout-options", metavar="JSON", help="the layout's declared options (layouts.Option)")

    @classmethod
    def build_model(cls, args: Any, task: Any) -> NormalizedTransformerModel:
        check_variant(args)
        model = super().build_model(args, task)
        scheme = make_scheme(args)
        if scheme is not None:  # after every layer: T-Fixup's embeddings, Admin's profiling pass
            scheme.build_model(model, args)
        return model

    @classmethod
    def build_encoder(cls, args: Any, src_dict: Any, embed_tokens: nn.Embedding) -> NormalizedTransformerEncoder:
        return NormalizedTransformerEncoder(TransformerConfig.from_namespace(args), src_dict, embed_tokens)

    @classmethod
    def build_decoder(cls, args: Any, tgt_dict: Any, embed_tokens: nn.Embedding) -> NormalizedTransformerDecoder:
        cfg = TransformerConfig.from_namespace(args)
        return NormalizedTransformerDecoder(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)


def _architecture(preset: Callable[[Any], None], args: Any) -> None:
    """prelnx_<preset>: the defaults of the options the command line left out (as fairseq's presets do), then fairseq's."""
    variant = {f.name: f.default for f in fields(NormVariant)}  # norm_type, deepnorm, qk_norm, dyt_init_alpha
    for name, default in {**variant, "layout_scheme": NO_SCHEME, "layout_file": "", "layout_options": "{}"}.items():
        if getattr(args, name, None) is None:
            setattr(args, name, default)
    preset(args)


for _name in ARCH_PRESETS:  # fairseq's preset function of each name -> prelnx_<name>
    _preset = getattr(fairseq_transformer, "base_architecture" if _name == "transformer" else _name)
    register_model_architecture(MODEL_NAME, f"prelnx_{_name}")(functools.partial(_architecture, _preset))
