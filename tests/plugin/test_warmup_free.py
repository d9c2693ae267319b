"""The warm-up-free layouts (issue 24): Admin, T-Fixup, ReZero (both forms) and B2T as the plugin's fairseq model.

Each model is built as `prelnx train` builds it (the config's fairseq argv, the plugin, `task.build_model`) and checked
at initialisation against the property that defines it, computed here by hand: Admin's w from admin-torch's closed
form (its profile, FFN and forward at IWSLT14 size: test_warmup_free_recipes.py), T-Fixup's weight scales and absent
norms, ReZero's identity layers (its norms' LayerNorm of the input when Post-LN's norms are kept), B2T's extra path
and rescaled init; ReZero's FFN as Transformer-Clinic draws it (Xavier-uniform, zero bias), or torch's with the
majumderb/rezero option. Then each
method trains an epoch, is interrupted, resumed under 2 torchrun workers, interrupted again and evaluated (Admin with
its w travelling in the checkpoint).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from prelnx.config.load import load_config
from prelnx.records.metrics import read_metrics
from prelnx.launch.local import train
from prelnx.records.checkpoints import checkpoint_info
from tests.conftest import TINY
from tests.helpers import FAR_EPOCHS, epochs_recorded, stop_after_an_epoch
from tests.plugin import build as builder

N_ENCODER, M_DECODER = 4, 2  # different depths, and 2N != 3M: a formula counting the wrong stack fails


def build(tiny_config_file, **model):
    config, _ = load_config(tiny_config_file(model={"encoder_layers": N_ENCODER, "decoder_layers": M_DECODER, **model}))
    return builder.translation(config)[2]


def stacks(model):
    return {"encoder": list(model.encoder.layers), "decoder": list(model.decoder.layers)}


def has_layer_norm(model) -> bool:
    return any(isinstance(module, torch.nn.LayerNorm) for module in model.modules())


def every_parameter_gets_a_gradient(cfg, task, model) -> bool:
    """What DDP's unused-parameter check needs: a real batch's loss reaches every parameter."""
    task.load_dataset("train")
    batches = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=256).next_epoch_itr(shuffle=False)
    model.train()
    loss, _, _ = task.build_criterion(cfg.criterion)(model, next(iter(batches)))
    loss.backward()
    return all(parameter.grad is not None for parameter in model.parameters())


def built(tiny_config_file, **model):
    """(fairseq cfg, task, model)."""
    config, _ = load_config(tiny_config_file(model={"encoder_layers": N_ENCODER, "decoder_layers": M_DECODER, **model}))
    return builder.translation(config)


# -------------------------------------------------------------------------------------------------------- Admin


def test_admin_closed_form_is_admin_torchs_formula(tiny_config_file):
    model = build(tiny_config_file, layout="admin", admin_init="closed_form")
    for side, n in (("encoder", 2 * N_ENCODER), ("decoder", 3 * M_DECODER)):
        expected = math.sqrt((n + 1) / math.log(n + 1) - 1)  # microsoft/admin-torch, calculate_init 'O(logn)'
        for layer in stacks(model)[side]:
            assert layer.admin_w.requires_grad
            assert torch.allclose(layer.admin_w.detach(), torch.full_like(layer.admin_w, expected)), side


# ------------------------------------------------------------------------------------------------------ T-Fixup


def test_tfixup_has_no_layernorm_and_its_scaled_initialisation(tiny_config_file):
    cfg, task, model = built(tiny_config_file, layout="tfixup")
    d = 32
    assert not has_layer_norm(model) and not any("norm" in name for name, _ in model.named_parameters())
    xavier = lambda shape: math.sqrt(2.0 / sum(shape))  # noqa: E731  xavier_uniform_ std (gain 1)
    for side, layers in stacks(model).items():
        scale = 0.67 * N_ENCODER ** -0.25 if side == "encoder" else (9 * M_DECODER) ** -0.25
        names = ["fc1", "fc2", "self_attn.out_proj", "self_attn.v_proj"]
        names += ["encoder_attn.out_proj", "encoder_attn.v_proj"] if side == "decoder" else []
        for name in names + ["self_attn.q_proj"]:
            weights = torch.cat([layer.get_submodule(name).weight.detach().flatten() for layer in layers])
            shape = layers[0].get_submodule(name).weight.shape
            expected = xavier(shape) * scale if name in names else xavier(shape) / math.sqrt(2)  # q_proj: fairseq's
            assert weights.std().item() == pytest.approx(expected, rel=0.08), f"{side} {name}"
        assert all(float(layer.fc1.bias.detach().abs().max()) == 0.0 for layer in layers)
    for embedding, n in ((model.encoder.embed_tokens, N_ENCODER), (model.decoder.embed_tokens, M_DECODER)):
        rows = torch.cat([embedding.weight[: embedding.padding_idx], embedding.weight[embedding.padding_idx + 1:]])
        assert rows.std().item() == pytest.approx(d ** -0.5 * (9 * n) ** -0.25, rel=0.08)
    assert every_parameter_gets_a_gradient(cfg, task, model)  # no LayerNorm left unused (DDP's check)


# ------------------------------------------------------------------------------------------------------- ReZero


def assert_clinics_ffn(model) -> None:
    """fc1 and fc2 as Transformer-Clinic's `Linear` helper draws them (fairseq/fairseq/modules/transformer_layer.py
    at 70f72b7, line 688, for every --init-type): xavier_uniform_, std sqrt(6 / (fan_in + fan_out)) / sqrt(3), bias 0;
    torch's (and fairseq's) nn.Linear default has std 1 / sqrt(3 fan_in) and a non-zero bias."""
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        for linear in (layer.fc1, layer.fc2):
            bound = math.sqrt(6.0 / sum(linear.weight.shape))
            assert linear.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05)
            assert torch.count_nonzero(linear.bias) == 0


def test_rezero_layers_are_the_identity_at_initialisation(tiny_config_file):
    cfg, task, model = built(tiny_config_file, layout="rezero")
    assert not has_layer_norm(model)
    assert_clinics_ffn(model)  # the default: Transformer-Clinic's build, which rezero_iwslt14.yaml transcribes
    alphas = [name for name, _ in model.named_parameters() if name.endswith("rezero_alpha")]
    assert len(alphas) == N_ENCODER + M_DECODER  # one scalar per layer, shared by its sublayers
    model.train()  # dropout on: a * dropout(f(x)) is still 0
    torch.manual_seed(0)
    x, source = torch.randn(5, 2, 32), torch.randn(6, 2, 32)
    for layer in model.encoder.layers:
        assert layer.rezero_alpha.item() == 0.0 and layer.rezero_alpha.shape == (1,)
        assert torch.equal(layer(x, encoder_padding_mask=None), x)
    for layer in model.decoder.layers:
        assert torch.equal(layer(x, encoder_out=source, encoder_padding_mask=None)[0], x)
    assert every_parameter_gets_a_gradient(cfg, task, model)
    # The decoder's a are learned from the first update; the encoder reaches the loss only through the decoder's
    # cross-attention, which its a = 0 cuts off, so the encoder's a start moving one update later.
    assert all(float(layer.rezero_alpha.grad.abs()) > 0 for layer in model.decoder.layers)
    assert all(float(layer.rezero_alpha.grad.abs()) == 0 for layer in model.encoder.layers)


def test_rezero_postln_layers_are_layernorm_of_x_at_initialisation(tiny_config_file):
    """LN(x + a * f(x)) with a = 0: every sublayer is its LayerNorm of its input, so an encoder layer is LN2(LN1(x))
    and a decoder layer LN3(LN2(LN1(x))), dropout on or off; fairseq's LayerNorms and init otherwise unchanged."""
    cfg, task, model = built(tiny_config_file, layout="rezero_postln")
    post = dict(build(tiny_config_file, layout="post").named_parameters())
    params = dict(model.named_parameters())
    alphas = [name for name in params if name.endswith("rezero_alpha")]
    assert len(alphas) == N_ENCODER + M_DECODER  # one scalar per layer, shared by its sublayers
    assert set(params) - set(alphas) == set(post)  # Post-LN's modules, its LayerNorms included
    assert_clinics_ffn(model)  # Transformer-Clinic's FFN, as for rezero
    first = "encoder.layers.0.self_attn."  # drawn before any FFN is re-drawn: Post-LN's draws (same seed)
    assert all(torch.equal(params[name], post[name]) for name in post if name.startswith(first))
    model.train()
    torch.manual_seed(0)
    x, source = torch.randn(5, 2, 32) * 3 + 1, torch.randn(6, 2, 32)  # not normalised: LN visibly acts on it
    for layer in model.encoder.layers:
        assert layer.rezero_alpha.item() == 0.0 and layer.rezero_alpha.shape == (1,)
        expected = layer.final_layer_norm(layer.self_attn_layer_norm(x))
        assert torch.equal(layer(x, encoder_padding_mask=None), expected)
        assert torch.allclose(expected, F.layer_norm(x, (32,)), atol=1e-4)  # LN(LN(x)) = LN(x) at init (unit gains)
    for layer in model.decoder.layers:
        expected = layer.final_layer_norm(layer.encoder_attn_layer_norm(layer.self_attn_layer_norm(x)))
        assert torch.equal(layer(x, encoder_out=source, encoder_padding_mask=None)[0], expected)
    assert every_parameter_gets_a_gradient(cfg, task, model)
    # As in rezero: the decoder's a are learned from the first update, the encoder's one update later (the decoder's
    # cross-attention, scaled by its a = 0, is the encoder's only way to the loss).
    assert all(float(layer.rezero_alpha.grad.abs()) > 0 for layer in model.decoder.layers)
    assert all(float(layer.rezero_alpha.grad.abs()) == 0 for layer in model.encoder.layers)
    assert all(float(layer.fc2.weight.grad.abs().max()) == 0 for layer in model.decoder.layers)  # a = 0 cuts f off


