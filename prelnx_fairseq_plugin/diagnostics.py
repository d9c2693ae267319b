"""Training diagnostics for the warm-up explanations (issue 31), measured in fairseq's trainer, in one place: the
options, quantities, groups and record keys are docs/diagnostics.md's. Rank 0 reports one record per measured
update as a typed event (prelnx/child_report.py `Diagnosed`), stored by the parent (prelnx/records/diagnostics.py).

Patched here because fairseq has no hook around an update: `Trainer.train_step` is wrapped (a copy of the weights,
hooks on the attention modules and layers, the gradients read before the next step zeroes them), `Trainer.begin_epoch`
to know the epoch. The options join fairseq's parser through `options.add_ema_args` (called last) and are read back
in `options.parse_args_and_arch`; fairseq's config drops unknown options, so the values travel in
PRELNX_DIAGNOSTICS_INTERVALS, which spawned processes inherit. Nothing here draws random numbers or changes a
gradient or a weight.
"""

from __future__ import annotations

import functools
import math
import os
import re
from typing import Any

import torch
from fairseq import options
from fairseq.modules import MultiheadAttention
from fairseq.trainer import Trainer

from prelnx.child_report import Diagnosed, emit

ENV = "PRELNX_DIAGNOSTICS_INTERVALS"
_LAYER = re.compile(r"^(encoder|decoder)\.(?:sentence_encoder\.)?layers\.(\d+)\.([^.]+)")
_LAYER_MODULE = re.compile(r"^(?:module\.)*(encoder|decoder)\.(?:sentence_encoder\.)?layers\.(\d+)$")
_FFN = ("fc1", "fc2", "final_layer_norm")
_RESIDUAL = ("admin_w", "rezero_alpha")
_RECORD_KEYS = ("grad_norm", "update_ratio", "attn_logit_max", "hidden_rms", "eta_c", "lambda_c", "sharpness_loss",
                "sharpness_passes", "sharpness_note")  # fmt: skip
_ATTENTION_ARGS = ("query", "key", "value", "key_padding_mask", "incremental_state", "need_weights", "static_kv",
                   "attn_mask")  # fmt: skip

BISECTIONS = 4  # of the critical sharpness's bracket
MAX_DOUBLINGS = 30  # eta up to lr * 2^30
MAX_HALVINGS = 20  # eta down to lr * 2^-20

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


def hook_attention_logits(model: torch.nn.Module, maxima: dict[str, float]) -> list[Any]:
    """Forward pre-hooks on every attention module of a model, each keeping the largest logit it computes in
    maxima[group]; returns the handles."""

    def hook(group: str, module: MultiheadAttention, args: tuple, kwargs: dict) -> None:
        given = {**dict(zip(_ATTENTION_ARGS, args)), **kwargs}
        if given.get("incremental_state") is not None:
            return  # decoding (never inside a training update)
        with torch.no_grad():
            largest = _largest_logit(module, given)
        if largest is not None and (group not in maxima or largest > maxima[group]):
            maxima[group] = largest

    return [module.register_forward_pre_hook(functools.partial(hook, group_of(name + ".")), with_kwargs=True)
            for name, module in model.named_modules() if isinstance(module, MultiheadAttention)]  # fmt: skip


def hook_layer_outputs(model: torch.nn.Module, sums: dict[str, list[float]]) -> list[Any]:
    """Forward hooks on every encoder and decoder layer, each adding the squares of its output and their count to
    sums[group] over the update; returns the handles."""

    def hook(group: str, module: torch.nn.Module, args: tuple, output: Any) -> None:
        x = output[0] if isinstance(output, tuple) else output  # a decoder layer returns (x, attn, state)
        total = sums.setdefault(group, [0.0, 0])
        total[0] += float(x.detach().double().pow(2).sum())
        total[1] += x.numel()

    return [module.register_forward_hook(functools.partial(hook, f"{found.group(1)}.{found.group(2)}"))
            for name, module in model.named_modules() if (found := _LAYER_MODULE.match(name))]  # fmt: skip


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


def _norms(named: list[tuple[str, torch.Tensor]], before: list[torch.Tensor]) -> dict[str, Any]:
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


