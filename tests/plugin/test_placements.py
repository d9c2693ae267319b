"""The norm placements of issue 32 (Peri-LN, OLMo 2's reordered norm, Mix-LN, ResiDual, LayerNorm Scaling), each
checked at initialisation on its defining property, on models built as `prelnx train` builds them (the config's
fairseq argv, the plugin, `task.build_model`) and on the decoder-only `prelnx_transformer_lm` built from the same
plan functions (plan/common.py); the sublayers are recomputed by hand from raw tensors (tests/plugin/recompute.py),
so a norm in the wrong place, a missing one or a wrong scale fails. Every layout's stacks in eval and training mode,
decoders with cross-attention included: test_recompute.py. Their trainings, a resume and the gradient study's hidden-state
RMS: test_placements_training.py.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch
import torch.nn.functional as F

from prelnx.config.load import load_config
from prelnx.config.schema import Config, ModelConfig, check_values
from prelnx.layouts import LAYOUTS, option_keys
from prelnx.plan.common import normalize_before_argv, variant_argv
from prelnx.plan.language_model import LM_PLUGIN_ARCH
from tests.plugin import build as builder, recompute

PLACEMENTS = ("peri", "reorder", "mixln", "residual", "lnscale")
DIM = 32  # the tiny config's embed_dim


def build(tiny_config_file, **model):
    config, _ = load_config(tiny_config_file(model=model))
    return builder.translation(config)[2].eval()


def build_lm(tmp_path, *, seed=1, arch=LM_PLUGIN_ARCH, plain=False, **model):
    """A decoder-only model as fairseq-train builds it from the argv plan/common.py gives for these model keys."""
    from prelnx.plugin_path import PLUGIN_DIR

    (tmp_path / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(40)))
    declared = {key: model[key] for key in option_keys(model.get("layout")) if key in model}  # model.<option>
    fields = {key: value for key, value in model.items() if key not in declared}
    config = Config(model=dataclasses.replace(ModelConfig(), **fields, options=declared))
    layout = [] if plain else [*variant_argv(config), *normalize_before_argv(config, ("decoder",))]
    argv = [str(tmp_path), "--user-dir", str(PLUGIN_DIR), "--task", "language_modeling", "--arch", arch, *layout,
            "--decoder-layers", str(model.get("decoder_layers", 3)), "--decoder-embed-dim", str(DIM),
            "--decoder-input-dim", str(DIM), "--decoder-output-dim", str(DIM), "--decoder-ffn-embed-dim", "64",
            "--decoder-attention-heads", "2", "--tokens-per-sample", "16", "--share-decoder-input-output-embed"]  # fmt: skip
    return builder.built(argv, seed)[2].eval()


def run_layer(layer, x):
    """The layer's own forward, without masks (encoder layer, or a decoder layer without cross-attention)."""
    if hasattr(layer, "encoder_attn"):
        return layer(x, None, None, None)[0]
    return layer(x, encoder_padding_mask=None)


def by_hand(layer, x, place: str, scale: float = 1.0):
    """One self-attention + FFN layer recomputed from raw tensors (eval: no dropout) for a placement: the norms by
    F.layer_norm on their weight and bias (tests/plugin/recompute.py), never the layer's own norm modules, so a
    norm replaced by the identity has no weight to recompute with and fails."""
    subs = ((lambda h: recompute.attention(layer.self_attn, h, h), layer.self_attn_layer_norm),
            (lambda h: recompute.ffn(layer, h, training=False), layer.final_layer_norm))  # fmt: skip
    for index, (f, module) in enumerate(subs):
        norm = lambda h, module=module: recompute.norm(h, module) * scale  # noqa: E731  (LN Scaling's 1/sqrt(l))
        out_norm = lambda h, index=index: recompute.norm(h, layer.output_norms[index])  # noqa: E731
        if place == "post":
            x = norm(x + f(x))
        elif place == "pre":
            x = x + f(norm(x))
        elif place == "peri":
            x = x + out_norm(f(norm(x)))
        elif place == "reorder":
            x = x + out_norm(f(x))
    return x


def unit_rows(x) -> bool:
    """Every token vector has mean 0 and variance 1: the output of a LayerNorm at init (gain 1, bias 0)."""
    return torch.allclose(x.mean(-1), torch.zeros(()), atol=1e-4) and torch.allclose(x.var(-1, unbiased=False),
                                                                                     torch.ones(()), atol=1e-3)


