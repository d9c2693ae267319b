"""The fairseq arguments of a decoder-only language model: `language_modeling`, `cross_entropy` (bits per token) and
`transformer_lm` (fairseq/models/transformer/transformer_decoder.py; pre: --decoder-normalize-before), or for the other
layouts, norms and QK-Norm the plugin's `prelnx_transformer_lm`. embed_dim also sets --decoder-input-dim and
--decoder-output-dim, which transformer_lm otherwise leaves at 512 whatever the width.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import dropout_argv, model_argv, task_argv

LM_PLUGIN_ARCH = "prelnx_transformer_lm"  # the plugin's decoder-only model (prelnx_fairseq_plugin/models/normalized_lm.py)


def language_model_argv(config: Config, data: Path) -> list[str]:
    d = config.data
    argv = task_argv(data, "language_modeling", "--criterion", "cross_entropy", "--sample-break-mode",
                     d.sample_break_mode, "--tokens-per-sample", str(d.tokens_per_sample))
    argv += model_argv(config, LM_PLUGIN_ARCH, ("decoder",), ("embed-dim", "input-dim", "output-dim"))
    if config.model.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    return argv + dropout_argv(config)
