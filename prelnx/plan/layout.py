"""A run's normalisation layout as fairseq arguments: which model.layout is fairseq's own model, which is the plugin's,
and the plugin options and Pre-LN flags each needs. Every task that builds a transformer from these keys reads them
here (translation: `--arch prelnx_<preset>`; the decoder-only language model: `--arch prelnx_transformer_lm`,
LM_PLUGIN_ARCH, with `variant_argv` and `normalize_before_argv(config, ("decoder",))`).

Which placements are built on fairseq's Pre-LN is also a fact of the plugin (each scheme's `pre_ln`, which its
check_variant enforces); prelnx cannot import the plugin (it imports fairseq), so the list is here too and a test
keeps the two equal.
"""

from __future__ import annotations

from prelnx.config.schema import Config

FAIRSEQ_LAYOUTS = ("post", "pre")  # fairseq's own transformer (with LayerNorm, without QK-Norm)
# Built on fairseq's normalize_before: the layers' input norms and the stacks' final norm (Pre-LN itself, and the
# placements of prelnx_fairseq_plugin/models/{peri,reorder,mixln,lnscale}.py); every other layout is Post-LN-based.
PRE_LN_LAYOUTS = ("pre", "peri", "reorder", "mixln", "lnscale")
LM_PLUGIN_ARCH = "prelnx_transformer_lm"  # the plugin's decoder-only model (prelnx_fairseq_plugin/models/normalized_lm.py)


def uses_plugin_model(config: Config) -> bool:
    """False for fairseq's own model (post or pre with LayerNorm, no QK-Norm), True for the plugin's."""
    m = config.model
    return m.layout not in FAIRSEQ_LAYOUTS or m.norm != "layernorm" or m.qk_norm


def variant_argv(config: Config) -> list[str]:
    """The plugin model's options for this config ([] for fairseq's own model)."""
    m = config.model
    if not uses_plugin_model(config):
        return []
    argv = ["--norm-type", m.norm]
    if m.layout == "deepnorm":
        argv.append("--deepnorm")
    elif m.layout not in FAIRSEQ_LAYOUTS:  # a warm-up-free scheme (docs/warmup_free.md) or a placement (docs/placements.md)
        argv += ["--layout-scheme", m.layout]
        if m.layout == "admin":
            argv += ["--admin-init", m.admin_init]
        if m.layout == "mixln":
            argv += ["--mixln-alpha", str(m.mixln_alpha)]
    if m.qk_norm:
        argv.append("--qk-norm")
    return argv


def normalize_before_argv(config: Config, sides: tuple[str, ...]) -> list[str]:
    """fairseq's Pre-LN flags (a norm before each sublayer, a final norm per stack) for the layouts built on it."""
    return [f"--{side}-normalize-before" for side in sides] if config.model.layout in PRE_LN_LAYOUTS else []