def x_in(seed=0):
    return torch.randn(5, 2, DIM, generator=torch.Generator().manual_seed(seed)) * 3.0  # T x B x C, not unit scale


def assert_layer_is(layer, place):
    with torch.no_grad():
        x = x_in()
        out = run_layer(layer, x)
        assert torch.allclose(out, by_hand(layer, x, place), atol=1e-5), place
        for other in {"post", "pre", "peri", "reorder"} - {place}:  # the formula picks out this placement only
            try:
                reading = by_hand(layer, x, other)
            except AttributeError:  # no such norm to place (no output norms; the reordered norm's input norms)
                continue
            assert not torch.allclose(out, reading, atol=1e-3), other


# ------------------------------------------------------------------------------------------------ Peri-LN


def test_peri_ln_norms_each_sublayers_input_and_output(tiny_config_file, tmp_path):
    model = build(tiny_config_file, layout="peri")
    for layer in model.encoder.layers:
        assert len(layer.output_norms) == 2 and layer.normalize_before
        assert_layer_is(layer, "peri")
    assert all(len(layer.output_norms) == 3 for layer in model.decoder.layers)  # self-, cross-attention, FFN
    assert model.encoder.layer_norm is not None and model.decoder.layer_norm is not None  # Pre-LN's final norms
    for layer in build_lm(tmp_path, layout="peri").decoder.layers:
        assert len(layer.output_norms) == 2
        assert_layer_is(layer, "peri")


def test_peri_ln_output_norm_sees_the_sublayer_before_its_dropout(tiny_config_file):
    """In training, the residual branch is Dropout(LN_out(F)): the norm's input is F itself, and the branch that
    reaches the residual stream is the norm's output with p of its entries zeroed and the rest scaled by 1/(1-p)."""
    layer = build(tiny_config_file, layout="peri").encoder.layers[0].train()
    layer.branch_dropout.p = 0.5
    seen = {}
    layer.self_attn.register_forward_hook(lambda m, i, o: seen.update(f=o[0]))
    layer.output_norms[0].register_forward_hook(lambda m, i, o: seen.update(norm_in=i[0], norm_out=o))
    layer.final_layer_norm.register_forward_hook(lambda m, i, o: seen.update(h=i[0]))
    x = x_in()
    torch.manual_seed(0)
    with torch.no_grad():
        run_layer(layer, x)
    assert torch.equal(seen["norm_in"], seen["f"])
    branch = seen["h"] - x
    kept = branch != 0
    assert 0.3 < kept.float().mean() < 0.7
    assert torch.allclose(branch[kept], seen["norm_out"][kept] / 0.5, atol=1e-5)


# ------------------------------------------------------------------------------------------- reordered norm


def test_reorder_has_no_input_norm_and_norms_the_sublayers_output(tiny_config_file, tmp_path):
    model = build(tiny_config_file, layout="reorder", qk_norm=True)
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        for name in ("self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"):
            assert type(getattr(layer, name, None)).__name__ in ("Identity", "NoneType"), name
        assert type(layer.self_attn.q_proj).__name__ == "HeadNormedLinear"  # QK-Norm's head norms are kept
    for layer in model.encoder.layers:
        assert_layer_is(layer, "reorder")
    assert model.encoder.layer_norm is not None  # OLMo 2's final norm
    for layer in build_lm(tmp_path, layout="reorder", norm="rmsnorm").decoder.layers:
        assert type(layer.output_norms[0]).__name__ == "RMSNorm"
        assert_layer_is(layer, "reorder")


# ---------------------------------------------------------------------------------------------------- Mix-LN


def test_mixln_first_floor_alpha_l_layers_are_post_ln_the_rest_pre_ln(tiny_config_file, tmp_path):
    model = build(tiny_config_file, layout="mixln", encoder_layers=4, decoder_layers=8)
    assert [layer.normalize_before for layer in model.encoder.layers] == [False, True, True, True]  # floor(1.0)
    assert [layer.normalize_before for layer in model.decoder.layers] == [False] * 2 + [True] * 6  # floor(2.0)
    for index, layer in enumerate(model.encoder.layers):
        assert_layer_is(layer, "post" if index < 1 else "pre")
    assert model.encoder.layer_norm is not None and model.decoder.layer_norm is not None
    lm = build_lm(tmp_path, layout="mixln", mixln_alpha=0.5, decoder_layers=5)  # floor(2.5) = 2
    with torch.no_grad():
        x = x_in()
        for index, layer in enumerate(lm.decoder.layers):
            assert_layer_is(layer, "post" if index < 2 else "pre")
            x = run_layer(layer, x)
            assert unit_rows(x) == (index < 2)  # a Post-LN layer's output is a norm's


