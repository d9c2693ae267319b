"""`--lr-scheduler warmup_decay`: an optional linear warm-up followed by one of four decays.

With peak = --lr, N = --warmup-updates, t = updates done so far, e = the current epoch (from 1):

  warm-up (t < N):   lr = warmup_init_lr + (peak - warmup_init_lr) * t / N
  after it (t >= N):
    constant         lr = peak
    inverse_sqrt     lr = peak * sqrt(t0 / t), t0 = max(N, 1); with --decay-start-update U, t0 = max(U, N), a fixed
                     update, so runs that differ in N alone share their lr from t0 on; with --decay-start-epoch E,
                     t0 is the update at which epoch E began; with --decay-period D, lr = peak * sqrt(D / (D + t - N)),
                     T-Fixup's `inverse_sqrt_nowarmup --decay-period D` (layer6ai-labs/T-Fixup) when N = 0
    step             lr = peak * step_factor ** (number of --step-epochs <= e)
    linear           lr = peak + (end_lr - peak) * (t - N) / (T - N), T = --max-update, then end_lr

N = 0 is "no warm-up": the first update uses the peak lr (fairseq's `inverse_sqrt` has no such setting).
"""

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import List, Optional

from omegaconf import II

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.optim.lr_scheduler import FairseqLRScheduler, register_lr_scheduler

from prelnx.layouts import DECAYS

DECAY_CHOICES = ChoiceEnum(list(DECAYS))


@dataclass
class WarmupDecayConfig(FairseqDataclass):
    warmup_updates: int = field(default=0, metadata={"help": "linear warm-up over N updates; 0 = start at the peak"})
    warmup_init_lr: float = field(default=0.0, metadata={"help": "lr at update 0 when warming up"})
    decay: DECAY_CHOICES = field(default="constant", metadata={"help": "what follows the warm-up"})
    step_epochs: str = field(default="", metadata={"help": "step: comma-separated epochs at which lr *= step_factor"})
    step_factor: float = field(default=0.1, metadata={"help": "step: the multiplier"})
    decay_start_epoch: int = field(default=0, metadata={"help": "inverse_sqrt: hold the peak until this epoch; 0 = off"})
    decay_start_update: int = field(
        default=0, metadata={"help": "inverse_sqrt: decay as sqrt(U/t) from this update, whatever the warm-up; 0 = off"}
    )
    decay_period: int = field(
        default=0, metadata={"help": "inverse_sqrt: decay as sqrt(D/(D + t - warmup)) from the warm-up's end; 0 = off"}
    )
    end_lr: float = field(default=0.0, metadata={"help": "linear: the lr at --max-update"})
    max_update: int = II("optimization.max_update")
    lr: List[float] = II("optimization.lr")


def warmup_decay_lr(
    cfg: WarmupDecayConfig, num_updates: int, epoch: int, decay_start_update: Optional[int] = None
) -> float:
    """The formula of the module docstring, as a pure function (unit-tested against closed-form values)."""
    peak = cfg.lr[0] if isinstance(cfg.lr, Collection) else cfg.lr
    warmup = cfg.warmup_updates
    if num_updates < warmup:
        return cfg.warmup_init_lr + (peak - cfg.warmup_init_lr) * num_updates / warmup
    if cfg.decay == "constant":
        return peak
    if cfg.decay == "inverse_sqrt":
        if cfg.decay_period > 0:
            return peak * (cfg.decay_period / (cfg.decay_period + num_updates - warmup)) ** 0.5
        if cfg.decay_start_epoch > 0:
            if decay_start_update is None:  # the hold has not ended yet
                return peak
            start = max(decay_start_update, 1)
        elif cfg.decay_start_update > 0:
            start = max(cfg.decay_start_update, warmup, 1)
        else:
            start = max(warmup, 1)
        return peak * (start / max(num_updates, start)) ** 0.5
    if cfg.decay == "step":
        steps = [int(e) for e in str(cfg.step_epochs).split(",") if e.strip()]
        return peak * cfg.step_factor ** sum(1 for e in steps if epoch >= e)
    if cfg.decay == "linear":
        progress = min(1.0, (num_updates - warmup) / max(cfg.max_update - warmup, 1))
        return peak + (cfg.end_lr - peak) * progress
    raise ValueError(f"unknown decay {cfg.decay!r}")


@register_lr_scheduler("warmup_decay", dataclass=WarmupDecayConfig)
class WarmupDecaySchedule(FairseqLRScheduler):
    def __init__(self, cfg: WarmupDecayConfig, optimizer):
        super().__init__(cfg, optimizer)
        if isinstance(cfg.lr, Collection) and len(cfg.lr) > 1:
            raise ValueError("warmup_decay takes a single --lr")
        if cfg.decay == "linear" and (cfg.max_update is None or cfg.max_update <= cfg.warmup_updates):
            raise ValueError("warmup_decay with --decay linear needs --max-update above --warmup-updates")
        if cfg.decay_period > 0 and (cfg.decay != "inverse_sqrt" or cfg.decay_start_update or cfg.decay_start_epoch):
            raise ValueError("warmup_decay: --decay-period is for --decay inverse_sqrt, without --decay-start-update "
                             "or --decay-start-epoch")  # fmt: skip
        self.epoch = 1
        self.decay_start_update: Optional[int] = None
        self.optimizer.set_lr(warmup_decay_lr(cfg, 0, self.epoch))

    def state_dict(self):
        return {"best": self.best, "decay_start_update": self.decay_start_update}

    def load_state_dict(self, state_dict):
        self.best = state_dict["best"]
        self.decay_start_update = state_dict.get("decay_start_update")

    def step_begin_epoch(self, epoch):  # the trainer's step_update follows, which sets the lr
        self.epoch = epoch

    def step_update(self, num_updates):
        start_epoch = self.cfg.decay_start_epoch
        if start_epoch > 0 and self.decay_start_update is None and self.epoch >= start_epoch:
            self.decay_start_update = num_updates
        lr = warmup_decay_lr(self.cfg, num_updates, self.epoch, self.decay_start_update)
        self.optimizer.set_lr(lr)
        return lr
