"""The warm-up-free methods as their authors ran them (issue 30), checked on the model and the plan prelnx builds.

Admin with configs/warmup_free/admin_iwslt14.yaml's model (dropout 0.3 / 0.1 / 0.1, on the synthetic task's
vocabulary) at a tiny size (quick tier) and at IWSLT14 size (6-6 layers, d 512, FFN 1024; slow): its FFN drawn as
Transformer-Clinic's `Linear` draws it, its profiled w equal to the recurrence recomputed from a separate pass in
training mode (and not in eval mode); its forward, LN(x * w + f(x)), is recomputed from raw tensors in
test_recompute.py. T-Fixup's two readings plan Adam and RAdam, both clipping at 25, and its shared embedding is scaled
once. ReZero trains with weight decay, as Transformer-Clinic's recipe.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from prelnx.config.load import config_to_dict, load_config
from prelnx.launch.inprocess import build_model
from prelnx.launch.local import train
from prelnx.plan.launch import plan_run
from prelnx.records.metrics import read_metrics
from tests.plugin import build as builder

RECIPES = Path(__file__).resolve().parents[2] / "configs" / "warmup_free"


@pytest.fixture(params=["tiny", pytest.param("iwslt14", marks=pytest.mark.slow)])  # slow: a 6-6 model at d 512
def admin_model(request, tiny_config_file):
    """Admin with admin_iwslt14.yaml's model section (dropout 0.3 / 0.1 / 0.1) on tiny data: at its own dims
    (transformer_iwslt_de_en's, slow) or at the tiny config's (4-3 layers, d 32, FFN 64; the quick tier)."""
    recipe, _ = load_config(RECIPES / "admin_iwslt14.yaml")
    model = config_to_dict(recipe)["model"]  # its options as model.<key>, as a config names them
    if request.param == "tiny":
        model.update(arch="transformer", encoder_layers=4, decoder_layers=3, embed_dim=32, ffn_dim=64, attention_heads=2)
    config, _ = load_config(tiny_config_file(model=model))
    built = builder.translation(config)[2]
    assert built.encoder.layers[0].dropout_module.p == 0.3
    if request.param == "iwslt14":
        assert len(built.encoder.layers) == len(built.decoder.layers) == 6
        assert built.encoder.layers[0].fc1.weight.shape == (1024, 512)
    return built


def assert_xavier_uniform_zero_bias(layers, rel: float) -> None:
    """Transformer-Clinic's `Linear` (fairseq/fairseq/modules/transformer_layer.py at 70f72b7, line 688):
    xavier_uniform_ weight, U(-b, b) with b = sqrt(6 / (fan_in + fan_out)), std b / sqrt(3), and bias 0. fairseq
    0.12's default (Kaiming-uniform, a=sqrt(5)) has std 1/sqrt(3 fan_in): at IWSLT14 size 0.0255 for fc1 against
    Xavier's 0.0361; at the tiny size 0.102 against 0.144."""
    for layer in layers:
        for linear in (layer.fc1, layer.fc2):
            weight = linear.weight.detach()
            bound = math.sqrt(6.0 / sum(weight.shape))  # U(-bound, bound)
            assert weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=rel)
            assert weight.abs().max().item() <= bound and weight.abs().max().item() > 0.99 * bound
            assert torch.count_nonzero(linear.bias) == 0


def test_admin_ffn_is_xavier_uniform_with_zero_bias(admin_model):
    tiny = admin_model.encoder.layers[0].embed_dim == 32  # 2048 weights: the sample std within ~1 % (sd), 5 sd
    assert_xavier_uniform_zero_bias([*admin_model.encoder.layers, *admin_model.decoder.layers], 0.05 if tiny else 0.01)


