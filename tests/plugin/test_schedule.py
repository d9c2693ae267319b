"""The warmup_decay schedule against closed-form values, directly and through fairseq's registry."""

from __future__ import annotations

import math
from argparse import Namespace

import pytest
import torch

from prelnx.launch.inprocess import load_plugin

load_plugin()
from prelnx_fairseq_plugin.lr_scheduler.warmup_decay import WarmupDecayConfig, warmup_decay_lr  # noqa: E402


def cfg(**overrides) -> WarmupDecayConfig:
    return WarmupDecayConfig(**{"lr": [1e-3], "max_update": 1000, **overrides})


def test_no_warmup_starts_at_the_peak():
    c = cfg(warmup_updates=0, decay="constant")
    assert [warmup_decay_lr(c, t, 1) for t in (0, 1, 500)] == [1e-3, 1e-3, 1e-3]


def test_linear_warmup_then_inverse_sqrt():
    c = cfg(warmup_updates=100, warmup_init_lr=1e-7, decay="inverse_sqrt")
    assert warmup_decay_lr(c, 0, 1) == pytest.approx(1e-7)
    assert warmup_decay_lr(c, 50, 1) == pytest.approx(1e-7 + (1e-3 - 1e-7) * 0.5)
    assert warmup_decay_lr(c, 100, 1) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 400, 1) == pytest.approx(1e-3 * math.sqrt(100 / 400))


def test_inverse_sqrt_without_warmup_is_fairseqs_warmup_one():
    c = cfg(warmup_updates=0, decay="inverse_sqrt")
    assert warmup_decay_lr(c, 1, 1) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 100, 1) == pytest.approx(1e-4)


def test_inverse_sqrt_held_until_an_epoch():
    c = cfg(warmup_updates=0, decay="inverse_sqrt", decay_start_epoch=6)
    assert warmup_decay_lr(c, 500, 5, None) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 500, 6, 500) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 2000, 9, 500) == pytest.approx(1e-3 * 0.5)


def test_decay_period_is_t_fixups_shifted_inverse_sqrt_from_update_zero():
    """T-Fixup's inverse_sqrt_nowarmup --decay-period D: lr = peak * sqrt(D / (D + t)), the peak at update 0."""
    c = cfg(lr=[5e-4], warmup_updates=0, decay="inverse_sqrt", decay_period=4000)
    assert warmup_decay_lr(c, 0, 1) == pytest.approx(5e-4)
    assert warmup_decay_lr(c, 1, 1) == pytest.approx(5e-4 * math.sqrt(4000 / 4001))
    assert warmup_decay_lr(c, 4000, 1) == pytest.approx(5e-4 / math.sqrt(2))  # 3.54e-4
    assert warmup_decay_lr(c, 12000, 1) == pytest.approx(2.5e-4)  # halved at t = 3D
    assert warmup_decay_lr(c, 396000, 1) == pytest.approx(5e-5)  # D + t = 100 D


def test_decay_period_after_a_warmup_starts_at_the_peak_where_the_warmup_ends():
    c = cfg(warmup_updates=100, decay="inverse_sqrt", decay_period=200)
    assert warmup_decay_lr(c, 50, 1) == pytest.approx(1e-3 * 0.5)  # warm-up from warmup_init_lr 0
    assert warmup_decay_lr(c, 100, 1) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 300, 1) == pytest.approx(1e-3 * math.sqrt(200 / 400))
    assert warmup_decay_lr(c, 700, 1) == pytest.approx(1e-3 * 0.5)


def test_step_multiplies_from_each_listed_epoch_on():
    c = cfg(decay="step", step_epochs="8,12", step_factor=0.1)
    assert warmup_decay_lr(c, 700, 7) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 800, 8) == pytest.approx(1e-4)
    assert warmup_decay_lr(c, 1300, 12) == pytest.approx(1e-5)


def test_linear_decay_reaches_end_lr_at_max_update():
    c = cfg(warmup_updates=100, decay="linear", end_lr=1e-5, max_update=1000)
    assert warmup_decay_lr(c, 100, 1) == pytest.approx(1e-3)
    assert warmup_decay_lr(c, 550, 1) == pytest.approx(1e-3 + (1e-5 - 1e-3) * 0.5)
    assert warmup_decay_lr(c, 1000, 1) == pytest.approx(1e-5)
    assert warmup_decay_lr(c, 5000, 1) == pytest.approx(1e-5)


