"""The normalisation variants (issue 8): RMSNorm, DeepNorm, DyT and QK-Norm as the plugin's fairseq model.

Every model is built as `prelnx train` builds it (the config's fairseq argv, the plugin, `task.build_model`), and
checked against the formulas written out here: the modules it contains, DeepNorm's alpha and init gains, QK-Norm's
attention by hand on a tiny input (on the fused-path conditions and in incremental decoding), a tiny real training
per variant, and rows of the gradient study.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from prelnx.config.load import load_config
from prelnx.launch.inprocess import load_plugin
from prelnx.records.metrics import read_metrics
from prelnx.launch.local import train
from prelnx.layouts import ARCH_PRESETS
from tests.plugin import build as builder

N_ENCODER, M_DECODER = 3, 2  # different depths, so that a formula using the wrong one fails


def build(tiny_config_file, **model):
    config, _ = load_config(tiny_config_file(model=model))
    return builder.translation(config)[2]


def module_types(model) -> set[str]:
    return {type(module).__name__ for module in model.modules()}


def layers(model):
    return [*model.encoder.layers, *model.decoder.layers]


# ---------------------------------------------------------------------------------------------- registration


def test_every_preset_has_a_variant_architecture_and_the_plugin_registers_once():
    from fairseq.models import ARCH_MODEL_REGISTRY, import_models

    from prelnx.plugin_path import PLUGIN_DIR

    load_plugin()
    load_plugin()  # a second --user-dir import is a no-op
    # fairseq's own auto-import of <plugin>/models/*.py uses the same module names: nothing registers twice.
    import_models(str(PLUGIN_DIR / "models"), "prelnx_fairseq_plugin.models")
    for preset in ARCH_PRESETS:
        assert ARCH_MODEL_REGISTRY[f"prelnx_{preset}"].__name__ == "NormalizedTransformerModel"


def test_the_papers_layouts_stay_fairseqs_own_model(tiny_config_file):
    for layout in ("post", "pre"):
        assert type(build(tiny_config_file, layout=layout)).__name__ == "TransformerModel"


def test_module_names_and_initial_weights_stay_fairseqs(tiny_config_file):
    """A variant without DeepNorm starts from the plain model's weights (same seed) and keeps fairseq's parameter
    names (fc1/fc2 for the gradient study); only the norms differ (RMSNorm has no bias, QK-Norm adds head norms)."""
    plain = dict(build(tiny_config_file, layout="pre").named_parameters())
    for variant in ({"norm": "rmsnorm"}, {"qk_norm": True}):
        changed = dict(build(tiny_config_file, layout="pre", **variant).named_parameters())
        assert all(name.endswith("norm.bias") for name in set(plain) - set(changed))
        assert all(".head_norm." in name for name in set(changed) - set(plain))
        for name in set(plain) & set(changed):
            assert torch.equal(plain[name], changed[name]), name


def test_combinations_that_are_no_model_are_refused():
    from argparse import Namespace

    from prelnx_fairseq_plugin.models.normalized_transformer import check_variant

    with pytest.raises(ValueError, match="Post-LN"):
        check_variant(Namespace(norm_type="layernorm", deepnorm=True, encoder_normalize_before=True))
    with pytest.raises(ValueError, match="dyt"):
        check_variant(Namespace(norm_type="dyt", deepnorm=True))
    check_variant(Namespace(norm_type="rmsnorm", deepnorm=True, qk_norm=True))


# ---------------------------------------------------------------------------------------------- norm modules


def test_rmsnorm_and_dyt_compute_their_formulas():
    from prelnx_fairseq_plugin.models.norms import DynamicTanh, RMSNorm

    torch.manual_seed(0)
    x = torch.randn(3, 2, 8)
    rms = RMSNorm(8)
    torch.nn.init.normal_(rms.weight)
    expected = rms.weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5)
    assert torch.allclose(rms(x), expected, atol=1e-6)

    dyt = DynamicTanh(8, init_alpha=0.5)
    assert dyt.alpha.shape == (1,) and dyt.alpha.requires_grad and float(dyt.alpha) == 0.5
    torch.nn.init.normal_(dyt.weight), torch.nn.init.normal_(dyt.bias)
    assert torch.allclose(dyt(x), dyt.weight * torch.tanh(0.5 * x) + dyt.bias, atol=1e-6)
    dyt(x).sum().backward()
    assert dyt.alpha.grad is not None and float(dyt.alpha.grad.abs()) > 0  # alpha is learned


@pytest.mark.parametrize("layout", ["post", "pre"])
@pytest.mark.parametrize("norm", ["rmsnorm", "dyt"])
def test_the_norm_replaces_every_layernorm(tiny_config_file, layout, norm):
    model = build(tiny_config_file, layout=layout, norm=norm, encoder_layers=N_ENCODER, decoder_layers=M_DECODER)
    kind = {"rmsnorm": "RMSNorm", "dyt": "DynamicTanh"}[norm]
    assert not any(isinstance(module, torch.nn.LayerNorm) for module in model.modules())
    for layer in model.encoder.layers:
        assert type(layer.self_attn_layer_norm).__name__ == kind and type(layer.final_layer_norm).__name__ == kind
    for layer in model.decoder.layers:
        assert {type(layer.self_attn_layer_norm).__name__, type(layer.encoder_attn_layer_norm).__name__,
                type(layer.final_layer_norm).__name__} == {kind}  # fmt: skip
    # 2 norms per encoder layer, 3 per decoder layer, and Pre-LN's final norm after each stack.
    expected = 2 * N_ENCODER + 3 * M_DECODER + (2 if layout == "pre" else 0)
    assert sum(type(module).__name__ == kind for module in model.modules()) == expected
    if norm == "dyt":  # every DyT of the trained model starts at the DyT paper's alpha0 = 0.5 (its code's default)
        assert {float(m.alpha) for m in model.modules() if type(m).__name__ == kind} == {0.5}
    assert (model.encoder.layer_norm is not None) is (layout == "pre")
    for layer in layers(model):
        assert layer.normalize_before is (layout == "pre")


# ---------------------------------------------------------------------------------------------------- DeepNorm


def test_deepnorm_alpha_and_init_gains_follow_the_deepnet_formulas(tiny_config_file):
    model = build(tiny_config_file, layout="deepnorm", encoder_layers=N_ENCODER, decoder_layers=M_DECODER)
    n, m = N_ENCODER, M_DECODER
    sides = {  # DeepNet (Wang et al. 2022), encoder-decoder: (alpha, beta)
        "encoder": (0.81 * (n**4 * m) ** (1 / 16), 0.87 * (n**4 * m) ** (-1 / 16)),
        "decoder": ((3 * m) ** (1 / 4), (12 * m) ** (-1 / 4)),
    }
    assert type(model.encoder.layers[0].self_attn_layer_norm).__name__ == "LayerNorm"
    for side, (alpha, beta) in sides.items():
        stack = getattr(model, side).layers
        assert all(layer.normalize_before is False for layer in stack)  # Post-LN placement
        assert all(layer.residual_alpha == pytest.approx(alpha, rel=1e-12) for layer in stack)
        attentions = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
        gains = {"fc1": beta, "fc2": beta}
        for attention in attentions:
            gains.update({f"{attention}.{proj}": gain for proj, gain in
                          (("q_proj", 1.0), ("k_proj", 1.0), ("v_proj", beta), ("out_proj", beta))})  # fmt: skip
        for name, gain in gains.items():
            weights = [layer.get_submodule(name).weight.detach() for layer in stack]
            fan_out, fan_in = weights[0].shape
            expected_std = gain * math.sqrt(2.0 / (fan_in + fan_out))  # xavier_normal_(gain)
            measured_std = torch.cat([w.flatten() for w in weights]).std().item()
            assert measured_std == pytest.approx(expected_std, rel=0.08), f"{side} {name}"
            assert abs(torch.cat([w.flatten() for w in weights]).mean().item()) < 0.2 * expected_std


def test_deepnorm_layer_forward_is_layernorm_of_alpha_x_plus_f_x(tiny_config_file):
    model = build(tiny_config_file, layout="deepnorm", encoder_layers=N_ENCODER, decoder_layers=M_DECODER).eval()
    layer = model.encoder.layers[0]
    alpha = layer.residual_alpha
    torch.manual_seed(0)
    x = torch.randn(5, 2, 32)
    with torch.no_grad():
        attended, _ = layer.self_attn(query=x, key=x, value=x, key_padding_mask=None, need_weights=False)
        h = layer.self_attn_layer_norm(alpha * x + attended)
        expected = layer.final_layer_norm(alpha * h + layer.fc2(F.relu(layer.fc1(h))))
        assert torch.allclose(layer(x, encoder_padding_mask=None), expected, atol=1e-5)


# ----------------------------------------------------------------------------------------------------- QK-Norm


def layer_norm_by_hand(x: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def attention_by_hand(attention, query, key, *, causal: bool, qk_norm: bool = True) -> torch.Tensor:
    """softmax(N(q_h) N(k_h)^T / sqrt(d_h)) v_h per head, then out_proj; query (T, B, E), key (S, B, E)."""
    heads, head_dim = attention.num_heads, attention.head_dim

    def split(x, projection):  # (len, B, E) -> (B, heads, len, head_dim)
        y = F.linear(x, projection.weight, projection.bias)
        return y.view(x.shape[0], x.shape[1], heads, head_dim).permute(1, 2, 0, 3)

    q, k, v = split(query, attention.q_proj), split(key, attention.k_proj), split(key, attention.v_proj)
    if qk_norm:
        q, k = layer_norm_by_hand(q, attention.q_proj.head_norm), layer_norm_by_hand(k, attention.k_proj.head_norm)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    if causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
    mixed = (scores.softmax(-1) @ v).permute(2, 0, 1, 3).reshape(query.shape)
    return F.linear(mixed, attention.out_proj.weight, attention.out_proj.bias)


@pytest.fixture
def qk_model(tiny_config_file):
    model = build(tiny_config_file, qk_norm=True, dropout=0.0)
    torch.manual_seed(1)
    for name, parameter in model.named_parameters():
        if "head_norm" in name:  # gamma, beta away from 1, 0: the hand computation must use them
            torch.nn.init.normal_(parameter, mean=1.0 if name.endswith("weight") else 0.0, std=0.5)
    return model


def test_qk_norm_is_in_every_attention(qk_model):
    for layer in layers(qk_model):
        attentions = [layer.self_attn] + ([layer.encoder_attn] if hasattr(layer, "encoder_attn") else [])
        for attention in attentions:
            assert type(attention).__name__ == "QKNormMultiheadAttention"
            for projection in (attention.q_proj, attention.k_proj):
                assert type(projection.head_norm).__name__ == "LayerNorm"
                assert projection.head_norm.normalized_shape == (attention.head_dim,)
            assert type(attention.v_proj) is torch.nn.Linear


def test_qk_norm_self_attention_matches_the_hand_computation_in_training(qk_model):
    """Training mode, no incremental state: where fairseq would take the fused path that skips q/k norms."""
    attention = qk_model.encoder.layers[0].self_attn
    qk_model.train()
    torch.manual_seed(2)
    x = torch.randn(4, 3, 32)
    out, _ = attention(query=x, key=x, value=x, key_padding_mask=None, need_weights=False)
    expected = attention_by_hand(attention, x, x, causal=False)
    assert torch.allclose(out, expected, atol=1e-5)
    without_norm = attention_by_hand(attention, x, x, causal=False, qk_norm=False)
    assert not torch.allclose(out, without_norm, atol=1e-3)  # the check can tell the norm is there


def test_qk_norm_holds_in_incremental_decoding(qk_model):
    """Beam search's path: decoder self-attention one step at a time, cross-attention on cached (static) keys."""
    layer = qk_model.decoder.layers[0]
    qk_model.eval()
    torch.manual_seed(3)
    steps, source = torch.randn(4, 2, 32), torch.randn(6, 2, 32)
    state: dict = {}
    with torch.no_grad():
        self_out = torch.cat([
            layer.self_attn(query=steps[t:t + 1], key=steps[t:t + 1], value=steps[t:t + 1], incremental_state=state,
                            need_weights=False)[0]
            for t in range(len(steps))
        ])  # fmt: skip
        cross_out = torch.cat([
            layer.encoder_attn(query=steps[t:t + 1], key=source, value=source, incremental_state=state,
                               static_kv=True, need_weights=False)[0]
            for t in range(len(steps))
        ])  # fmt: skip
        assert torch.allclose(self_out, attention_by_hand(layer.self_attn, steps, steps, causal=True), atol=1e-5)
        assert torch.allclose(cross_out, attention_by_hand(layer.encoder_attn, steps, source, causal=False), atol=1e-5)


