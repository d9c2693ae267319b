"""Every layout's layers recomputed from raw tensors and the layout's formula, for the tests that check the plugin.

Nothing here calls a module of the model under test: a norm is `F.layer_norm` (or the RMSNorm formula) on the
norm's weight and bias tensors with the reference's eps, an attention is its projections' tensors through softmax
(Q K^T / sqrt(d_head)), an FFN is fc2(Dropout(relu(fc1 h))) from its tensors, and every dropout is `F.dropout` with
the p the test set, drawn in fairseq's order (self-attention, cross-attention, FFN activation, each sublayer's
output), so that a layer run under `torch.manual_seed(s)` and its recomputation under the same seed share their
dropout masks: a dropout added, dropped or moved changes the draws and fails. The formulas (x the sublayer's input,
F the sublayer, D the residual dropout, LN_i the sublayer's norm, l the layer's number from 1 in its stack):

  post       LN_i(x + D(F(x)))                pre       x + D(F(LN_i(x)))          (+ a final LN per stack)
  peri       x + D(LNout_i(F(LN_i(x))))       reorder   x + D(LNout_i(F(x)))       (+ a final LN)
  lnscale    x + D(F(LN_i(x) / sqrt(l)))      mixln     post for l <= floor(alpha L), pre after (+ a final LN)
  residual   x_a <- LN_i(x_a + D(F(x_a))), x_d <- x_d + D(F(x_a)) (the same draw); output x_a + LN(x_d), eps 1e-7
  admin      LN_i(x * w_i + D(F(x)))          deepnorm  LN_i(alpha x + D(F(x)))   (DeepNet's alpha per stack)
  tfixup     x + D(F(x))                      rezero    x + a D(F(x))              rezero_postln LN_i(x + a D(F(x)))
  b2t        post, and the layer's input added before its last norm
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
import torch.nn.functional as F

LN_EPS, RESIDUAL_OUTPUT_EPS = 1e-5, 1e-7  # fairseq's LayerNorm; ResiDual's output norm (microsoft/ResiDual 8682f75)
DROPOUT, ACTIVATION_DROPOUT = 0.3, 0.2  # what the tests build the models with (attention dropout 0)
DIM, FFN, HEADS = 32, 64, 2
PRE_BASED = ("pre", "peri", "reorder", "mixln", "lnscale")  # a final norm per stack
NORM_NAMES = ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm")


def norm(x: torch.Tensor, module: Any, eps: float = LN_EPS) -> torch.Tensor:
    """The norm from its tensors: LayerNorm, or RMSNorm (a weight, no bias)."""
    if getattr(module, "bias", None) is None:
        return module.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return F.layer_norm(x, (x.shape[-1],), module.weight, module.bias, eps)


def drop(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    return F.dropout(x, p, training=True) if training and p > 0 else x


def attention(att: Any, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Multi-head attention (T x B x C) from the projections' tensors: softmax(Q K^T / sqrt(d) + mask) V, out_proj."""
    (t, b, c), s, h = query.shape, key.shape[0], HEADS
    d = c // h
    heads = lambda y, n: y.reshape(n, b * h, d).transpose(0, 1)  # noqa: E731
    project = lambda linear, y: linear(y) if type(linear).__name__ == "HeadNormedLinear" else \
        F.linear(y, linear.weight, linear.bias)  # noqa: E731  (--qk-norm's per-head norms: test_variants.py's)
    q = heads(project(att.q_proj, query) * d**-0.5, t)
    k = heads(project(att.k_proj, key), s)
    v = heads(F.linear(key, att.v_proj.weight, att.v_proj.bias), s)
    scores = q @ k.transpose(1, 2) + (0 if mask is None else mask)
    out = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(t, b, c)
    return F.linear(out, att.out_proj.weight, att.out_proj.bias)


def ffn(layer: Any, h: torch.Tensor, training: bool) -> torch.Tensor:
    hidden = drop(F.relu(F.linear(h, layer.fc1.weight, layer.fc1.bias)), ACTIVATION_DROPOUT, training)
    return F.linear(hidden, layer.fc2.weight, layer.fc2.bias)


def causal_mask(t: int) -> torch.Tensor:
    return torch.triu(torch.full((t, t), float("-inf")), 1)


def sublayers(layer: Any, encoder_out: torch.Tensor | None, mask: torch.Tensor | None, training: bool):
    """(F, the index of its norm in NORM_NAMES) for each residual sublayer, in fairseq's order."""
    subs = [(lambda h: attention(layer.self_attn, h, h, mask), 0)]
    if getattr(layer, "encoder_attn", None) is not None:
        subs.append((lambda h: attention(layer.encoder_attn, h, encoder_out), 1))
    subs.append((lambda h: ffn(layer, h, training), 2))
    return subs