def test_rezero_torch_ffn_init_keeps_majumderb_rezeros_nn_linear(tiny_config_file):
    """`rezero_ffn_init: torch` (majumderb/rezero's RZTXEncoderLayer builds its FFN with nn.Linear): the FFN stays
    as fairseq drew it; the default re-draws it as Clinic's."""
    from argparse import Namespace

    from prelnx_fairseq_plugin.models.rezero import ReZero

    cfg, _, model = built(tiny_config_file, layout="post")
    layer = model.encoder.layers[0]
    drawn = [p.detach().clone() for p in (layer.fc1.weight, layer.fc1.bias)]
    ReZero(Namespace(layout_options='{"rezero_ffn_init": "torch"}')).build_layer(layer, cfg.model, "encoder")
    assert torch.equal(layer.fc1.weight, drawn[0]) and torch.equal(layer.fc1.bias, drawn[1])
    assert torch.count_nonzero(layer.fc1.bias) > 0
    ReZero(Namespace()).build_layer(model.encoder.layers[1], cfg.model, "encoder")
    assert torch.count_nonzero(model.encoder.layers[1].fc1.bias) == 0
    with pytest.raises(ValueError, match="rezero_ffn_init: expected one of 'xavier', 'torch', got 'kaiming'"):
        ReZero(Namespace(layout_options='{"rezero_ffn_init": "kaiming"}'))


