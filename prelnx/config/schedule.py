"""The `schedule:` keys, their checks, and the warning for a legal but probably unintended schedule; the formulas
are the plugin's warmup_decay (prelnx_fairseq_plugin/lr_scheduler/warmup_decay.py; docs/configs.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from prelnx.layouts import DECAYS

DECAY_START_KEYS = ("decay_period", "decay_start_update", "decay_start_epoch")  # inverse_sqrt: where its decay starts


class Problems(list[tuple[str, str]]):
    """The (key, message) pairs of a config's checks, in the order they are found (schema.check_values)."""

    def need(self, ok: bool, key: str, message: str) -> None:
        """One more problem, `key: message`, unless `ok`."""
        if not ok:
            self.append((key, message))


@dataclass
class ScheduleConfig:
    # Linear warm-up from warmup_init_lr to optimizer.lr over this many updates; 0 = no warm-up: the first
    # update already uses the peak lr. (Unlike fairseq's inverse_sqrt with --warmup-updates 1, which decays
    # as lr/sqrt(t) from the first update: see docs/configs.md, "What no warm-up means".)
    warmup_updates: int = 0
    warmup_init_lr: float = 0.0
    decay: Literal[DECAYS] = "constant"
    step_epochs: list[int] = field(default_factory=list)  # step: multiply the lr by step_factor from each of these epochs on
    step_factor: float = 0.1
    decay_start_epoch: int | None = None  # inverse_sqrt: hold the peak until this epoch starts, then decay from there
    # inverse_sqrt: decay as sqrt(U/t) from update U, whatever warmup_updates is, so that a warm-up sweep's points
    # share their lr curve after U and differ in warm-up alone (docs/configs.md, "What no warm-up means")
    decay_start_update: int | None = None
    # inverse_sqrt: the shifted decay sqrt(D / (D + t - warmup_updates)) from the end of warm-up (from update 0
    # without warm-up), T-Fixup's `--lr-scheduler inverse_sqrt_nowarmup --decay-period D`
    decay_period: int | None = None
    end_lr: float = 0.0  # linear: the lr reached at train.max_update


def schedule_problems(s: ScheduleConfig, lr: float, max_update: int | None) -> list[tuple[str, str]]:
    """(key, message) for every schedule value out of bounds or set for a decay that does not read it; `lr` is
    optimizer.lr (the peak) and `max_update` train.max_update (where decay: linear ends)."""
    problems = Problems()
    need = problems.need
    need(s.warmup_updates >= 0, "schedule.warmup_updates", f"must be >= 0 (0 = no warm-up), got {s.warmup_updates}")
    lr_ok = lr > 0  # otherwise the keys bounded by the lr are not blamed for it: the lr is the one cause
    need(s.warmup_init_lr >= 0 and (s.warmup_init_lr <= lr or not lr_ok), "schedule.warmup_init_lr",
         f"must be in [0, optimizer.lr={lr}], got {s.warmup_init_lr}")  # fmt: skip
    if s.decay == "step":
        need(bool(s.step_epochs), "schedule.step_epochs", "decay: step needs at least one epoch, e.g. [8]")
        need(all(e >= 1 for e in s.step_epochs), "schedule.step_epochs", f"epochs start at 1, got {s.step_epochs}")
        need(s.step_epochs == sorted(set(s.step_epochs)), "schedule.step_epochs",
             f"must be increasing, got {s.step_epochs}")  # fmt: skip
        need(0.0 < s.step_factor <= 1.0, "schedule.step_factor", f"must be in (0, 1], got {s.step_factor}")
    else:
        need(not s.step_epochs, "schedule.step_epochs", f"only decay: step uses it; schedule.decay is {s.decay}")
    for key in DECAY_START_KEYS:
        if getattr(s, key) is not None:
            need(s.decay == "inverse_sqrt", f"schedule.{key}",
                 f"only decay: inverse_sqrt uses it; schedule.decay is {s.decay}")
    if s.decay_start_epoch is not None:
        need(s.decay_start_epoch >= 1, "schedule.decay_start_epoch", f"epochs start at 1, got {s.decay_start_epoch}")
    if s.decay_start_update is not None:
        need(s.decay_start_update >= 1, "schedule.decay_start_update", f"updates start at 1, got {s.decay_start_update}")
        need(s.decay_start_update >= s.warmup_updates, "schedule.decay_start_update",
             f"must be >= schedule.warmup_updates ({s.warmup_updates}): the decay starts after the warm-up")  # fmt: skip
        need(s.decay_start_epoch is None, "schedule.decay_start_update", "set decay_start_update or decay_start_epoch, not both")
    if s.decay_period is not None:
        need(s.decay_period >= 1, "schedule.decay_period",
             f"must be >= 1 (updates; lr = peak * sqrt(D / (D + t)) after warm-up) or null, got {s.decay_period}")  # fmt: skip
        others = [key for key in DECAY_START_KEYS[1:] if getattr(s, key) is not None]
        need(not others, "schedule.decay_period", f"set one of {', '.join(DECAY_START_KEYS)}, not several: "
             f"each says where inverse_sqrt's decay starts (also set: {', '.join(others)})")  # fmt: skip
    if s.decay == "linear":
        need(max_update is not None, "train.max_update", "decay: linear needs train.max_update (where the lr reaches end_lr)")
        need(max_update is None or max_update > s.warmup_updates, "train.max_update",
             f"must exceed schedule.warmup_updates ({s.warmup_updates}) for decay: linear")  # fmt: skip
        need(s.end_lr >= 0 and (s.end_lr <= lr or not lr_ok), "schedule.end_lr",
             f"must be in [0, optimizer.lr={lr}], got {s.end_lr}")  # fmt: skip
    return problems


def lr_curve_warnings(s: ScheduleConfig, lr: float) -> list[str]:
    """Legal but probably unintended schedules: a no-warm-up run that decays from its very first update."""
    if s.warmup_updates == 0 and s.decay == "inverse_sqrt" and all(getattr(s, key) is None for key in DECAY_START_KEYS):
        return [
            (f"schedule: warmup_updates 0 with decay inverse_sqrt decays from update 1 (lr {lr:g} / sqrt(t): "
            f"{lr / 10:g} by update 100), so this run differs from a warmed-up one in its whole lr curve, not in "
            f"warm-up alone; set schedule.decay_start_update (e.g. the longest warm-up of the sweep) to hold the "
            f"peak until then (docs/configs.md, 'What no warm-up means')")
        ]
    return []