def held_out_batch(trainer: Any) -> Any:
    """The fixed batch: the middle batch (by length) of the first validation subset, batched as validation is
    (--max-tokens-valid, --batch-size-valid), on the trainer's device. The same batch at every update and after
    a resume."""
    dataset_cfg = trainer.cfg.dataset
    subset = dataset_cfg.valid_subset.split(",")[0]
    dataset = trainer.task.dataset(subset)
    batches = dataset.batch_by_size(
        dataset.ordered_indices(),
        max_tokens=dataset_cfg.max_tokens_valid or dataset_cfg.max_tokens,
        max_sentences=dataset_cfg.batch_size_valid,
        required_batch_size_multiple=dataset_cfg.required_batch_size_multiple,
    )
    batch = batches[len(batches) // 2]
    sample, _ = trainer._prepare_sample(dataset.collater([dataset[int(i)] for i in batch]))
    return sample


@torch.no_grad()
def critical_sharpness(trainer: Any, params: list[torch.Tensor], before: list[torch.Tensor], lr: float,
                       sample: Any) -> dict[str, Any]:  # fmt: skip
    """The critical sharpness lambda_c = 2 / eta_c of the update just taken (Kalra et al. 2026, arXiv 2601.16979):
    eta_c is the smallest step along d = delta / lr that raises the loss on the fixed batch, found as
    docs/diagnostics.md (`lambda_c`, `eta_c`) says: doubling or halving from lr, then BISECTIONS bisections, forward
    passes in eval mode, a NaN or Inf loss counted as risen. The weights are copied back bit for bit afterwards.

    Returns eta_c, lambda_c, the batch's loss at w (bits) and the forward passes taken; eta_c and lambda_c are None
    past lr * 2^MAX_DOUBLINGS or lr * 2^-MAX_HALVINGS, and `sharpness_note` says which."""
    model = trainer._model
    after = [p.detach().clone() for p in params]
    directions = [(a - b) / lr for a, b in zip(after, before)]
    was_training = model.training
    model.eval()
    passes = 0

    def loss_at(eta: float) -> float:
        nonlocal passes
        for p, b, d in zip(params, before, directions):
            p.copy_(b + eta * d)
        passes += 1
        loss, sample_size, _ = trainer._criterion(model, sample)
        return float(loss) / max(float(sample_size), 1.0) / math.log(2)  # per unit of sample size, in bits (as fairseq)

    note = None
    try:
        base = loss_at(0.0)

        def raised(eta: float) -> bool:
            return not loss_at(eta) <= base  # NaN counts as risen

        # From eta = lr, halve while the loss still rises (or double while it does not) until it changes: that
        # step and the one before bracket eta_c.
        eta, rises = lr, raised(lr)
        factor, limit = (0.5, MAX_HALVINGS) if rises else (2.0, MAX_DOUBLINGS)
        low = high = None
        for _ in range(limit):
            if raised(eta * factor) != rises:
                low, high = sorted((eta, eta * factor))
                break
            eta *= factor
        else:
            down = f"the loss rises at every step down to lr * 2^-{MAX_HALVINGS}: not a descent direction here"
            note = down if rises else f"no rise up to lr * 2^{MAX_DOUBLINGS}"
        if note is None:
            for _ in range(BISECTIONS):
                middle = (low + high) / 2
                if raised(middle):
                    high = middle
                else:
                    low = middle
    finally:
        for p, a in zip(params, after):
            p.copy_(a)
        model.train(was_training)
    eta_c = high if note is None else None
    return {"eta_c": eta_c, "lambda_c": 2.0 / eta_c if eta_c else None, "sharpness_loss": base,
            "sharpness_passes": passes, "sharpness_note": note}  # fmt: skip


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
    maxima: dict[str, float] = {}
    sums: dict[str, list[float]] = {}  # group -> [sum of squares, elements]
    handles = hook_attention_logits(model, maxima) + hook_layer_outputs(model, sums) if measure else []
    try:
        output = _original_train_step(self, samples, raise_oom)
    finally:
        for handle in handles:
            handle.remove()
    if self.get_num_updates() != update:  # the update was skipped (fp16 overflow, OOM): nothing to measure
        return output
    record: dict[str, Any] = {"num_updates": update, "epoch": getattr(self, "_prelnx_epoch", None), "lr": lr,
                              **dict.fromkeys(_RECORD_KEYS)}  # fmt: skip
    if measure:
        hidden_rms = {group: math.sqrt(squares / count) for group, (squares, count) in sums.items() if count}
        record.update(_norms(named, before), attn_logit_max=maxima, hidden_rms=hidden_rms)
    if sharpen:
        if getattr(self, "_prelnx_held_out", None) is None:
            self._prelnx_held_out = held_out_batch(self)
        record.update(critical_sharpness(self, [p for _, p in named], before, lr, self._prelnx_held_out))
    emit(Diagnosed(record))
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
