"""RAdam's first, unrectified updates (`--radam-first-steps`, prelnx_fairseq_plugin/optim/radam.py) against the two
references written out here in float64 from their source: Transformer-Clinic's radam_fairseq/radam.py (commit
70f72b708ab074db5ca3726494e3263516041159: weight decay, then the rectified step when N_sma >= 5 and nothing else
before, its momentum step at line 124 commented out) and T-Fixup's fairseq/optim/adam.py (commit
b17e166d9f60671a92c3f39e24c9b8c93995e5a3, lines 248-252: the momentum step lr / (1 - beta1^t) * m_t before)."""

from __future__ import annotations

import math

import pytest
import torch

from prelnx.launch.inprocess import load_plugin

load_plugin()
from prelnx_fairseq_plugin.optim.radam import RAdam, RAdamConfig  # noqa: E402
from tests.plugin.test_adam_moments import steps, tiny_model  # noqa: E402  (its regression batch and model)

LR, B1, EPS, WD = 1e-2, 0.9, 1e-8, 0.1


def run(first_steps: str, beta2: float, count: int):
    """`count` real steps of the plugin's RAdam on a fixed regression batch: (start, [(grads, weights after)])."""
    model = tiny_model()
    cfg = RAdamConfig(adam_betas=(B1, beta2), adam_eps=EPS, weight_decay=WD, lr=[LR], radam_first_steps=first_steps)
    optimizer = RAdam(cfg, list(model.parameters()))
    start = [p.detach().clone() for p in model.parameters()]
    return start, steps(optimizer, model, count)


def reference(start, grads, beta2: float, momentum_first_steps: bool):
    """The authors' RAdam loop (Clinic's, or T-Fixup's with its momentum step), per parameter, in float64."""
    weights = [w.double() for w in start]
    m = [torch.zeros_like(w) for w in weights]
    v = [torch.zeros_like(w) for w in weights]
    n_sma_max = 2 / (1 - beta2) - 1
    out, rectified = [], []
    for t, step_grads in enumerate(grads, start=1):
        beta2_t = beta2**t
        n_sma = n_sma_max - 2 * t * beta2_t / (1 - beta2_t)
        rectified.append(n_sma >= 5)
        for i, g in enumerate(step_grads):
            g = g.double()
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            m[i] = B1 * m[i] + (1 - B1) * g
            weights[i] = weights[i] - WD * LR * weights[i]
            if n_sma >= 5:
                step_size = LR * math.sqrt((1 - beta2_t) * (n_sma - 4) / (n_sma_max - 4) * (n_sma - 2) * n_sma_max
                                           / n_sma / (n_sma_max - 2)) / (1 - B1**t)  # fmt: skip
                weights[i] = weights[i] - step_size * m[i] / (v[i].sqrt() + EPS)
            elif momentum_first_steps:
                weights[i] = weights[i] - LR / (1 - B1**t) * m[i]
        out.append([w.clone() for w in weights])
    return out, rectified


@pytest.mark.parametrize("beta2", [0.98, 0.995])  # Admin's warm-up recipe, its no-warm-up recipe
@pytest.mark.parametrize("first_steps", ["decay_only", "momentum"])
def test_each_update_is_its_references_radam(first_steps, beta2):
    start, seen = run(first_steps, beta2, 9)
    hand, rectified = reference(start, [grads for grads, _ in seen], beta2, first_steps == "momentum")
    assert rectified[:5] == [False] * 5 and all(rectified[6:])  # about the first five updates are unrectified
    for (_, weights), expected in zip(seen, hand):
        for w, e in zip(weights, expected):
            torch.testing.assert_close(w.double(), e, rtol=1e-5, atol=1e-7)


def test_clinics_first_five_updates_move_the_weights_by_weight_decay_only():
    start, seen = run("decay_only", 0.98, 5)
    for t, (_, weights) in enumerate(seen, start=1):
        for w0, w in zip(start, weights):
            torch.testing.assert_close(w, w0 * (1 - LR * WD) ** t, rtol=1e-6, atol=1e-8)
    _, momentum = run("momentum", 0.98, 1)  # torch's (and T-Fixup's) first update is a step of about lr
    assert all(float((w - w0 * (1 - LR * WD)).abs().max()) > 0.5 * LR for w0, w in zip(start, momentum[0][1]))



def test_fairseq_parses_the_option_and_its_default_is_torchs(tmp_path):
    """`--radam-first-steps` on fairseq's own command line (what a planned argv would pass), momentum by default."""
    from fairseq import options

    from prelnx.plugin_path import PLUGIN_DIR

    base = [str(tmp_path), "--user-dir", str(PLUGIN_DIR), "--arch", "transformer", "--optimizer", "radam"]
    for extra, expected in (([], "momentum"), (["--radam-first-steps", "decay_only"], "decay_only")):
        args = options.parse_args_and_arch(options.get_training_parser(), [*base, *extra])
        assert args.radam_first_steps == expected