# ------------------------------------------------------------------------------------- training and gradients


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [
        # Three trainings for four variants (each costs a fairseq start-up): QK-Norm rides on Pre-LN + RMSNorm, the
        # recipe of recent LLMs; validation BLEU's beam search runs its attention incrementally.
        {"layout": "pre", "norm": "rmsnorm", "qk_norm": True},
        {"layout": "deepnorm"},
        {"layout": "pre", "norm": "dyt"},
    ],
    ids=["pre-rmsnorm-qknorm", "deepnorm", "pre-dyt"],
)
def test_a_tiny_training_of_each_variant_finishes_with_a_finite_loss(tiny_config_file, tmp_path, model):
    config, _ = load_config(tiny_config_file(model=model, train={"max_update": 4, "max_epoch": 1}))
    run_dir = tmp_path / "run"
    result = train(config, run_dir=run_dir)

    assert result.status == "finished", (run_dir / "train.log").read_text()[-3000:]
    rows = read_metrics(run_dir)
    assert rows and all(math.isfinite(row["valid_loss"]) and math.isfinite(row["train_loss"]) for row in rows)
    assert json.loads((run_dir / "status.json").read_text())["status"] == "finished"
    assert "--arch prelnx_transformer_iwslt_de_en" in (run_dir / "command.txt").read_text()

    # The checkpoint rebuilds the same variant (what `prelnx evaluate` and `grads --checkpoint` load).
    from fairseq import checkpoint_utils

    load_plugin()
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(run_dir / "checkpoints" / "checkpoint_last.pt")])
    assert module_types(models[0]) == module_types(build(tiny_config_file, **model))


