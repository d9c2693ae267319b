"""Each training diagnostic of prelnx_fairseq_plugin/diagnostics.py against a case whose value is known in closed form
(issue 49, finding 5): the critical sharpness on quadratic losses of known curvature, the gradient norm and update
ratio on set gradients and weights, the attention logit on identity projections, the layer-output sums on a layer of
known output. Quick: no training; the real training that writes these rows is tests/run/test_diagnostics.py.

The quadratic: L(w) = 1/2 w.H.w. An update w0 -> w0 + lr d raises the loss at a step eta along d exactly when
eta > eta* = -2 g.d / d.H.d (g = H w0), so lambda_c = 2 / eta* = d.H.d / (-g.d): SGD (d = -g) gives the curvature
along g, g.H.g / g.g (h itself in one dimension). The search returns the top of its final bracket, eta* < eta_c <=
eta* (1 + 2^-BISECTIONS), so lambda_c lies in [lambda / (1 + 2^-BISECTIONS), lambda]."""

from __future__ import annotations

import math

import pytest
import torch

from prelnx_fairseq_plugin.diagnostics import (
    BISECTIONS,
    _norms,
    critical_sharpness,
    hook_attention_logits,
    hook_layer_outputs,
)

SAMPLE_SIZE = 7.0  # the criterion's sample size: critical_sharpness divides it out (and converts nats to bits)


class Quadratic(torch.nn.Module):
    def __init__(self, w0: list[float]) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))


class QuadraticTrainer:
    """What critical_sharpness reads of fairseq's Trainer: the model and a criterion(model, sample) returning
    (summed loss, sample size, logging output), here 1/2 w.H.w per unit of sample size, in nats."""

    def __init__(self, curvatures: list[float], w0: list[float]) -> None:
        self._model = Quadratic(w0)
        self.h = torch.tensor(curvatures, dtype=torch.float64)

    def _criterion(self, model: Quadratic, sample: object) -> tuple[torch.Tensor, float, dict]:
        return 0.5 * (self.h * model.w * model.w).sum() * SAMPLE_SIZE, SAMPLE_SIZE, {}

    def step(self, lr: float, direction: list[float] | None = None) -> dict:
        """Take the update w0 + lr d (d = -g: SGD) and measure it as train_step does."""
        w = self._model.w
        before = [w.detach().clone()]
        d = -(self.h * w.detach()) if direction is None else torch.tensor(direction, dtype=torch.float64)
        with torch.no_grad():
            w.add_(lr * d)
        self.after = w.detach().clone()
        return critical_sharpness(self, [w], before, lr, sample=None)


def expected_lambda(curvatures: list[float], w0: list[float], direction: list[float] | None = None) -> float:
    h, w = torch.tensor(curvatures, dtype=torch.float64), torch.tensor(w0, dtype=torch.float64)
    g = h * w
    d = -g if direction is None else torch.tensor(direction, dtype=torch.float64)
    return float((d * h * d).sum() / -(g * d).sum())


def assert_bracketed(found: float, exact: float) -> None:
    assert exact / (1 + 2.0**-BISECTIONS) * (1 - 1e-12) <= found <= exact * (1 + 1e-12), (found, exact)


@pytest.mark.parametrize("curvatures, w0, lr", [
    ([5.0], [1.0], 0.01),  # lr far below eta* = 0.4: the search doubles up to it
    ([5.0], [1.0], 1.0),  # lr above eta*: the update taken was unstable; the search halves down to it
    ([0.5], [-3.0], 0.3),
    ([1.0, 10.0, 100.0], [1.0, 1.0, 1.0], 1e-3),  # the curvature along g: 1001001 / 10101 = 99.1
    ([2.0, 0.1], [0.2, 5.0], 0.05),
])  # fmt: skip
def test_critical_sharpness_of_sgd_on_a_quadratic_is_the_curvature_along_the_gradient(curvatures, w0, lr):
    trainer = QuadraticTrainer(curvatures, w0)
    found = trainer.step(lr)
    exact = expected_lambda(curvatures, w0)
    assert_bracketed(found["lambda_c"], exact)
    assert found["lambda_c"] == pytest.approx(2 / found["eta_c"])
    assert found["sharpness_note"] is None and found["sharpness_passes"] >= 2 + BISECTIONS
    # the loss at w0, in bits per unit of sample size; the weights are the update's, bit for bit
    h, w = torch.tensor(curvatures), torch.tensor(w0)
    assert found["sharpness_loss"] == pytest.approx(float(0.5 * (h * w * w).sum()) / math.log(2))
    assert torch.equal(trainer._model.w.detach(), trainer.after)


def test_lr_times_lambda_c_crosses_2_where_the_step_taken_was_unstable():
    """SGD on h = 5 (eta* = 0.4): lr 0.39 is stable (lr x lambda_c < 2), lr 0.5 is not (> 2): the report's edge.
    Within the bracket's resolution of the edge the search cannot tell: at lr 0.41 it returns eta_c = lr (x 2 = 2)."""
    assert QuadraticTrainer([5.0], [1.0]).step(0.39)["lambda_c"] * 0.39 < 2
    assert QuadraticTrainer([5.0], [1.0]).step(0.5)["lambda_c"] * 0.5 > 2
    assert QuadraticTrainer([5.0], [1.0]).step(0.41)["lambda_c"] * 0.41 == pytest.approx(2)


