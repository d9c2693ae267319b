"""A config's layers and widths: each model.* key the config sets, else its fairseq preset's (read from the preset's
registered architecture function: fairseq is imported only when a key is left to the preset)."""

from __future__ import annotations

from collections.abc import Mapping

from prelnx.config.schema import Config

TRANSFORMER_BASE = {"encoder_layers": 6, "decoder_layers": 6, "embed_dim": 512, "ffn_dim": 2048}
ARGS = {"encoder_layers": "encoder_layers", "decoder_layers": "decoder_layers", "embed_dim": "encoder_embed_dim",
        "ffn_dim": "encoder_ffn_embed_dim"}  # each size -> the fairseq argument a preset sets it in


def preset_sizes(arch: str) -> dict[str, int] | None:
    """A fairseq preset's sizes (ARGS; decoder_layers 0 for an encoder); None where fairseq cannot say (an unknown
    arch, an arch function that needs more than an empty namespace, a decoder-only preset's missing encoder sizes)."""
    from argparse import Namespace

    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = Namespace()
    try:
        ARCH_CONFIG_REGISTRY[arch](args)  # sets every size the preset has a default for
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    sizes = {size: getattr(args, arg, 0 if size == "decoder_layers" else None) for size, arg in ARGS.items()}
    return sizes if all(isinstance(value, int) for value in sizes.values()) else None


def model_sizes(config: Config, fallback: Mapping[str, int] = TRANSFORMER_BASE) -> dict[str, int]:
    """The config's model sizes (ARGS): each key it sets, else its preset's, else `fallback`'s; a decoder-only task
    has no encoder layers, an encoder-only one no decoder layers."""
    given = {key: getattr(config.model, key, None) for key in ARGS}
    if config.task == "language_model":
        given["encoder_layers"] = 0  # a decoder alone
    preset = (preset_sizes(config.model.arch) or fallback) if None in given.values() else {}
    sizes = {key: int(preset[key] if value is None else value) for key, value in given.items()}
    if config.task not in ("translation", "language_model"):
        sizes["decoder_layers"] = 0  # an encoder (masked LM, sentence prediction)
    return sizes
