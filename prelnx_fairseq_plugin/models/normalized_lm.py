"""`--arch prelnx_transformer_lm`: fairseq's decoder-only `transformer_lm` with the plugin's norms and placements.

For `--task language_modeling`: fairseq's `TransformerLanguageModel` (same dataclass and defaults) whose decoder is
the plugin's `NormalizedTransformerDecoder` without cross-attention; its options are `NormalizedLMConfig`'s (the
placements: those whose row of prelnx/layouts.py has the language-model task), e.g. Peri-LN:
`--arch prelnx_transformer_lm --decoder-normalize-before --layout-scheme peri`. With every option at its default
the model is fairseq's `transformer_lm`, weight for weight for the same seed. fairseq's other LM presets go through
`base_lm_architecture`, which forces decoder_normalize_before, so no Post-LN-based placement could be built on them.
Adaptive input and character embeddings are refused. As in transformer_lm, --decoder-input-dim and
--decoder-output-dim default to 512, not to --decoder-embed-dim.
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
from omegaconf import OmegaConf

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
    layout_options: str = field(default="{}", metadata={"help": "the layout's declared options, JSON (layouts.Option)"})


@register_model(MODEL_NAME, dataclass=NormalizedLMConfig)
class NormalizedTransformerLanguageModel(TransformerLanguageModel):
    @classmethod
    def build_model(cls, cfg: Any, task: Any) -> "NormalizedTransformerLanguageModel":
        # A flat namespace (fairseq passes a dataclass model its DictConfig): TransformerConfig copies the plugin's
        # extra options from a namespace only.
        args = cfg if isinstance(cfg, Namespace) else Namespace(**OmegaConf.to_container(cfg, resolve=True))
        check_variant(args)  # no --deepnorm: the model has no such option (fairseq's parser refuses it)
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
