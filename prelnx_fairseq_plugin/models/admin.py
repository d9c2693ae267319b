"""Admin (Liu et al. 2020): Post-LN with the shortcut weighted by a learned vector w_i per residual sublayer,
x_{i+1} = LN(x_i * w_i + f_i(x_i)); w_i profiled at build time or in closed form (`model.admin_init`), fc1/fc2 as
Transformer-Clinic's `Linear`, the attention projections left at fairseq's init (the authors'): docs/warmup_free.md.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, register, sublayer_count, xavier_ffn_

logger = logging.getLogger(__name__)

PROFILE_BATCH = (16, 32)  # sentences x tokens of the profiling pass: about an IWSLT14 batch's sentence length
PROFILE_SEED = 12345  # the profiling batch's and dropout's private seed: the same w in every worker of a run


@register
class Admin(LayoutScheme):
    name = "admin"

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        xavier_ffn_(layer)
        count = sublayer_count(layer)
        layer.admin_w = nn.Parameter(torch.ones(count, layer.embed_dim))
        if self.option("admin_init") == "closed_form":  # admin-torch's w (option: prelnx/layouts.py ADMIN_INIT)
            n = count * getattr(cfg, side).layers
            layer.admin_w.data.fill_(math.sqrt((n + 1) / math.log(n + 1) - 1))
        layer.admin_profile = None  # during the profiling pass only: its stack's ratios (each w so far, then the next)

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        ratios = layer.admin_profile
        if ratios is not None:  # w_i is the ratio so far; the next ratio is sqrt(Var(x_i * w_i) + Var(f_i))
            with torch.no_grad():
                layer.admin_w[index].fill_(ratios[-1])
                shortcut = (residual * layer.admin_w[index]).double()
                ratios.append(math.sqrt(float(shortcut.var(correction=0) + x.double().var(correction=0))))
        return residual * layer.admin_w[index] + x

    def build_model(self, model: nn.Module, args: Any) -> None:
        if self.option("admin_init") != "profile":
            return
        values = profile_admin(model)
        for side, ws in values.items():
            logger.info("Admin profile (model.admin_init profile): %s w per sublayer = %s", side,
                        ", ".join(f"{w:.4f}" for w in ws))  # fmt: skip


def profile_admin(model: nn.Module) -> dict[str, list[float]]:
    """Set every admin_w from one profiling forward pass (training mode, fixed batch); returns w per stack."""
    stacks = {"encoder": model.encoder, "decoder": model.decoder}
    profiles = {side: [1.0] for side in stacks}  # the running ratio of each stack, from 1
    layers = [(module, side) for side, stack in stacks.items() for module in stack.modules() if hasattr(module, "admin_w")]
    for layer, side in layers:
        layer.admin_profile = profiles[side]
    was_training = model.training
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(PROFILE_SEED)  # dropout's draws in the pass; the caller's stream is restored after
            model.train()  # dropout on, as the authors' pass (it runs only while self.training)
            model(*profiling_batch(model))
    finally:
        for layer, _ in layers:
            layer.admin_profile = None
        model.train(was_training)
    return {side: ratios[:-1] for side, ratios in profiles.items()}  # the last ratio is no sublayer's w


def profiling_batch(model: nn.Module) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The profiling pass's (src_tokens, src_lengths, prev_output_tokens): PROFILE_BATCH random tokens of the
    model's own dictionaries from a private generator, the same on every call."""
    generator = torch.Generator().manual_seed(PROFILE_SEED)
    src = _random_tokens(model.encoder.dictionary, generator)
    prev = _random_tokens(model.decoder.dictionary, generator)
    src[:, -1] = model.encoder.dictionary.eos()  # as fairseq's batches: source ends, target input starts
    prev[:, 0] = model.decoder.dictionary.eos()  # with the end-of-sentence token
    return src, torch.full((src.size(0),), src.size(1), dtype=torch.long), prev


def _random_tokens(dictionary: Any, generator: torch.Generator) -> torch.Tensor:
    low = dictionary.nspecial if len(dictionary) > dictionary.nspecial else 0
    return torch.randint(low, len(dictionary), PROFILE_BATCH, generator=generator)