def test_model_rezero_ffn_init_torch_reaches_the_model_through_the_plan(tiny_config_file):
    """model.rezero_ffn_init: torch (majumderb/rezero's nn.Linear) is planned as --layout-options and built: fc1 keeps
    a non-zero bias; the default (xavier, Transformer-Clinic's) zeroes it."""
    _, _, torch_init = built(tiny_config_file, layout="rezero", rezero_ffn_init="torch")
    assert all(torch.count_nonzero(layer.fc1.bias) > 0 for layer in torch_init.encoder.layers)
    _, _, clinic = built(tiny_config_file, layout="rezero_postln")
    assert_clinics_ffn(clinic)


# ---------------------------------------------------------------------------------------------------------- B2T


def test_b2t_adds_the_layer_input_before_the_last_layernorm(tiny_config_file):
    model = build(tiny_config_file, layout="b2t").eval()
    torch.manual_seed(0)
    x, source = torch.randn(5, 2, 32), torch.randn(6, 2, 32)
    with torch.no_grad():
        layer = model.encoder.layers[0]
        h = layer.self_attn_layer_norm(x + layer.self_attn(query=x, key=x, value=x, need_weights=False)[0])
        ffn = layer.fc2(F.relu(layer.fc1(h)))
        out = layer(x, encoder_padding_mask=None)
        assert torch.allclose(out, layer.final_layer_norm(h + ffn + x), atol=1e-5)
        assert not torch.allclose(out, layer.final_layer_norm(h + ffn), atol=1e-3)  # the check sees the path

        layer = model.decoder.layers[0]
        h1 = layer.self_attn_layer_norm(x + layer.self_attn(query=x, key=x, value=x, need_weights=False)[0])
        h2 = layer.encoder_attn_layer_norm(h1 + layer.encoder_attn(query=h1, key=source, value=source,
                                                                   static_kv=True, need_weights=False)[0])  # fmt: skip
        expected = layer.final_layer_norm(h2 + layer.fc2(F.relu(layer.fc1(h2))) + x)
        assert torch.allclose(layer(x, encoder_out=source, encoder_padding_mask=None)[0], expected, atol=1e-5)


