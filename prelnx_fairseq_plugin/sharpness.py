"""The critical sharpness lambda_c = 2 / eta_c of the update just taken (Kalra et al. 2026, arXiv 2601.16979).

With w the weights before the update and d = delta / lr the update per unit of learning rate (Adam's preconditioned
direction, SGD's gradient), eta_c is the smallest step for which the loss on a fixed batch rises: L(w + eta d) >
L(w). On a quadratic with SGD that is 2 (g.g) / (g.H.g): the step is unstable along d when lr * lambda_c > 2.
The search runs forward passes in eval mode on the same batch: from eta = lr, doubling (or halving) brackets eta_c,
then BISECTIONS bisections; a NaN or Inf loss counts as risen. The weights are copied back bit for bit afterwards.
"""

from __future__ import annotations

import math
from typing import Any

import torch

BISECTIONS = 4
MAX_DOUBLINGS = 30  # eta up to lr * 2^30
MAX_HALVINGS = 20  # eta down to lr * 2^-20


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


def _loss(trainer: Any, sample: Any) -> float:
    """The criterion's loss per unit of its sample size, in bits (as fairseq logs it)."""
    loss, sample_size, _ = trainer._criterion(trainer._model, sample)
    return float(loss) / max(float(sample_size), 1.0) / math.log(2)


@torch.no_grad()
def critical_sharpness(trainer: Any, params: list[torch.Tensor], before: list[torch.Tensor], lr: float,
                       sample: Any) -> dict[str, Any]:  # fmt: skip
    """eta_c, lambda_c = 2 / eta_c, the batch's loss at w (bits) and the forward passes taken. eta_c and lambda_c
    are None when no rise was found up to lr * 2^MAX_DOUBLINGS, or the loss rises at every step tried down to
    lr * 2^-MAX_HALVINGS (the update is not a descent direction on this batch); `sharpness_note` says which."""
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
        return _loss(trainer, sample)

    note = None
    try:
        base = loss_at(0.0)

        def raised(eta: float) -> bool:
            return not loss_at(eta) <= base  # NaN counts as risen

        low, high = 0.0, None
        if raised(lr):
            high = lr
            for _ in range(MAX_HALVINGS):
                if not raised(high / 2):
                    low = high / 2
                    break
                high /= 2
            else:
                note = f"the loss rises at every step down to lr * 2^-{MAX_HALVINGS}: not a descent direction here"
        else:
            low = lr
            for _ in range(MAX_DOUBLINGS):
                if raised(low * 2):
                    high = low * 2
                    break
                low *= 2
            else:
                note = f"no rise up to lr * 2^{MAX_DOUBLINGS}"
        if note is None and high is not None:
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