def _recomputed_w(model, training: bool) -> dict[str, list[tuple[float, float]]]:
    """(profiled w_{i+1}, sqrt(Var(x_i * w_i) + Var(f_i))) per sublayer after the first, per stack, from a pass of
    the profiling batch with the model's own w in the given mode (the profile's dropout seed)."""
    from prelnx_fairseq_plugin.models.admin import PROFILE_SEED, profiling_batch

    stacks = {"encoder": list(model.encoder.layers), "decoder": list(model.decoder.layers)}
    inputs: dict[str, list[torch.Tensor]] = {side: [] for side in stacks}  # x_i: each sublayer's input
    outputs: dict[str, list[torch.Tensor]] = {side: [] for side in stacks}  # f_i: its output after dropout
    hooks = []
    for side, layers in stacks.items():
        keep = inputs[side].append
        for layer in layers:  # Post-LN: sublayer 1's input is the layer's, the next ones' the norms' outputs
            hooks.append(layer.register_forward_pre_hook(lambda module, args, keep=keep: keep(args[0])))
            norms = ["self_attn_layer_norm"] + (["encoder_attn_layer_norm"] if side == "decoder" else [])
            for norm in norms:
                hooks.append(getattr(layer, norm).register_forward_hook(lambda m, a, out, keep=keep: keep(out)))
            hooks.append(layer.dropout_module.register_forward_hook(
                lambda m, a, out, keep=outputs[side].append: keep(out)))  # fmt: skip
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(PROFILE_SEED)
            model.train(training)
            model(*profiling_batch(model))
    finally:
        for hook in hooks:
            hook.remove()
    pairs = {}
    for side, layers in stacks.items():
        ws = [w for layer in layers for w in layer.admin_w.detach()]
        xs, fs = inputs[side], outputs[side]
        assert len(xs) == len(fs) == len(ws) == (2 if side == "encoder" else 3) * len(layers)
        pairs[side] = [(float(ws[i + 1][0]), math.sqrt(float((xs[i] * ws[i]).double().var(correction=0)
                                                             + fs[i].double().var(correction=0))))
                       for i in range(len(ws) - 1)]  # fmt: skip
    return pairs


def test_admin_profile_is_the_recurrence_in_training_mode(admin_model):
    """w_1 = 1 and w_{i+1} = sqrt(Var(x_i * w_i) + Var(f_i)) with dropout on, as Transformer-Clinic profiles (its
    `not_initialized` needs self.training): recomputed from a second pass after the build, in training mode. The same
    recomputation in eval mode (no dropout) gives other values, so a profile taken in eval mode fails this test."""
    from prelnx_fairseq_plugin.models.admin import profile_admin

    for layer in [*admin_model.encoder.layers, *admin_model.decoder.layers]:
        assert all(torch.all(w == w[0]) for w in layer.admin_w.detach())  # one value per sublayer
    assert float(admin_model.encoder.layers[0].admin_w[0, 0]) == 1.0
    assert float(admin_model.decoder.layers[0].admin_w[0, 0]) == 1.0
    for side, pairs in _recomputed_w(admin_model, training=True).items():
        for i, (profiled, expected) in enumerate(pairs):
            assert profiled == pytest.approx(expected, rel=1e-6), f"{side} sublayer {i + 2}"
        assert pairs[-1][0] > 1.5  # w grows along the stack (IWSLT14 size: about 2.6 in the encoder, 3.0 in the decoder)
    at_build = [layer.admin_w.detach().clone() for layer in admin_model.encoder.layers]
    returned = profile_admin(admin_model)  # deterministic: every worker of a run, every rebuild, gets the same w
    for side in ("encoder", "decoder"):  # what it returns (the log's w per sublayer) is the w it set, in stack order
        stack = getattr(admin_model, side)
        set_w = [float(w[0]) for layer in stack.layers for w in layer.admin_w.detach()]  # float32: rel 1e-6
        assert returned[side] == pytest.approx(set_w, rel=1e-6), side
    assert all(torch.equal(w, layer.admin_w.detach()) for w, layer in zip(at_build, admin_model.encoder.layers))
    in_eval = _recomputed_w(admin_model, training=False)
    for side, pairs in in_eval.items():  # dropout 0.3 changes the branch variances: the test can tell the modes apart
        assert any(abs(profiled / expected - 1) > 0.02 for profiled, expected in pairs), side


# ------------------------------------------------------------------------------------------------------ T-Fixup


@pytest.mark.parametrize(("recipe", "optimizer"),
                         [("tfixup_iwslt14.yaml", "adam"), ("tfixup_iwslt14_radam.yaml", "radam")])
def test_tfixup_ships_its_adam_and_its_radam_reading(tmp_path, recipe, optimizer):
    """The two readings of the authors' optimizer plan the same recipe but for `--optimizer`, both clipping at 25:
    the authors' script passes no --clip-norm and their fairseq's options.py:388 (layer6ai-labs/T-Fixup b17e166)
    defaults it to 25."""
    config, _ = load_config(RECIPES / recipe)
    argv = plan_run(config, tmp_path / "run").launch.argv
    assert argv[argv.index("--optimizer") + 1] == optimizer
    assert float(argv[argv.index("--clip-norm") + 1]) == 25.0
    assert argv[argv.index("--layout-scheme") + 1] == "tfixup"
    assert "--warmup-updates" not in argv or argv[argv.index("--warmup-updates") + 1] == "0"
    adam, _ = load_config(RECIPES / "tfixup_iwslt14.yaml")
    assert dataclasses.replace(config.optimizer, name="adam") == adam.optimizer  # nothing else differs
    assert (config.schedule, config.model, config.train) == (adam.schedule, adam.model, adam.train)