def test_the_gradient_study_measures_the_variants(tiny_config_file, tmp_path):
    from prelnx.analysis.grads.run import run_study
    from prelnx.analysis.grads.study import GradStudy
    config, _ = load_config(tiny_config_file(model={"norm": "dyt", "qk_norm": True}))
    study = GradStudy(config, layouts=("post", "pre"), depths=(2,), seeds=(1,), batches=1, workers=1, threads=1)
    outcome = run_study(study, tmp_path, plots=False)
    for layout in ("post", "pre"):
        rows = [row for row in outcome.rows if row["layout"] == layout]
        assert len(rows) == 2 * (2 + 2)  # W1, W2 of 2 encoder + 2 decoder layers
        assert all(math.isfinite(row["grad_norm"]) and row["grad_norm"] > 0 for row in rows)


def test_the_gradient_study_measures_deepnorm(tiny_config_file, tmp_path):
    from prelnx.analysis.grads.run import run_study
    from prelnx.analysis.grads.study import LAYOUTS, GradStudy

    assert "deepnorm" in LAYOUTS  # the study takes every layout of the table
    config, _ = load_config(tiny_config_file())
    study = GradStudy(config, layouts=("deepnorm",), depths=(2,), seeds=(1,), batches=1, workers=1, threads=1)
    outcome = run_study(study, tmp_path, plots=False)
    assert len(outcome.rows) == 2 * (2 + 2)
    assert all(math.isfinite(row["grad_norm"]) and row["grad_norm"] > 0 for row in outcome.rows)


def test_each_preset_a_config_accepts_is_fairseqs_own_preset_under_the_plugin():
    """prelnx.layouts.ARCH_PRESETS (read by the config without importing fairseq, 4 s) are fairseq's presets: each
    prelnx_<name> sets every dimension as fairseq's <name> does, plus the variant's defaults (all off)."""
    from argparse import Namespace

    from fairseq.models import ARCH_CONFIG_REGISTRY

    load_plugin()
    for name in ARCH_PRESETS:
        fairseq_args, prelnx_args = Namespace(), Namespace()
        ARCH_CONFIG_REGISTRY[name](fairseq_args)
        ARCH_CONFIG_REGISTRY[f"prelnx_{name}"](prelnx_args)
        variant = {key: value for key, value in vars(prelnx_args).items() if key not in vars(fairseq_args)}
        assert {key: vars(prelnx_args)[key] for key in vars(fairseq_args)} == vars(fairseq_args), name
        assert variant == {"norm_type": "layernorm", "deepnorm": False, "qk_norm": False, "dyt_init_alpha": 0.5,
                           "layout_scheme": "none", "layout_file": "", "layout_options": "{}"}, name