def test_b2t_rescales_every_layer_weight_by_one_over_sqrt_n(tiny_config_file):
    """The authors' rescaling_init: the same draws as Post-LN (same seed), every non-norm weight x N^(-1/2)."""
    post = dict(build(tiny_config_file, layout="post").named_parameters())
    b2t = dict(build(tiny_config_file, layout="b2t").named_parameters())
    assert set(post) == set(b2t)
    for name, parameter in b2t.items():
        n = N_ENCODER if name.startswith("encoder.layers.") else M_DECODER
        scaled = ".layers." in name and name.endswith("weight") and "layer_norm" not in name
        expected = post[name] * n ** -0.5 if scaled else post[name]
        assert torch.allclose(parameter, expected, atol=1e-7), name


# ---------------------------------------------------------------------------------------------------- training


# 2 workers x max_tokens 512 a step; one process reaches the same batch per update with update_freq 2, which trains
# exactly as the 2 workers do (tests/run/test_data_parallel.py), so a run may change its number of workers on resume.
TWO_WORKERS = {"processes": 2, "effective_batch_tokens": 2 * TINY["train"]["max_tokens"]}


def _interrupt_twice(path, run_dir) -> list[str]:
    """The config at `path` (train.processes 2) trained by one process and stopped after its first epoch (only to
    have a real checkpoint to resume: a torchrun group costs two more processes), resumed from that checkpoint under
    2 torchrun workers (DDP, gloo) and stopped again after the next epoch: the budget (FAR_EPOCHS) is far beyond both
    stops, so neither attempt can end before its stop lands, however fast the machine. Returns the second attempt's
    lines; asserts that it resumed under torchrun and that every epoch is recorded once, finite."""
    one, _ = load_config(path, ["train.processes=1"])
    assert train(one, run_dir=run_dir, on_event=stop_after_an_epoch()).status == "interrupted"
    assert "torchrun" not in (run_dir / "command.txt").read_text()
    reached = checkpoint_info(run_dir / "checkpoints" / "checkpoint_last.pt").epoch
    lines: list[str] = []
    two, _ = load_config(path)
    result = train(two, run_dir=run_dir, on_event=stop_after_an_epoch(lines, past=reached))
    assert result.status == "interrupted", (run_dir / "train.log").read_text()[-3000:]
    assert lines[0].startswith("resuming"), lines
    command = (run_dir / "command.txt").read_text()
    assert "torchrun --standalone --nproc-per-node 2" in command and "--update-freq 2" not in command, command
    epochs = epochs_recorded(run_dir)
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) > reached
    rows = read_metrics(run_dir)
    assert all(math.isfinite(row["valid_loss"]) and math.isfinite(row["train_loss"]) for row in rows)
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["tfixup", "rezero", "rezero_postln", "b2t"])
def test_each_method_trains_under_two_workers_resumes_and_evaluates(tiny_config_file, tmp_path, layout):
    """A real training per method: an epoch, interrupted, resumed from its checkpoint under 2 torchrun workers and
    interrupted again, then evaluated (the model rebuilt from its last checkpoint). That every parameter gets a
    gradient is checked in process (`every_parameter_gets_a_gradient`): fairseq's legacy_ddp, which prelnx runs on
    CPU, fills a missing gradient with zeros rather than failing, so two workers alone would not show one."""
    from prelnx.evaluate.evaluate import evaluate

    path = tiny_config_file(model={"layout": layout}, train={"max_epoch": FAR_EPOCHS, **TWO_WORKERS},
                            eval={"bleu": {"enabled": False}})  # fmt: skip
    run_dir = tmp_path / "run"
    _interrupt_twice(path, run_dir)
    command = (run_dir / "command.txt").read_text()
    assert "torchrun" in command and f"--layout-scheme {layout}" in command
    assert 0.0 <= evaluate(run_dir, beam=1, checkpoint="last")["bleu_tokenized"] <= 100.0


