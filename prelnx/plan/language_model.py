"""The fairseq arguments of a decoder-only language model: fairseq's `language_modeling` task, `cross_entropy`
(next-token loss in bits per token) and `transformer_lm` (fairseq/models/transformer/transformer_decoder.py): post
as it is, pre with --decoder-normalize-before (a final LayerNorm too: Figure 1b); the other layouts, norms and
QK-Norm are the plugin's `prelnx_transformer_lm` (plan/layout.py). embed_dim also sets --decoder-input-dim and
--decoder-output-dim, which transformer_lm otherwise leaves at 512 whatever the width.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import dropout_argv, given_argv
from prelnx.plan.layout import LM_PLUGIN_ARCH, normalize_before_argv, uses_plugin_model, variant_argv
from prelnx.plugin_path import PLUGIN_DIR


def language_model_argv(config: Config, data: Path) -> list[str]:
    """Task, model and criterion of a language-model run."""
    m, d = config.model, config.data
    plugin = uses_plugin_model(config)
    argv = [
        str(data),
        "--user-dir", str(PLUGIN_DIR),
        "--task", "language_modeling", "--criterion", "cross_entropy",
        "--sample-break-mode", d.sample_break_mode, "--tokens-per-sample", str(d.tokens_per_sample),
        "--arch", LM_PLUGIN_ARCH if plugin else m.arch,
    ]  # fmt: skip
    argv += variant_argv(config)  # the plugin model's options ([] for fairseq's own)
    argv += given_argv(
        ("--decoder-layers", m.decoder_layers),
        ("--decoder-embed-dim", m.embed_dim),
        ("--decoder-input-dim", m.embed_dim),
        ("--decoder-output-dim", m.embed_dim),
        ("--decoder-ffn-embed-dim", m.ffn_dim),
        ("--decoder-attention-heads", m.attention_heads),
    )
    argv += normalize_before_argv(config, ("decoder",))
    if m.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    return argv + dropout_argv(config)
