"""The fairseq arguments of a translation run: task, model (fairseq's transformer, or the plugin's subclass for
the normalisation variants) and criterion, with BLEU validation."""

from __future__ import annotations

import json
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import dropout_argv
from prelnx.plan.data import languages
from prelnx.plugin_path import PLUGIN_DIR


def translation_argv(config: Config, data: Path) -> list[str]:
    """Task, model and criterion of a translation run."""
    m, t, b = config.model, config.train, config.eval.bleu
    source, target = languages(config)
    variant = m.layout not in ("post", "pre") or m.norm != "layernorm" or m.qk_norm
    argv = [
        str(data),
        "--user-dir", str(PLUGIN_DIR),
        "--task", "translation", "--source-lang", source, "--target-lang", target,
        # The paper's layouts are fairseq's own transformer; the variants are the plugin's subclass of it.
        "--arch", f"prelnx_{m.arch}" if variant else m.arch,
    ]  # fmt: skip
    if variant:
        argv += ["--norm-type", m.norm]
        if m.layout == "deepnorm":
            argv.append("--deepnorm")
        elif m.layout not in ("post", "pre"):  # a warm-up-free scheme (docs/warmup_free.md)
            argv += ["--layout-scheme", m.layout] + (["--admin-init", m.admin_init] if m.layout == "admin" else [])
        if m.qk_norm:
            argv.append("--qk-norm")
    for flag, value in (
        ("--encoder-layers", m.encoder_layers),
        ("--decoder-layers", m.decoder_layers),
        ("--encoder-embed-dim", m.embed_dim),
        ("--decoder-embed-dim", m.embed_dim),
        ("--encoder-ffn-embed-dim", m.ffn_dim),
        ("--decoder-ffn-embed-dim", m.ffn_dim),
        ("--encoder-attention-heads", m.attention_heads),
        ("--decoder-attention-heads", m.attention_heads),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if m.layout == "pre":
        # fairseq's Pre-LN: LayerNorm before each sublayer plus a final LayerNorm after the last layer.
        argv += ["--encoder-normalize-before", "--decoder-normalize-before"]
    argv += dropout_argv(config)
    if m.share_all_embeddings:
        argv.append("--share-all-embeddings")
    elif m.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    argv += ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", str(t.label_smoothing)]
    if b.enabled:
        generation = {"beam": b.beam, "lenpen": b.lenpen, "max_len_a": b.max_len_a, "max_len_b": b.max_len_b}
        argv += ["--eval-bleu", "--eval-bleu-args", json.dumps(generation), "--eval-bleu-detok", b.detok]
        if b.tokenized:
            argv.append("--eval-tokenized-bleu")
        if b.remove_bpe is not None:
            argv += ["--eval-bleu-remove-bpe", b.remove_bpe]
    return argv