# -------------------------------------------------------------------------------------------------- ResiDual


def assert_residual_stack(stack, run_stack):
    """x_a: fairseq's Post-LN layers; x_d = the stack's input + every sublayer's output; output = x_a + LN(x_d)."""
    seen = {"branches": [], "outputs": []}
    stack.layers[0].register_forward_pre_hook(lambda m, args: seen.update(x0=args[0]))  # hooks return None
    for layer in stack.layers:
        assert not layer.normalize_before
        layer.register_forward_hook(lambda m, i, o: seen["outputs"].append(o[0] if isinstance(o, tuple) else o))
        for name in ("self_attn", "encoder_attn"):
            if getattr(layer, name, None) is not None:
                getattr(layer, name).register_forward_hook(lambda m, i, o: seen["branches"].append(o[0]))
        layer.fc2.register_forward_hook(lambda m, i, o: seen["branches"].append(o))
    with torch.no_grad():
        out = run_stack()
    x_d = seen["x0"] + sum(seen["branches"])
    assert torch.allclose(out, seen["outputs"][-1] + F.layer_norm(x_d, (DIM,), eps=1e-7), atol=1e-4)
    assert not torch.allclose(out, seen["outputs"][-1], atol=1e-3)  # not Post-LN's output alone
    assert all(unit_rows(x_a) for x_a in seen["outputs"])  # x_a is Post-LN's stream


def test_residual_two_streams_and_the_output_x_a_plus_ln_x_d(tiny_config_file, tmp_path):
    model = build(tiny_config_file, layout="residual")
    src = torch.randint(4, 40, (2, 6), generator=torch.Generator().manual_seed(1))
    prev = torch.randint(4, 40, (2, 5), generator=torch.Generator().manual_seed(2))
    assert_residual_stack(model.encoder, lambda: model.encoder(src, torch.tensor([6, 6]))["encoder_out"][0])
    encoder_out = model.encoder(src, torch.tensor([6, 6]))
    assert_residual_stack(model.decoder, lambda: model.decoder.extract_features(prev, encoder_out)[0].transpose(0, 1))
    lm = build_lm(tmp_path, layout="residual")
    tokens = torch.randint(4, 40, (2, 7), generator=torch.Generator().manual_seed(3))
    assert_residual_stack(lm.decoder, lambda: lm.decoder.extract_features(tokens, None)[0].transpose(0, 1))