def test_registered_scheduler_drives_a_real_optimizer_and_survives_resume():
    from fairseq.optim import build_optimizer
    from fairseq.optim.lr_scheduler import build_lr_scheduler

    params = [torch.nn.Parameter(torch.zeros(2))]
    optimizer = build_optimizer(Namespace(optimizer="radam", lr=[2e-3], adam_betas="(0.9, 0.98)", adam_eps=1e-8,
                                          weight_decay=0.0), params)  # fmt: skip
    assert isinstance(optimizer.optimizer, torch.optim.RAdam)
    args = Namespace(lr_scheduler="warmup_decay", lr=[2e-3], warmup_updates=0, warmup_init_lr=0.0,
                     decay="inverse_sqrt", step_epochs="", step_factor=0.1, decay_start_epoch=2, end_lr=0.0,
                     max_update=100)  # fmt: skip
    schedule = build_lr_scheduler(args, optimizer)
    assert optimizer.get_lr() == pytest.approx(2e-3)
    schedule.step_begin_epoch(1)
    assert schedule.step_update(10) == pytest.approx(2e-3)
    schedule.step_begin_epoch(2)
    assert schedule.step_update(20) == pytest.approx(2e-3)  # epoch 2 begins at update 20: decay starts here
    assert schedule.step_update(80) == pytest.approx(2e-3 * math.sqrt(20 / 80))
    state = schedule.state_dict()

    resumed = build_lr_scheduler(args, optimizer)
    resumed.load_state_dict(state)
    resumed.step_begin_epoch(3)
    assert resumed.step_update(80) == pytest.approx(2e-3 * math.sqrt(20 / 80))


def test_registered_scheduler_follows_the_decay_period_and_refuses_it_beside_another_decay_start():
    from fairseq.optim import build_optimizer
    from fairseq.optim.lr_scheduler import build_lr_scheduler

    params = [torch.nn.Parameter(torch.zeros(2))]
    optimizer = build_optimizer(Namespace(optimizer="adam", lr=[5e-4], adam_betas="(0.9, 0.98)", adam_eps=1e-8,
                                          weight_decay=0.0), params)  # fmt: skip
    args = Namespace(lr_scheduler="warmup_decay", lr=[5e-4], warmup_updates=0, decay="inverse_sqrt",
                     decay_period=4000, max_update=100)  # fmt: skip
    schedule = build_lr_scheduler(args, optimizer)
    assert optimizer.get_lr() == pytest.approx(5e-4)  # the first update's lr: the peak
    assert schedule.step_update(4000) == pytest.approx(5e-4 / math.sqrt(2))
    assert optimizer.get_lr() == pytest.approx(5e-4 / math.sqrt(2))
    with pytest.raises(ValueError, match="--decay-period is for --decay inverse_sqrt"):
        build_lr_scheduler(Namespace(**{**vars(args), "decay_start_update": 4000}), optimizer)


def test_a_fixed_decay_start_makes_warmup_the_only_difference():
    """Warm-up 0, 50 and 200 with decay_start_update 200: the same lr from update 200 on, the peak held before."""
    curves = {n: [warmup_decay_lr(cfg(warmup_updates=n, decay="inverse_sqrt", decay_start_update=200), t, 1)
                  for t in range(0, 1001, 10)] for n in (0, 50, 200)}  # fmt: skip
    after = range(20, 101)  # t >= 200
    assert [curves[0][i] for i in after] == [curves[50][i] for i in after] == [curves[200][i] for i in after]
    assert curves[0][1] == pytest.approx(1e-3) and curves[0][19] == pytest.approx(1e-3)  # held, not decaying
    assert curves[0][100] == pytest.approx(1e-3 * math.sqrt(200 / 1000))
    plain = cfg(warmup_updates=0, decay="inverse_sqrt")
    assert warmup_decay_lr(plain, 10, 1) == pytest.approx(1e-3 / math.sqrt(10))  # the trap it avoids


def test_schedule_warnings_flag_a_no_warmup_run_that_decays_from_update_one(tmp_path):
    from prelnx.config.load import load_config
    from prelnx.config.schedule import lr_curve_warnings

    path = tmp_path / "c.yaml"
    path.write_text("data: {dataset: synthetic}\ntrain: {max_epoch: 1}\n"
                    "schedule: {warmup_updates: 0, decay: inverse_sqrt}\n")  # fmt: skip
    config, _ = load_config(path)
    assert "decays from update 1" in lr_curve_warnings(config.schedule, config.optimizer.lr)[0]
    fixed, _ = load_config(path, ["schedule.decay_start_update=200"])
    assert lr_curve_warnings(fixed.schedule, fixed.optimizer.lr) == []
    shifted, _ = load_config(path, ["schedule.decay_period=4000"])  # decays from update 0, on purpose
    assert lr_curve_warnings(shifted.schedule, shifted.optimizer.lr) == []
    with pytest.raises(Exception, match="decay_start_update: must be >= schedule.warmup_updates"):
        load_config(path, ["schedule.decay_start_update=10", "schedule.warmup_updates=50"])