@pytest.mark.slow
def test_admin_under_two_workers_resumes_and_evaluates_with_its_w_from_the_checkpoint(tiny_config_file, tmp_path):
    from fairseq import checkpoint_utils

    from prelnx.evaluate.evaluate import evaluate
    from prelnx.launch.inprocess import load_plugin

    path = tiny_config_file(model={"layout": "admin"}, train={"max_epoch": FAR_EPOCHS, **TWO_WORKERS},
                            eval={"bleu": {"enabled": False}})  # fmt: skip
    config, _ = load_config(path)
    run_dir = tmp_path / "run"

    _interrupt_twice(path, run_dir)
    command = (run_dir / "command.txt").read_text()
    assert "torchrun" in command and """--layout-scheme admin --layout-options '{"admin_init": "profile"}'""" in command
    assert "Admin profile" in (run_dir / "train.log").read_text()  # the profile is in the run dir's log

    result = evaluate(run_dir, beam=1, checkpoint="last")
    assert 0.0 <= result["bleu_tokenized"] <= 100.0

    # What evaluate and a resume load: the checkpoint's own (trained) w, not a fresh profile.
    load_plugin()
    saved = checkpoint_utils.load_checkpoint_to_cpu(str(run_dir / "checkpoints" / "checkpoint_last.pt"))["model"]
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(run_dir / "checkpoints" / "checkpoint_last.pt")])
    fresh = dict(builder.translation(config)[2].named_parameters())
    ws = {name: p for name, p in models[0].named_parameters() if name.endswith("admin_w")}
    assert len(ws) == 4
    for name, w in ws.items():
        assert torch.equal(w.detach(), saved[name])
    assert any(not torch.allclose(w.detach(), fresh[name].detach()) for name, w in ws.items())  # trained, not re-profiled


@pytest.mark.slow
def test_the_gradient_study_measures_every_method(tiny_config_file, tmp_path):
    """Figure 3 per method: every FFN gradient is finite and non-zero, except ReZero's (both forms), which a = 0 makes
    exactly 0 at initialisation; the summary's ratios are NaN for it rather than a division error."""
    from prelnx.analysis.grads.run import run_study
    from prelnx.analysis.grads.study import GradStudy

    config, _ = load_config(tiny_config_file())
    layouts = ("admin", "tfixup", "rezero", "rezero_postln", "b2t")
    study = GradStudy(config, layouts=layouts, depths=(2,), seeds=(1,), batches=1, workers=1, threads=1)
    outcome = run_study(study, tmp_path, plots=False)
    for layout in layouts:
        norms = [row["grad_norm"] for row in outcome.rows if row["layout"] == layout]
        assert len(norms) == 2 * (2 + 2)  # W1, W2 of 2 encoder + 2 decoder layers
        if layout.startswith("rezero"):
            assert all(norm == 0.0 for norm in norms)
        else:
            assert all(math.isfinite(n) and n > 0 for n in norms)
    assert outcome.summary["layouts"] == list(layouts)
    assert math.isnan(outcome.summary["last_layer_w2_falls_with_depth"]["rezero"])
    assert math.isnan(outcome.summary["last_layer_w2_falls_with_depth"]["rezero_postln"])
