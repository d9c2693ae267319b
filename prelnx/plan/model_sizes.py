"""A config's layers and widths: each model.* key the config sets, else its fairseq preset's (read from the preset's
registered architecture function: fairseq is imported only when a key is left to the preset)."""

from __future__ import annotations

from collections.abc import Mapping

from prelnx.config.schema import Config

SIZE_KEYS = ("encoder_layers", "decoder_layers", "embed_dim", "ffn_dim")
TRANSFORMER_BASE = {"encoder_layers": 6, "decoder_layers": 6, "embed_dim": 512, "ffn_dim": 2048}


def preset_sizes(arch: str) -> dict[str, int] | None:
    """A fairseq preset's SIZE_KEYS (decoder_layers 0 for an encoder); None where fairseq cannot say (an unknown
    arch, an arch function that needs more than an empty namespace, a decoder-only preset's missing encoder sizes)."""
    from argparse import Namespace

    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = Namespace()
    try:
        ARCH_CONFIG_REGISTRY[arch](args)  # sets every size the preset has a default for
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    sizes = {"encoder_layers": getattr(args, "encoder_layers", None), "decoder_layers": getattr(args, "decoder_layers", 0),
             "embed_dim": getattr(args, "encoder_embed_dim", None), "ffn_dim": getattr(args, "encoder_ffn_embed_dim", None)}  # fmt: skip
    return sizes if all(isinstance(value, int) for value in sizes.values()) else None


def model_sizes(config: Config, fallback: Mapping[str, int] = TRANSFORMER_BASE) -> dict[str, int]:
    """SIZE_KEYS of the config's model: each key it sets, else its preset's, else `fallback`'s; a decoder-only task
    has no encoder layers, an encoder-only one no decoder layers."""
    given = {key: getattr(config.model, key, None) for key in SIZE_KEYS}
    if config.task == "language_model":
        given["encoder_layers"] = 0  # a decoder alone
    preset = (preset_sizes(config.model.arch) or fallback) if None in given.values() else {}
    sizes = {key: int(preset[key] if value is None else value) for key, value in given.items()}
    if config.task not in ("translation", "language_model"):
        sizes["decoder_layers"] = 0  # an encoder (masked LM, sentence prediction)
    return sizes