def test_critical_sharpness_along_a_preconditioned_direction():
    """Adam's first update is -sign(g) per coordinate: lambda_c = d.H.d / (-g.d) = sum(h) / sum(|g|)."""
    curvatures, w0 = [1.0, 10.0, 100.0], [1.0, -1.0, 0.5]
    direction = [-1.0, 1.0, -1.0]
    exact = expected_lambda(curvatures, w0, direction)
    assert exact == pytest.approx(111.0 / 61.0)
    assert_bracketed(QuadraticTrainer(curvatures, w0).step(1e-3, direction)["lambda_c"], exact)


def test_an_ascent_update_and_a_loss_that_never_rises_give_no_sharpness_and_say_why():
    ascent = QuadraticTrainer([5.0], [1.0]).step(0.01, direction=[1.0])
    assert ascent["lambda_c"] is None and ascent["eta_c"] is None
    assert "not a descent direction" in ascent["sharpness_note"]
    flat = QuadraticTrainer([0.0], [1.0]).step(0.01, direction=[-1.0])  # h = 0: the loss never rises
    assert flat["lambda_c"] is None and "no rise" in flat["sharpness_note"]


class Layers(torch.nn.Module):
    """Parameters named as fairseq's: decoder.layers.5.fc1 / fc2 (group decoder.5.ffn) and the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.decoder = torch.nn.Module()
        layer = torch.nn.Module()
        layer.fc1 = torch.nn.Linear(2, 2, bias=False)
        layer.fc2 = torch.nn.Linear(3, 1, bias=False)
        self.decoder.layers = torch.nn.ModuleList([torch.nn.Identity()] * 5 + [layer])
        self.decoder.embed_tokens = torch.nn.Embedding(2, 2)


def test_gradient_norm_and_update_ratio_per_group():
    model = Layers()
    named = list(model.named_parameters())
    with torch.no_grad():
        for _, p in named:
            p.fill_(1.0)
    before = [p.detach().clone() for _, p in named]
    names = ("decoder.layers.5.fc1.weight", "decoder.layers.5.fc2.weight", "decoder.embed_tokens.weight")
    grads, steps = dict(zip(names, (1.0, 2.0, 3.0))), dict(zip(names, (0.5, 0.0, -1.0)))
    with torch.no_grad():
        for name, p in named:
            p.grad = torch.full_like(p, grads[name])
            p.add_(steps[name])
    found = _norms(named, before)
    # decoder.5.ffn: 4 gradients of 1 and 3 of 2 -> sqrt(4 + 12) = 4; weights 7 ones, moved by 0.5 in 4 of them
    assert found["grad_norm"] == {"decoder.5.ffn": pytest.approx(4.0), "decoder.embed_tokens": pytest.approx(6.0)}
    assert found["update_ratio"]["decoder.5.ffn"] == pytest.approx(math.sqrt(4 * 0.25) / math.sqrt(7))
    assert found["update_ratio"]["decoder.embed_tokens"] == pytest.approx(1.0)  # every weight 1 -> 0


def attention() -> torch.nn.Module:
    """encoder.layers.0.self_attn: one head of dim 4, q and k projections the identity, so a logit is x_i.x_j / 2."""
    from fairseq.modules import MultiheadAttention

    module = MultiheadAttention(4, 1, self_attention=True)
    with torch.no_grad():
        for proj in (module.q_proj, module.k_proj):
            proj.weight.copy_(torch.eye(4))
            proj.bias.zero_()
    model = torch.nn.Module()
    model.encoder = torch.nn.Module()
    model.encoder.layers = torch.nn.ModuleList([torch.nn.Module()])
    model.encoder.layers[0].self_attn = module
    return model


def test_the_largest_attention_logit_is_q_dot_k_over_root_head_dim_at_the_positions_attended():
    model = attention()
    module = model.encoder.layers[0].self_attn
    x = torch.tensor([[1.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 3.0, 0]]).view(3, 1, 4)  # T x B x C
    cases = [({}, 9.0 / 2),  # x_2.x_2 = 9, over sqrt(4)
             ({"key_padding_mask": torch.tensor([[False, False, True]])}, 4.0 / 2),  # position 2 is padding
             ({"attn_mask": torch.triu(torch.full((3, 3), float("-inf")), diagonal=1),
               "key_padding_mask": torch.tensor([[False, False, True]])}, 4.0 / 2)]  # fmt: skip
    for given, exact in cases:
        maxima: dict[str, float] = {}
        handles = hook_attention_logits(model, maxima)
        module(query=x, key=x, value=x, **given)
        for handle in handles:
            handle.remove()
        assert maxima == {"encoder.0.self_attn": pytest.approx(exact)}, given


def test_layer_output_sums_give_the_rms_of_what_the_layer_hands_on():
    class Constant(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
            return torch.full((2, 3, 4), 3.0), None  # a decoder layer returns (x, attn, ...)

    model = torch.nn.Module()
    model.decoder = torch.nn.Module()
    model.decoder.layers = torch.nn.ModuleList([Constant(), Constant()])
    sums: dict[str, list[float]] = {}
    handles = hook_layer_outputs(model, sums)
    model.decoder.layers[1](torch.zeros(1))
    model.decoder.layers[1](torch.zeros(1))
    for handle in handles:
        handle.remove()
    assert sums == {"decoder.1": [pytest.approx(2 * 24 * 9.0), 48]}  # rms = sqrt(432 / 48) = 3
