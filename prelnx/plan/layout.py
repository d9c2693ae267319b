"""A run's normalisation layout as fairseq arguments, read from the layout's row (prelnx/layouts.py): fairseq's own
model or the plugin's, and the plugin options and Pre-LN flags it needs (translation and the language model). A
user's layout is passed as `--layout-file /abs/PATH.py:CLASS`, which the plugin loads in every worker.
"""

from __future__ import annotations

from prelnx.config.schema import Config
from prelnx.layouts import PAPER, VARIANT, layout

LM_PLUGIN_ARCH = "prelnx_transformer_lm"  # the plugin's decoder-only model (prelnx_fairseq_plugin/models/normalized_lm.py)


def uses_plugin_model(config: Config) -> bool:
    """False for fairseq's own model (the paper's post or pre with LayerNorm, no QK-Norm), True for the plugin's."""
    m = config.model
    return layout(m.layout).family != PAPER or m.norm != "layernorm" or m.qk_norm


def variant_argv(config: Config) -> list[str]:
    """The plugin model's options for this config ([] for fairseq's own model)."""
    m = config.model
    if not uses_plugin_model(config):
        return []
    row = layout(m.layout)
    argv = ["--norm-type", m.norm]
    if row.file is not None:
        argv += ["--layout-file", row.file]
    elif row.family == VARIANT:  # DeepNorm: the plugin's --deepnorm
        argv.append("--deepnorm")
    elif row.scheme:  # a warm-up-free scheme (docs/warmup_free.md) or a placement (docs/placements.md)
        argv += ["--layout-scheme", m.layout]
        if m.layout == "admin":
            argv += ["--admin-init", m.admin_init]
        if m.layout == "mixln":
            argv += ["--mixln-alpha", str(m.mixln_alpha)]
        if m.layout in ("rezero", "rezero_postln"):
            argv += ["--rezero-ffn-init", m.rezero_ffn_init]
    if m.qk_norm:
        argv.append("--qk-norm")
    return argv


def normalize_before_argv(config: Config, sides: tuple[str, ...]) -> list[str]:
    """fairseq's Pre-LN flags (a norm before each sublayer, a final norm per stack) for the layouts built on it."""
    return [f"--{side}-normalize-before" for side in sides] if layout(config.model.layout).pre_ln else []