def test_tfixup_scales_a_shared_embedding_once_by_the_encoders_factor(tiny_config_file):
    """share_all_embeddings: one matrix for both stacks, x (9N)^(-1/4) once (the authors' decoder skips its own
    scaling then), N the encoder's depth; the draws are Post-LN's (same seed), so the check is exact."""
    n_encoder, m_decoder = 4, 2

    def shared_model(layout):
        config, _ = load_config(tiny_config_file(model={"layout": layout, "encoder_layers": n_encoder,
                                                        "decoder_layers": m_decoder, "share_all_embeddings": True,
                                                        "share_decoder_input_output_embed": True}))  # fmt: skip
        from fairseq import tasks

        cfg, _ = builder.converted(builder.translation_argv(config))
        task = tasks.setup_task(cfg.task)
        task.tgt_dict = task.src_dict  # one dictionary for both sides, as a joined dictionary is
        return build_model(task, cfg)

    tfixup, post = shared_model("tfixup"), shared_model("post")
    assert tfixup.encoder.embed_tokens is tfixup.decoder.embed_tokens
    expected = post.encoder.embed_tokens.weight.detach() * (9 * n_encoder) ** -0.25
    assert torch.allclose(tfixup.encoder.embed_tokens.weight.detach(), expected, rtol=1e-6, atol=0)


# ------------------------------------------------------------------------------------------------------- ReZero


@pytest.mark.slow
def test_rezero_trains_with_weight_decay(tiny_config_file, tmp_path):
    """Transformer-Clinic's ReZero recipe decays every parameter at 1e-4: a real training with it finishes, finite,
    with --weight-decay in its command and every layer's a moved from 0."""
    from prelnx.records.checkpoints import load_checkpoint

    config, _ = load_config(tiny_config_file(model={"layout": "rezero"}, optimizer={"weight_decay": 1e-4},
                                             eval={"bleu": {"enabled": False}}))  # fmt: skip
    run_dir = tmp_path / "run"
    result = train(config, run_dir=run_dir)
    assert result.status == "finished", (run_dir / "train.log").read_text()[-3000:]
    command = (run_dir / "command.txt").read_text()
    assert "--layout-scheme rezero" in command and "--weight-decay 0.0001" in command
    rows = read_metrics(run_dir)
    assert rows and all(math.isfinite(row["valid_loss"]) for row in rows)
    state = load_checkpoint(run_dir / "checkpoints" / "checkpoint_last.pt")["model"]
    alphas = [value for name, value in state.items() if name.endswith("rezero_alpha")]
    assert len(alphas) == 4 and all(float(a.abs()) > 0 for a in alphas)


# ------------------------------------------------------------------------------------------------------ Admin's RAdam


@pytest.mark.parametrize("recipe", ["admin_iwslt14.yaml", "admin_nowarmup_iwslt14.yaml"])
def test_admin_plans_clinics_radam_first_steps(tmp_path, recipe):
    """Transformer-Clinic's radam_fairseq/radam.py:124 (70f72b7) has RAdam's momentum step for rho_t <= 5 commented
    out: the Admin recipes plan the plugin's decay_only steps (tests/plugin/test_radam_first_steps.py checks them
    update by update against that reference); every other RAdam keeps torch's."""
    config, _ = load_config(RECIPES / recipe)
    argv = plan_run(config, tmp_path / "run").launch.argv
    assert argv[argv.index("--optimizer") + 1] == "radam"
    assert argv[argv.index("--radam-first-steps") + 1] == "decay_only"
    tfixup, _ = load_config(RECIPES / "tfixup_iwslt14_radam.yaml")
    assert "--radam-first-steps" not in plan_run(tfixup, tmp_path / "t").launch.argv  # torch's momentum steps


def test_radam_first_steps_is_refused_for_another_optimizer(tmp_path):
    from prelnx.config.load import ConfigError

    with pytest.raises(ConfigError, match="optimizer.radam_first_steps"):
        load_config(RECIPES / "tfixup_iwslt14.yaml", overrides=["optimizer.radam_first_steps=decay_only"])
