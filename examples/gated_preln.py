"""Gated Pre-LN: a placement of your own, in one file (docs/your_layout.md).

Pre-LN whose every residual branch passes through a learned per-channel gate, started half open:

  x_{i+1} = x_i + sigmoid(g_i) * F_i(LN(x_i))        g_i in R^d, g_i = 0 at initialisation (gate 1/2)

and Pre-LN's final norm after the last layer. At initialisation every branch is Pre-LN's, halved: the residual
stream grows as in Pre-LN, more slowly (no shipped layout of prelnx gates the branch per channel; ReZero's scalar
starts at 0 on a model without norms). Train it with

  cd examples && prelnx train -c gated_preln.yaml --set train.threads=1

`model.layout: ./gated_preln.py:GatedPreLN` (relative to the folder of the config that names it; on the command
line, to the working directory) names this class. prelnx loads the file when it validates the config (a bad file is
one error line, exit 2, before anything trains); fairseq's process loads it again from the absolute path the plan
passes (--layout-file).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from prelnx_fairseq_plugin.models.schemes import LayoutScheme, sublayer_count


class GatedPreLN(LayoutScheme):
    name = "gated_preln"  # must not be a shipped layout's name
    display_name = "Gated Pre-LN"  # the name in figures and report arms
    pre_ln = True  # built on fairseq's Pre-LN: input norms before each sublayer and a final norm per stack
    norm_types = ("layernorm", "rmsnorm")  # the model.norm values it is defined with
    allows_qk_norm = True
    language_model = True  # also for task: language_model (a decoder without cross-attention)
    colour = "tab:pink"
    reference = "examples/gated_preln.py (prelnx's example; no paper)"
    # What we claim for it; prelnx report decides each on a sweep with the arms, as it decides methods.yaml's claims
    # (kinds: prelnx.layouts.CLAIM_KINDS; docs/your_layout.md). Not declared before any data was seen: committed
    # (dcab8f3, 02:41 UTC) 22 minutes into its study's sweep (examples/gated_preln_sweep.yaml), when Post-LN's and
    # Pre-LN's seed-1 runs without warm-up had finished and this layout's seed 1 had logged 6 of its 8 epochs
    # (docs/results/gated_preln/runs/); the margins are paper.yaml's 0.5 bits. Decided on 2 seeds at one lr.
    claims = (
        {"id": "gated_preln_no_warmup", "kind": "no_warmup", "margin_bits": 0.5,
         "claim": "Gated Pre-LN needs no warm-up: without it, its final valid loss is within 0.5 bits of with it."},
        {"id": "gated_preln_matches_postln", "kind": "matches_postln", "arm": "no_warmup", "margin_bits": 0.5,
         "claim": "Gated Pre-LN without warm-up ends within 0.5 bits of Post-LN with warm-up (or better)."},
    )

    def build_layer(self, layer: nn.Module, cfg: Any, side: str) -> None:
        """One gate per residual sublayer (self-attention, cross-attention in a decoder, FFN), all at 0."""
        layer.branch_gates = nn.Parameter(torch.zeros(sublayer_count(layer), layer.embed_dim))

    def residual(self, layer: nn.Module, index: int, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """x is the sublayer's output after dropout, residual its input (fairseq's order)."""
        return residual + torch.sigmoid(layer.branch_gates[index]) * x
