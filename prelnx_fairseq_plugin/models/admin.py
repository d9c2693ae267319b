"""Admin (Liu et al. 2020, "Understanding the Difficulty of Training Transformers", EMNLP 2020, arXiv:2004.08249;
code: github.com/LiyuanLucasLiu/Transformer-Clinic, later packaged as github.com/microsoft/admin-torch).

Post-LN whose shortcut is weighted by a learnable per-dimension vector w_i (one per residual sublayer i):

  x_{i+1} = LN(x_i * w_i + f_i(x_i))

(`residual * w + x` in fairseq's residual_connection; the LayerNorms stay where Post-LN has them). w_i is set at
initialisation so that no sublayer's output dominates its sum (`model.admin_init`):

  profile      the authors' Admin: one profiling forward pass with w_1 = 1 and, sublayer after sublayer,
               w_{i+1} = sqrt(Var(x_i * w_i) + Var(f_i))   (variances over every element of the batch; f_i after
               its dropout, as in Transformer-Clinic's `adaptive-profiling` pass, which runs in training mode)
               counted separately in the encoder (2 sublayers per layer) and in the decoder (3 per layer); every
               dimension of w_i gets the same value.
  closed_form  admin-torch's `calculate_init` ('O(logn)'): w = sqrt((n + 1) / ln(n + 1) - 1) for every sublayer
               of a stack of n residual sublayers (n = 2 N in the encoder, 3 M in the decoder).

What prelnx does about the pitfall of the authors' code (Transformer-Clinic writes the profile to
`profile.ratio.init` in the working directory, which parallel runs overwrite and `fairseq-generate` re-reads): the
profile is taken when the model is built, on a fixed synthetic batch of the model's own vocabulary (PROFILE_BATCH
random tokens drawn from a private generator seeded with PROFILE_SEED, dropout drawn inside `fork_rng` so the run's
own random stream is untouched), so every data-parallel worker computes the same w; w is a parameter
(`admin_w`, sublayers x embed_dim) saved with the weights in every checkpoint, and a model loaded from a checkpoint
(resume, `prelnx evaluate`, averaging) has the trained w of the checkpoint, never a fresh profile. The values are
also logged (train.log in the run dir). The authors profile on the first training batch instead; at initialisation
the variances depend on the batch only through its length and token frequencies.
Initialisation otherwise: as Transformer-Clinic builds its layers (fairseq/fairseq/modules/transformer_layer.py at
commit 70f72b708ab074db5ca3726494e3263516041159: `fc1`/`fc2` come from its `Linear` helper, `xavier_uniform_` weight
and zero bias), fc1 and fc2 are re-drawn with `xavier_uniform_` and bias 0 (fairseq 0.12's FFN Linears keep torch's
default, Kaiming-uniform with a non-zero bias: at IWSLT14 size fc1's std 0.0255 against Xavier's 0.0361, an FFN
branch variance about 1/8 of the authors' and a different profiled w). The attention projections keep fairseq's
init, which is the same as the authors'. The profiling pass runs in training mode (dropout on), as the reference's
`not_initialized = ... and self.training` (same file) requires.
Admin's published recipes use RAdam with warm-up (configs/warmup_free/admin_iwslt14.yaml); the optimizer of an
"Admin without warm-up" run is whatever its config says (docs/warmup_free.md).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from torch import nn

from .schemes import LayoutScheme, register, stack_layers, sublayer_count

logger = logging.getLogger(__name__)

ADMIN_INITS = ("profile", "closed_form")
PROFILE_BATCH = (16, 32)  # sentences x tokens of the profiling pass: about an IWSLT14 batch's sentence length
PROFILE_SEED = 12345  # the profiling batch's and dropout's private seed: the same w in every worker of a run


def closed_form_w(residual_sublayers: int) -> float:
    """admin-torch's w for a stack of n residual sublayers: sqrt((n + 1) / ln(n + 1) - 1)."""
    n = residual_sublayers
    return math.sqrt((n + 1) / math.log(n + 1) - 1)


class _Profile:
    """The running ratio of one stack during the profiling pass, and the w it gave each sublayer."""

    def __init__(self) -> None:
        self.ratio = 1.0
        self.values: list[float] = []


@register
class Admin(LayoutScheme):
    name = "admin"

    def __init__(self, args: Any) -> None:
        from fairseq import utils

        super().__init__(args)
        self.init = str(utils.safe_getattr(args, "admin_init", None) or "profile")
        if self.init not in ADMIN_INITS:
            raise ValueError(f"--admin-init: unknown {self.init!r}; allowed: {', '.join(ADMIN_INITS)}")

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        for linear in (layer.fc1, layer.fc2):  # Transformer-Clinic's `Linear`: Xavier-uniform weight, zero bias
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)
        count = sublayer_count(layer)
        layer.admin_w = nn.Parameter(torch.ones(count, layer.embed_dim))
        if self.init == "closed_form":
            layer.admin_w.data.fill_(closed_form_w(count * stack_layers(cfg, side)))
        layer.admin_profile = None  # a _Profile only during the profiling pass

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        profile = layer.admin_profile
        if profile is not None:  # w_i is the ratio so far; the next ratio is sqrt(Var(x_i * w_i) + Var(f_i))
            with torch.no_grad():
                layer.admin_w[index].fill_(profile.ratio)
                profile.values.append(profile.ratio)
                shortcut = (residual * layer.admin_w[index]).double()
                profile.ratio = math.sqrt(float(shortcut.var(correction=0) + x.double().var(correction=0)))
        return residual * layer.admin_w[index] + x

    def build_model(self, model: nn.Module, args: Any) -> None:
        if self.init != "profile":
            return
        values = profile_admin(model)
        for side, ws in values.items():
            logger.info("Admin profile (model.admin_init profile): %s w per sublayer = %s", side,
                        ", ".join(f"{w:.4f}" for w in ws))  # fmt: skip


def profile_admin(model: nn.Module) -> dict[str, list[float]]:
    """Set every admin_w from one profiling forward pass (training mode, fixed batch); returns w per stack."""
    stacks = {"encoder": model.encoder, "decoder": model.decoder}
    profiles = {side: _Profile() for side in stacks}
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
    return {side: profile.values for side, profile in profiles.items()}


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
