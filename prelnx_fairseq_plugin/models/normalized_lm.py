"""`--arch prelnx_transformer_lm`: fairseq's decoder-only `transformer_lm` with the plugin's norms and placements.

For the language-model task (`--task language_modeling`). The registered model `prelnx_transformer_lm` is fairseq's
`TransformerLanguageModel` (same dataclass, same defaults: 6 layers, d 512, FFN 2048, 8 heads, Post-LN unless
--decoder-normalize-before) whose decoder is the plugin's `NormalizedTransformerDecoder` (the layers are fairseq's
TransformerDecoderLayer without cross-attention, as transformer_lm builds them). Its options, besides every
transformer_lm option (--decoder-layers, --decoder-embed-dim, --share-decoder-input-output-embed, ...):

  --decoder-normalize-before   Pre-LN: the layers' input norms and a final norm (required by peri, reorder, mixln
                               and lnscale, which are built on it; refused by residual, built on Post-LN)
  --norm-type {layernorm,rmsnorm,dyt}   the module in place of every LayerNorm (default layernorm)
  --dyt-init-alpha A           DyT's initial alpha (0.5)
  --qk-norm                    queries and keys normalised per head
  --layout-scheme {none,peri,reorder,mixln,residual,lnscale}
                               a norm placement (formulas and sources: peri.py, reorder.py, mixln.py, residual.py,
                               lnscale.py); which schemes the language model has is their row's tasks in
                               prelnx/layouts.py, checked by prelnx's config (the warm-up-free schemes and DeepNorm
                               are encoder-decoder recipes)
  --layout-file /abs/PATH.py:CLASS   a user's own scheme (docs/your_layout.md)
  --mixln-alpha A              Mix-LN's share of Post-LN layers (0.25)

e.g. Peri-LN: `--arch prelnx_transformer_lm --decoder-normalize-before --layout-scheme peri`; Post-LN:
`--arch prelnx_transformer_lm` alone. With every option at its default the model is fairseq's `transformer_lm`
(the `transformer_lm` arch, not its presets), module for module and, for the same seed, weight for weight.
Why not fairseq's other presets (transformer_lm_gpt, ...): they go through `base_lm_architecture`, which sets
decoder_normalize_before = True whatever the command says, so no Post-LN-based placement could be built on them.
Adaptive input and character embeddings (transformer_lm options) are refused: nothing here uses them.
Dimensions: as in fairseq's transformer_lm, --decoder-input-dim and --decoder-output-dim default to 512, not to
--decoder-embed-dim (a smaller model without them gets 512-wide embeddings and projections in and out).
"""

# No `from __future__ import annotations`: fairseq reads the config dataclass's field types as types.
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Any

from fairseq import utils
from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer_lm import (
    DEFAULT_MAX_TARGET_POSITIONS,
    TransformerLanguageModel,
    TransformerLanguageModelConfig,
)

from .mixln import MIXLN_DEFAULT_ALPHA
from .normalized_transformer import NormalizedTransformerDecoder, check_variant
from .norms import DYT_DEFAULT_ALPHA
from .schemes import NO_SCHEME

MODEL_NAME = "prelnx_transformer_lm"  # also its one architecture (fairseq registers a dataclass model's own name)


@dataclass
class NormalizedLMConfig(TransformerLanguageModelConfig):
    # Plain strings, checked by check_variant with the same messages as the translation model's.
    norm_type: str = field(default="layernorm", metadata={"help": "layernorm, rmsnorm or dyt in place of every LayerNorm"})
    dyt_init_alpha: float = field(default=DYT_DEFAULT_ALPHA, metadata={"help": "DyT: initial alpha"})
    qk_norm: bool = field(default=False, metadata={"help": "normalise queries and keys per head"})
    layout_scheme: str = field(default=NO_SCHEME, metadata={"help": "a norm placement: peri, reorder, mixln, "
                                                                     "residual, lnscale (none: Post-/Pre-LN)"})
    layout_file: str = field(default="", metadata={"help": "a user's own scheme, /abs/PATH.py:CLASS"})
    mixln_alpha: float = field(default=MIXLN_DEFAULT_ALPHA, metadata={"help": "Mix-LN: share of Post-LN layers"})


def _namespace(cfg: Any) -> Namespace:
    """The model's options as a flat namespace (fairseq passes a dataclass model its DictConfig): TransformerConfig
    copies the plugin's extra options from a namespace only."""
    if isinstance(cfg, Namespace):
        return cfg
    from omegaconf import OmegaConf

    return Namespace(**OmegaConf.to_container(cfg, resolve=True))


@register_model(MODEL_NAME, dataclass=NormalizedLMConfig)
class NormalizedTransformerLanguageModel(TransformerLanguageModel):
    """fairseq's transformer_lm whose decoder follows --norm-type, --qk-norm and --layout-scheme."""

    @classmethod
    def build_model(cls, cfg: Any, task: Any) -> "NormalizedTransformerLanguageModel":
        args = _namespace(cfg)
        check_variant(args, sides=("decoder",))
        if utils.safe_getattr(args, "deepnorm", False):
            raise ValueError("--deepnorm's coefficients are an encoder-decoder's; the language model has none")
        if args.character_embeddings or args.adaptive_input:
            raise ValueError(f"--arch {MODEL_NAME}: no --character-embeddings or --adaptive-input")
        # What TransformerLanguageModel.build_model does for a plain embedding, in its order (the same draws).
        if args.decoder_layers_to_keep:
            args.decoder_layers = len(args.decoder_layers_to_keep.split(","))
        if utils.safe_getattr(args, "max_target_positions", None) is None:
            args.max_target_positions = utils.safe_getattr(args, "tokens_per_sample", DEFAULT_MAX_TARGET_POSITIONS)
        embed_tokens = cls.build_embedding(args, task.source_dictionary, args.decoder_input_dim)
        decoder = NormalizedTransformerDecoder(TransformerConfig.from_namespace(args), task.target_dictionary,
                                               embed_tokens, no_encoder_attn=True)  # fmt: skip
        return cls(decoder)
