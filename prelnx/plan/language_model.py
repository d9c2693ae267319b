"""The fairseq arguments of a decoder-only language model: fairseq's `language_modeling` task, the `cross_entropy`
criterion (next-token loss in bits per token) and a decoder-only transformer.

Layouts (fairseq/models/transformer/transformer_decoder.py, as transformer_lm builds it):
- post = `--arch transformer_lm`: a LayerNorm after each residual add, no final LayerNorm, no embedding LayerNorm.
- pre = `--arch transformer_lm --decoder-normalize-before`: a LayerNorm before each sublayer and a final LayerNorm
  after the last layer (the paper's Figure 1b).
- the norm placements (peri, reorder, mixln, residual, lnscale), and other norms or QK-Norm: the plugin's
  `--arch prelnx_transformer_lm` (transformer_lm with the plugin's decoder; its options from plan/layout.py).
The model's dimensions are model.decoder_layers, embed_dim, ffn_dim and attention_heads (null: transformer_lm's
6 layers, d 512, FFN 2048, 8 heads). embed_dim also sets --decoder-input-dim and --decoder-output-dim, whose
transformer_lm defaults are 512 whatever the model's width (a d-128 model would otherwise embed in 512 and project).
Samples are data.tokens_per_sample tokens (data.sample_break_mode: none cuts the text across lines, complete packs
whole lines). The optimizer, schedule, batching, checkpoints and validation grain are every task's (plan/common.py).
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
    # Pre-LN and the placements built on it: a norm before each sublayer and transformer_lm's final norm
    argv += normalize_before_argv(config, ("decoder",))
    if m.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    return argv + dropout_argv(config)
