"""GI-Adam (v_0 = g_1^2) and Adam without bias correction (`--optimizer prelnx_adam`), and RAdam's
`--second-moment-init`: the first update against its formula computed by hand, every later one the plain Adam
recurrence from the state reached, and with neither switch fairseq's own Adam exactly."""

from __future__ import annotations

import math

import pytest
import torch

from prelnx.launch.inprocess import load_plugin

load_plugin()
from fairseq.optim.adam import FairseqAdam, FairseqAdamConfig  # noqa: E402
from prelnx_fairseq_plugin.optim.adam_moments import AdamMomentsConfig, FairseqAdamMoments  # noqa: E402
from prelnx_fairseq_plugin.optim.radam import RAdam, RAdamConfig  # noqa: E402

LR, B1, B2, EPS = 1e-2, 0.9, 0.98, 1e-8
X = torch.tensor([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1], [2.0, 0.1, 0.4]])
TARGET = torch.tensor([[0.5, -1.0], [1.5, 0.2], [-0.3, 0.8]])


def tiny_model() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def steps(optimizer, model: torch.nn.Linear, count: int) -> list[tuple[list[torch.Tensor], list[torch.Tensor]]]:
    """`count` real steps on a fixed regression batch; per step: (gradients, weights after the step)."""
    seen = []
    for _ in range(count):
        optimizer.zero_grad()
        ((model(X) - TARGET) ** 2).mean().backward()
        grads = [p.grad.detach().clone() for p in model.parameters()]
        optimizer.step()
        seen.append((grads, [p.detach().clone() for p in model.parameters()]))
    return seen


def adam(model, **switches) -> FairseqAdamMoments:
    cfg = AdamMomentsConfig(adam_betas=(B1, B2), adam_eps=EPS, lr=[LR], **switches)
    return FairseqAdamMoments(cfg, list(model.parameters()))


def by_hand(start: list[torch.Tensor], grads: list[list[torch.Tensor]], v0_gradient: bool, bias_correction: bool):
    """Adam's recurrence written out (module docstring of adam_moments.py), in float64, per parameter."""
    weights = [w.double() for w in start]
    m = [torch.zeros_like(w) for w in weights]
    v = [g.double() ** 2 if v0_gradient else torch.zeros_like(w) for g, w in zip(grads[0], weights)]
    out = []
    for t, step_grads in enumerate(grads, start=1):
        c = math.sqrt(1 - B2**t) / (1 - B1**t) if bias_correction else 1.0
        for i, g in enumerate(step_grads):
            g = g.double()
            m[i] = B1 * m[i] + (1 - B1) * g
            v[i] = B2 * v[i] + (1 - B2) * g**2
            weights[i] = weights[i] - LR * c * m[i] / (v[i].sqrt() + EPS)
        out.append([w.clone() for w in weights])
    return out


def test_without_switches_it_is_fairseqs_adam_step_for_step():
    ours, theirs = tiny_model(), tiny_model()
    fairseq_adam = FairseqAdam(FairseqAdamConfig(adam_betas=str((B1, B2)), adam_eps=EPS, lr=[LR], use_old_adam=True),
                               list(theirs.parameters()))  # fmt: skip
    for (_, mine), (_, reference) in zip(steps(adam(ours), ours, 4), steps(fairseq_adam, theirs, 4)):
        for a, b in zip(mine, reference):
            assert torch.equal(a, b)


@pytest.mark.parametrize("v0_gradient, bias_correction", [(True, True), (False, False), (True, False)])
def test_first_update_is_its_formula_and_later_ones_the_adam_recurrence(v0_gradient, bias_correction):
    model = tiny_model()
    start = [p.detach().clone() for p in model.parameters()]
    optimizer = adam(model, second_moment_init="gradient" if v0_gradient else "zero",
                     no_bias_correction=not bias_correction)  # fmt: skip
    seen = steps(optimizer, model, 3)
    g1 = seen[0][0]
    # the first update in closed form
    for w0, g, w1 in zip(start, g1, seen[0][1]):
        if v0_gradient and bias_correction:  # v_1 = g^2: lr sqrt(1 - b2) g / (|g| + eps)
            expected = w0 - LR * math.sqrt(1 - B2) * g / (g.abs() + EPS)
        elif v0_gradient:  # v_1 = g^2, m_1 = (1 - b1) g, no correction: lr (1 - b1) g / (|g| + eps)
            expected = w0 - LR * (1 - B1) * g / (g.abs() + EPS)
        else:  # v_1 = (1 - b2) g^2, no correction: lr (1 - b1) / sqrt(1 - b2) g / (|g| + eps / sqrt(1 - b2))
            expected = w0 - LR * (1 - B1) / math.sqrt(1 - B2) * g / (g.abs() + EPS / math.sqrt(1 - B2))
        torch.testing.assert_close(w1, expected, rtol=1e-6, atol=1e-7)
    # and every update, the first and the later ones, is the recurrence from the state reached
    hand = by_hand(start, [grads for grads, _ in seen], v0_gradient, bias_correction)
    for (_, weights), expected in zip(seen, hand):
        for w, e in zip(weights, expected):
            torch.testing.assert_close(w.double(), e, rtol=1e-6, atol=1e-7)


def test_gi_adams_first_update_is_sqrt_one_minus_beta2_of_adams():
    plain, gi = tiny_model(), tiny_model()
    start = [p.detach().clone() for p in plain.parameters()]
    (_, after_plain), = steps(adam(plain), plain, 1)
    (_, after_gi), = steps(adam(gi, second_moment_init="gradient"), gi, 1)
    for w0, a, b in zip(start, after_plain, after_gi):
        torch.testing.assert_close(b - w0, (a - w0) * math.sqrt(1 - B2), rtol=1e-5, atol=1e-8)


def test_radam_gradient_init_keeps_its_first_update_and_starts_v_from_g_squared():
    plain, gi = tiny_model(), tiny_model()
    configs = [RAdamConfig(adam_betas=(B1, B2), adam_eps=EPS, lr=[LR], second_moment_init=init)
               for init in ("zero", "gradient")]  # fmt: skip
    optimizers = [RAdam(cfg, list(model.parameters())) for cfg, model in zip(configs, (plain, gi))]
    seen_plain, seen_gi = steps(optimizers[0], plain, 2), steps(optimizers[1], gi, 2)
    for a, b in zip(seen_plain[0][1], seen_gi[0][1]):  # RAdam's first update does not use v
        assert torch.equal(a, b)
    g1, g2 = seen_gi[0][0], seen_gi[1][0]
    for p, a, b in zip(gi.parameters(), g1, g2):
        v = optimizers[1].optimizer.state[p]["exp_avg_sq"]
        torch.testing.assert_close(v, B2 * a**2 + (1 - B2) * b**2)  # v_0 = g_1^2, then the usual recurrence


def test_the_config_keys_reach_fairseqs_parsed_optimizer(tiny_config_file):
    """`optimizer.second_moment_init` / `bias_correction` through the planner's argv, parsed by fairseq itself."""
    from prelnx.config.load import load_config
    from prelnx.launch.inprocess import training_cfg

    config, _ = load_config(tiny_config_file(optimizer={"second_moment_init": "gradient", "bias_correction": False}))
    cfg = training_cfg(config)
    assert cfg.optimizer._name == "prelnx_adam"
    assert cfg.optimizer.second_moment_init == "gradient" and cfg.optimizer.no_bias_correction is True
    config, _ = load_config(tiny_config_file(optimizer={"name": "radam", "second_moment_init": "gradient"}))
    assert training_cfg(config).optimizer.second_moment_init == "gradient"
