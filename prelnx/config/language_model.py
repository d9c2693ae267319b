"""The keys of task: language_model (a decoder-only transformer trained with fairseq's `language_modeling` task) and
their checks. Read by prelnx.config.schema, the one place that knows the YAML vocabulary; nothing here is a key of
its own. Imports nothing of prelnx (the schema imports this module: the config is typed Any, not imported).

Why only the preset `transformer_lm`: fairseq registers the others (transformer_lm_gpt, _big, _wiki103, ...) through
`base_lm_architecture`, which sets `decoder_normalize_before = True` whatever the command says ("Model training is
not stable without this", fairseq/models/transformer_lm.py), so none of them can be Post-LN. `transformer_lm` itself
is the model's dataclass defaults (6 layers, d 512, FFN 2048, 8 heads; Post-LN unless --decoder-normalize-before),
resized by the model.* keys.
"""

from __future__ import annotations

from typing import Any

LM_ARCH_PRESETS = ("transformer_lm",)
# Which layouts the language model has is their rows' `tasks` (prelnx/layouts.py, checked by the schema): post and
# pre (with LayerNorm, no QK-Norm) are fairseq's own transformer_lm; the norm placements (and the other norms,
# QK-Norm) the plugin's decoder-only model (prelnx_fairseq_plugin/models/normalized_lm.py).
LM_DATASETS = ("synthetic", "custom")


def language_model_problems(config: Any) -> list[tuple[str, str]]:
    """(key, message) for each key of a language-model config (the schema's Config) that the task cannot train
    with. The placements' own checks (their norms, Mix-LN's depth) are prelnx.config.placements'."""
    m, d = config.model, config.data
    checks = [
        (m.arch in LM_ARCH_PRESETS, "model.arch",
         f"task: language_model uses fairseq's decoder-only preset {', '.join(LM_ARCH_PRESETS)} (its other presets "
         f"are always Pre-LN), got {m.arch!r}"),
        (m.encoder_layers is None, "model.encoder_layers",
         "task: language_model is decoder-only: remove the key and set model.decoder_layers"),
        (not m.share_all_embeddings, "model.share_all_embeddings",
         "task: language_model has one dictionary: use model.share_decoder_input_output_embed"),
        (d.dataset in LM_DATASETS, "data.dataset",
         f"task: language_model reads synthetic or custom (prelnx data prepare text) data, got {d.dataset!r}"),
        (d.tokens_per_sample >= 8, "data.tokens_per_sample", f"must be >= 8, got {d.tokens_per_sample}"),
    ]  # fmt: skip
    return [(key, message) for ok, key, message in checks if not ok]