@dataclasses.dataclass
class Place:
    """How one layer is computed: its formula's kind, its number l from 1, its stack's DeepNorm alpha."""

    kind: str
    number: int = 1
    alpha: float = 1.0


def layer(layer: Any, x: torch.Tensor, place: Place, *, encoder_out=None, mask=None, training=False, stream=None):
    """One layer by its formula; `stream` (a one-element list) carries ResiDual's x_d between layers."""
    layer_input, kind = x, place.kind
    subs = sublayers(layer, encoder_out, mask, training)
    for i, (f, norm_index) in enumerate(subs):
        ln = lambda h, i=norm_index: norm(h, getattr(layer, NORM_NAMES[i]))  # noqa: E731
        out_ln = lambda h, i=i: norm(h, layer.output_norms[i])  # noqa: E731
        d = lambda h: drop(h, DROPOUT, training)  # noqa: E731
        if kind == "post":
            x = ln(x + d(f(x)))
        elif kind == "pre":
            x = x + d(f(ln(x)))
        elif kind == "lnscale":
            x = x + d(f(ln(x) / math.sqrt(place.number)))
        elif kind == "peri":
            x = x + d(out_ln(f(ln(x))))
        elif kind == "reorder":
            x = x + d(out_ln(f(x)))
        elif kind == "residual":
            branch = d(f(x))
            stream[0] = (x if stream[0] is None else stream[0]) + branch
            x = ln(x + branch)
        elif kind == "admin":
            x = ln(x * layer.admin_w[i] + d(f(x)))
        elif kind == "deepnorm":
            x = ln(place.alpha * x + d(f(x)))
        elif kind == "tfixup":
            x = x + d(f(x))
        elif kind == "rezero":
            x = x + layer.rezero_alpha * d(f(x))
        elif kind == "rezero_postln":
            x = ln(x + layer.rezero_alpha * d(f(x)))
        elif kind == "b2t":
            x = ln(x + d(f(x)) + (layer_input if i == len(subs) - 1 else 0))
        else:
            raise ValueError(kind)
    return x


def stack(stack_module: Any, layout: str, x: torch.Tensor, places: list[Place], **kwargs) -> torch.Tensor:
    """Every layer by its formula, then the stack's final norm (Pre-LN-based) or ResiDual's output."""
    stream: list[torch.Tensor | None] = [None]
    for module, place in zip(stack_module.layers, places):
        x = layer(module, x, place, stream=stream, **kwargs)
    if layout in PRE_BASED:
        return norm(x, stack_module.layer_norm)
    if layout == "residual":
        return x + norm(stream[0], stack_module.layer_norm.norm, RESIDUAL_OUTPUT_EPS)
    return x


def places(layout: str, side: str, n_encoder: int, n_decoder: int, mixln_alpha: float = 0.25) -> list[Place]:
    """Each layer's Place for a stack of the layout, from the papers' formulas (side: encoder or decoder)."""
    count = n_encoder if side == "encoder" else n_decoder
    if layout == "deepnorm":  # DeepNet's table, Enc-Dec column
        depth = (n_encoder**4 * n_decoder) ** (1 / 16)
        alpha = 0.81 * depth if side == "encoder" else (3 * n_decoder) ** 0.25
        return [Place("deepnorm", l, alpha) for l in range(1, count + 1)]
    if layout == "mixln":
        post = math.floor(mixln_alpha * count)
        return [Place("post" if l <= post else "pre", l) for l in range(1, count + 1)]
    return [Place(layout, l) for l in range(1, count + 1)]


def run_stack(stack_module: Any, x: torch.Tensor, encoder_out=None, mask=None) -> torch.Tensor:
    """The model's own code: each layer's forward, then the stack's final norm (as fairseq's stack forward)."""
    if hasattr(stack_module.layers[0], "dual_stream"):
        stack_module.layers[0].dual_stream.reset()  # what the stack's forward pre-hook does
    for module in stack_module.layers:
        if hasattr(module, "encoder_attn"):  # a decoder layer, with or without cross-attention
            x = module(x, encoder_out=encoder_out, encoder_padding_mask=None, self_attn_mask=mask)[0]
        else:
            x = module(x, encoder_padding_mask=None)
    return x if stack_module.layer_norm is None else stack_module.layer_norm(x)


def perturb(model: Any, seed: int = 7) -> None:
    """Norm gains and biases, Admin's w and ReZero's a away from their initial 1, 0, constant values, so that a
    formula that reads the wrong one (or none) cannot agree by accident."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "norm" in name:
                parameter.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * noise)
            elif name.endswith("admin_w"):
                parameter.copy_(1.0 + 0.5 * noise)
            elif name.endswith("rezero_alpha"):
                parameter.copy_(0.5 + 0.3 * noise)
