"""Training diagnostics for the warm-up explanations (issue 31), measured in fairseq's trainer, in one place.

`--diagnostics-every-updates N`: after every N-th update, per layer and sublayer (groups below)
- `grad_norm`: the L2 norm of the gradient the optimizer stepped with (reduced over data-parallel workers, divided
  by the sample size, after --clip-norm when set; Xiong et al. 2020's gradient scale);
- `update_ratio`: ||w_after - w_before|| / ||w_before|| of the update just taken (Kosson et al. 2024; None where
  ||w_before|| = 0, e.g. ReZero's scalars at initialisation);
- `attn_logit_max`: the largest pre-softmax attention logit q.k / sqrt(d_h) over the update's batches, heads and
  unmasked positions, per attention module (Wortsman et al. 2024), computed from the module's own projections (so
  QK-Norm's normalised q and k are what is measured);
- `hidden_rms`: the RMS of each layer's output, the residual stream it hands on (ResiDual's: x_a), over every
  element of the update's forward passes (padding included), per layer (Kim et al. 2025's and Sun et al. 2025's
  hidden-state scale: docs/placements.md).
`--sharpness-every-updates M`: after every M-th update, the critical sharpness of that update on a fixed validation
batch (sharpness.py: `lambda_c`, `eta_c`, `sharpness_loss`, `sharpness_passes`, `sharpness_note`).

The record: one JSON object per measured update, logged by rank 0 as a line `... | prelnx_diagnostics | {...}` of
the training's own log (prelnx's parent makes diagnostics.jsonl of it: prelnx/records/diagnostics.py). Its keys:
`num_updates`, `epoch`, `lr` (the lr of the update), `grad_norm`, `update_ratio`, `attn_logit_max`, `hidden_rms`
(each a mapping group -> value, or None at an update that is not a multiple of N) and the sharpness keys (None when
not a multiple of M). Groups: `<encoder|decoder>.<layer>.<self_attn|encoder_attn|ffn|residual>` (a sublayer with its
LayerNorm; residual = Admin's w or ReZero's alpha), and outside the layers `<side>.<module>` (e.g.
`encoder.embed_tokens`, `decoder.layer_norm`); hidden_rms's groups are the layers, `<side>.<layer>`. Layers count
from 0.

How it hooks into fairseq (patched here, because fairseq has no hook around an update): `Trainer.train_step` is
wrapped; on a measured update it keeps a copy of the weights, arms forward pre-hooks on the attention modules and
forward hooks on the layers and,
once the update is done, reads the gradients fairseq left in place (they are zeroed only at the next step).
`Trainer.begin_epoch` is wrapped to know the epoch. The two options are added to fairseq's training parser
(`options.add_ema_args`, called last when the parser is built) and read back from the parsed arguments
(`options.parse_args_and_arch`); fairseq's config drops options it does not know, so the values travel in
PRELNX_DIAGNOSTICS_INTERVALS, which processes fairseq spawns inherit. Nothing here draws random numbers or changes
a gradient or a weight: a run trains the same with diagnostics as without.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from typing import Any

import torch
from fairseq import options
from fairseq.modules import MultiheadAttention
from fairseq.trainer import Trainer

from .sharpness import critical_sharpness, held_out_batch

ENV = "PRELNX_DIAGNOSTICS_INTERVALS"
LOGGER = logging.getLogger("prelnx_diagnostics")  # the record's tag in the log line
_LAYER = re.compile(r"^(encoder|decoder)\.(?:sentence_encoder\.)?layers\.(\d+)\.([^.]+)")
_LAYER_MODULE = re.compile(r"^(?:module\.)*(encoder|decoder)\.(?:sentence_encoder\.)?layers\.(\d+)$")
_FFN = ("fc1", "fc2", "final_layer_norm")
_RESIDUAL = ("admin_w", "rezero_alpha")
_ATTENTION_ARGS = ("query", "key", "value", "key_padding_mask", "incremental_state", "need_weights", "static_kv",
                   "attn_mask")  # fmt: skip

_original_train_step = Trainer.train_step
_original_begin_epoch = Trainer.begin_epoch
_original_add_ema_args = options.add_ema_args
_original_parse_args_and_arch = options.parse_args_and_arch


def group_of(name: str) -> str:
    """The diagnostics group of a parameter or module name (see the module docstring)."""
    name = re.sub(r"^(module\.)+", "", name)
    found = _LAYER.match(name)
    if found:
        side, layer, part = found.groups()
        for prefix in ("self_attn", "encoder_attn"):
            if part.startswith(prefix):
                part = prefix
        part = "ffn" if part in _FFN else "residual" if part in _RESIDUAL else part
        return f"{side}.{layer}.{part}"
    parts = [p for p in name.split(".") if p != "sentence_encoder"]
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


def intervals() -> tuple[int | None, int | None]:
    """(N, M) from the parsed options; (None, None) when off."""
    every, sharpness = (os.environ.get(ENV) or ",").split(",")
    return (int(every) if every else None, int(sharpness) if sharpness else None)


class AttentionLogits:
    """Forward pre-hooks on every attention module of a model, each keeping the largest logit it computes."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.maxima: dict[str, float] = {}
        self.handles = []
        for name, module in model.named_modules():
            if isinstance(module, MultiheadAttention):
                hook = self._hook(group_of(name + "."))
                self.handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))

    def _hook(self, group: str):
        def hook(module: MultiheadAttention, args: tuple, kwargs: dict) -> None:
            given = {**dict(zip(_ATTENTION_ARGS, args)), **kwargs}
            if given.get("incremental_state") is not None:
                return None  # decoding (never inside a training update)
            with torch.no_grad():
                largest = _largest_logit(module, given)
            if largest is not None and (group not in self.maxima or largest > self.maxima[group]):
                self.maxima[group] = largest
            return None

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