def test_residual_stream_is_per_token_in_incremental_decoding(tmp_path):
    """Beam search runs the decoder one token at a time: x_d restarts at each call and gives the full pass's output."""
    lm = build_lm(tmp_path, layout="residual")
    tokens = torch.randint(4, 40, (2, 6), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        full = lm.decoder.extract_features(tokens, None)[0]
        state: dict = {}
        steps = [lm.decoder.extract_features(tokens[:, : t + 1], None, incremental_state=state)[0][:, -1] for t in range(6)]
    assert torch.allclose(full, torch.stack(steps, dim=1), atol=1e-5)


# ----------------------------------------------------------------------------------------- LayerNorm Scaling


def test_lnscale_divides_each_input_norm_by_sqrt_l_with_l_from_1(tiny_config_file, tmp_path):
    model = build(tiny_config_file, layout="lnscale", encoder_layers=3, decoder_layers=2)
    lm = build_lm(tmp_path, layout="lnscale", decoder_layers=4)
    x = x_in()
    with torch.no_grad():
        for stack in (model.encoder, model.decoder, lm.decoder):
            for l, layer in enumerate(stack.layers, start=1):
                norms = [layer.self_attn_layer_norm, layer.final_layer_norm]
                norms += [layer.encoder_attn_layer_norm] if getattr(layer, "encoder_attn", None) is not None else []
                for norm in norms:
                    plain = F.layer_norm(x, (DIM,), norm.weight, norm.bias, norm.eps)
                    assert torch.allclose(norm(x), plain / math.sqrt(l), atol=1e-6), l
            assert unit_rows(stack.layer_norm(x))  # the final norm is not scaled
        for l, layer in enumerate(lm.decoder.layers, start=1):  # Pre-LN with the scaled norms before each sublayer
            assert torch.allclose(run_layer(layer, x), by_hand(layer, x, "pre", scale=l**-0.5), atol=1e-5), l
            assert l == 1 or not torch.allclose(run_layer(layer, x), by_hand(layer, x, "pre"), atol=1e-3), l


def test_each_placement_starts_from_its_base_layouts_weights(tiny_config_file):
    """Norms draw no random numbers: for one seed a placement has Pre-LN's (ResiDual: Post-LN's) weights, plus its
    own norms at 1 and 0 (the reordered norm without the input norms it drops)."""
    bases = {"post": dict(build(tiny_config_file, layout="post").state_dict()),
             "pre": dict(build(tiny_config_file, layout="pre").state_dict())}  # fmt: skip
    for layout in PLACEMENTS:
        base = bases["post" if layout == "residual" else "pre"]
        ours = dict(build(tiny_config_file, layout=layout, mixln_alpha=0.5).state_dict())
        shared = set(base) & set(ours)
        assert all(torch.equal(base[name], ours[name]) for name in shared), layout
        assert all("norm" in name for name in set(ours) ^ set(base)), (layout, set(ours) ^ set(base))


# ------------------------------------------------------------------------------ language model, plan, config


def test_the_lm_arch_with_default_options_is_fairseqs_transformer_lm_weight_for_weight(tmp_path):
    for pre in (False, True):
        layout = "pre" if pre else "post"
        plugin = dict(build_lm(tmp_path, layout=layout).state_dict())
        extra = ["--decoder-normalize-before"] if pre else []
        fairseq_model = build_lm_plain(tmp_path, extra)
        assert set(plugin) == set(fairseq_model)
        assert all(torch.equal(plugin[name], fairseq_model[name]) for name in plugin)
    post = build_lm(tmp_path, layout="post")
    assert not any(layer.normalize_before for layer in post.decoder.layers) and post.decoder.layer_norm is None


def build_lm_plain(tmp_path, extra):
    """fairseq's own `--arch transformer_lm` (its dataclass defaults: Post-LN unless --decoder-normalize-before)."""
    argv = [str(tmp_path), "--task", "language_modeling", "--arch", "transformer_lm", *extra, "--decoder-layers", "3",
            "--decoder-embed-dim", str(DIM), "--decoder-input-dim", str(DIM), "--decoder-output-dim", str(DIM),
            "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "2", "--tokens-per-sample", "16",
            "--share-decoder-input-output-embed"]  # fmt: skip
    return dict(builder.built(argv, 1)[2].state_dict())


@pytest.mark.parametrize(
    ("model", "key"),
    [({"layout": "peri", "norm": "dyt"}, "model.norm"),
     ({"layout": "mixln", "encoder_layers": 2, "decoder_layers": 4}, "model.encoder_layers"),
     ({"layout": "mixln", "mixln_alpha": 1.5}, "model.mixln_alpha")],
)  # fmt: skip
def test_config_errors_name_the_key(model, key):
    declared = {key: model.pop(key) for key in option_keys(model["layout"]) if key in model}
    config = Config(model=dataclasses.replace(ModelConfig(), **model, options=declared))
    config = dataclasses.replace(config, train=dataclasses.replace(config.train, max_epoch=1))
    assert key in {problem_key for problem_key, _ in check_values(config)}


def test_the_translation_argv_of_each_placement(tiny_config_file, tmp_path):
    from prelnx.plan.translation import translation_argv

    for layout in PLACEMENTS:
        config, _ = load_config(tiny_config_file(model={"layout": layout, "mixln_alpha": 0.5}))
        argv = translation_argv(config, tmp_path)
        assert argv[argv.index("--layout-scheme") + 1] == layout
        assert ("--encoder-normalize-before" in argv) == LAYOUTS[layout].pre_ln
        assert ("--layout-options" in argv) == (layout == "mixln")  # the one placement that declares an option
        if layout == "mixln":
            assert json.loads(argv[argv.index("--layout-options") + 1]) == {"mixln_alpha": 0.5}
