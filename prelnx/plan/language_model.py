"""The fairseq arguments of a decoder-only language model: `language_modeling`, `cross_entropy` (bits per token) and
`transformer_lm` (fairseq/models/transformer/transformer_decoder.py; pre: --decoder-normalize-before), or for the other
layouts, norms and QK-Norm the plugin's `prelnx_transformer_lm`. embed_dim also sets --decoder-input-dim and
--decoder-output-dim, which transformer_lm otherwise leaves at 512 whatever the width.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import (dropout_argv, normalize_before_argv, shape_argv, task_argv, uses_plugin_model,
                                variant_argv)

LM_PLUGIN_ARCH = "prelnx_transformer_lm"  # the plugin's decoder-only model (prelnx_fairseq_plugin/models/normalized_lm.py)


def language_model_argv(config: Config, data: Path) -> list[str]:
    m, d = config.model, config.data
    plugin = uses_plugin_model(config)
    argv = task_argv(data, "language_modeling", "--criterion", "cross_entropy", "--sample-break-mode",
                     d.sample_break_mode, "--tokens-per-sample", str(d.tokens_per_sample),
                     "--arch", LM_PLUGIN_ARCH if plugin else m.arch)  # fmt: skip
    argv += variant_argv(config)  # the plugin model's options ([] for fairseq's own)
    argv += shape_argv(config, ("decoder",), ("embed-dim", "input-dim", "output-dim"))
    argv += normalize_before_argv(config, ("decoder",))
    if m.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    return argv + dropout_argv(config)