class LayerOutputs:
    """Forward hooks on every encoder and decoder layer, each summing the squares of its output over the update."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.sums: dict[str, list[float]] = {}  # group -> [sum of squares, elements]
        self.handles = []
        for name, module in model.named_modules():
            found = _LAYER_MODULE.match(name)
            if found:
                self.handles.append(module.register_forward_hook(self._hook(f"{found.group(1)}.{found.group(2)}")))

    def _hook(self, group: str):
        def hook(module: torch.nn.Module, args: tuple, output: Any) -> None:
            x = output[0] if isinstance(output, tuple) else output  # a decoder layer returns (x, attn, state)
            total = self.sums.setdefault(group, [0.0, 0])
            total[0] += float(x.detach().double().pow(2).sum())
            total[1] += x.numel()

        return hook

    def rms(self) -> dict[str, float]:
        return {group: math.sqrt(squares / count) for group, (squares, count) in self.sums.items() if count}

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _largest_logit(module: MultiheadAttention, given: dict) -> float | None:
    query = given["query"]
    key = given.get("key")
    key = query if key is None else key
    q = module.q_proj(query) * module.scaling  # as fairseq's attention: T x B x C, q scaled before q.k
    k = module.k_proj(key)
    length, batch, _ = q.shape
    heads, head_dim = module.num_heads, module.head_dim
    q = q.contiguous().view(length, batch * heads, head_dim).transpose(0, 1)
    k = k.contiguous().view(-1, batch * heads, head_dim).transpose(0, 1)
    logits = torch.bmm(q, k.transpose(1, 2)).float().view(batch, heads, length, -1)
    keep = torch.ones_like(logits, dtype=torch.bool)
    mask = given.get("attn_mask")
    if mask is not None:  # T x S: -inf (or True) where a position may not attend
        blocked = mask if mask.dtype == torch.bool else torch.isneginf(mask)
        keep &= ~blocked.view(1, 1, *blocked.shape[-2:])
    padding = given.get("key_padding_mask")
    if padding is not None:  # B x S: True at padding
        keep &= ~padding.bool().view(batch, 1, 1, -1)
    kept = logits[keep]
    return float(kept.max()) if kept.numel() else None


def _norms(trainer: Trainer, named: list[tuple[str, torch.Tensor]], before: list[torch.Tensor]) -> dict[str, Any]:
    grads: dict[str, torch.Tensor] = {}
    deltas: dict[str, torch.Tensor] = {}
    weights: dict[str, torch.Tensor] = {}
    for (name, p), old in zip(named, before):
        group = group_of(name)
        zero = torch.zeros((), dtype=torch.float64, device=p.device)
        if p.grad is not None:
            grads[group] = grads.get(group, zero) + p.grad.detach().double().pow(2).sum()
        deltas[group] = deltas.get(group, zero) + (p.detach().double() - old.double()).pow(2).sum()
        weights[group] = weights.get(group, zero) + old.double().pow(2).sum()
    ratio = {g: (math.sqrt(float(deltas[g])) / math.sqrt(float(weights[g])) if float(weights[g]) > 0 else None)
             for g in deltas}  # fmt: skip
    return {"grad_norm": {g: math.sqrt(float(v)) for g, v in grads.items()}, "update_ratio": ratio}


def train_step(self: Trainer, samples, raise_oom: bool = False):
    every, sharpness = intervals()
    update = self.get_num_updates() + 1
    measure = every is not None and update % every == 0
    sharpen = sharpness is not None and update % sharpness == 0
    if not (measure or sharpen) or not self.is_data_parallel_master:
        return _original_train_step(self, samples, raise_oom)
    model = self._model  # unwrapped: data-parallel wrappers share its parameters and gradients
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    lr = self.get_lr()
    before = [p.detach().clone() for _, p in named]
    logits = AttentionLogits(model) if measure else None
    outputs = LayerOutputs(model) if measure else None
    try:
        output = _original_train_step(self, samples, raise_oom)
    finally:
        for hooks in (logits, outputs):
            if hooks is not None:
                hooks.remove()
    if self.get_num_updates() != update:  # the update was skipped (fp16 overflow, OOM): nothing to measure
        return output
    record: dict[str, Any] = {"num_updates": update, "epoch": getattr(self, "_prelnx_epoch", None), "lr": lr,
                              "grad_norm": None, "update_ratio": None, "attn_logit_max": None,
                              "hidden_rms": None}  # fmt: skip
    if measure:
        record.update(_norms(self, named, before), attn_logit_max=logits.maxima, hidden_rms=outputs.rms())
    if sharpen:
        if getattr(self, "_prelnx_held_out", None) is None:
            self._prelnx_held_out = held_out_batch(self)
        record.update(critical_sharpness(self, [p for _, p in named], before, lr, self._prelnx_held_out))
    else:
        record.update(eta_c=None, lambda_c=None, sharpness_loss=None, sharpness_passes=None, sharpness_note=None)
    LOGGER.info(json.dumps(record))
    return output


def begin_epoch(self: Trainer, epoch: int):
    self._prelnx_epoch = int(epoch)
    return _original_begin_epoch(self, epoch)


def add_ema_args(parser):
    group = parser.add_argument_group("prelnx diagnostics (prelnx_fairseq_plugin/diagnostics.py)")
    group.add_argument("--diagnostics-every-updates", type=int, default=None, metavar="N",
                       help="every N updates log per-sublayer gradient norms, update/weight ratios and the largest "
                            "attention logit")  # fmt: skip
    group.add_argument("--sharpness-every-updates", type=int, default=None, metavar="M",
                       help="every M updates log the critical sharpness 2/eta_c on a fixed validation batch")
    return _original_add_ema_args(parser)


def parse_args_and_arch(*args, **kwargs):
    parsed = _original_parse_args_and_arch(*args, **kwargs)
    namespace = parsed[0] if isinstance(parsed, tuple) else parsed
    every = getattr(namespace, "diagnostics_every_updates", None)
    sharpness = getattr(namespace, "sharpness_every_updates", None)
    os.environ[ENV] = f"{every or ''},{sharpness or ''}"
    return parsed


def enable_diagnostics() -> None:
    """Idempotent."""
    Trainer.train_step = train_step
    Trainer.begin_epoch = begin_epoch
    options.add_ema_args = add_ema_args
    options.parse_args_and_arch = parse_args_and_arch
