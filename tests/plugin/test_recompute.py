"""Every layout, recomputed from raw tensors (tests/plugin/recompute.py), never through the model's own norms.

For each layout, the encoder stack, the decoder stack with cross-attention and (for the layouts the language model
takes) the decoder-only LM, 6 layers deep (Mix-LN's 0.25 x 6 = 1.5: floor 1, round 2), with every norm's gain and
bias, Admin's w and ReZero's a moved off their initial values: the stack the plugin built, run by its own code, equals
the stack recomputed by the layout's formula, in eval mode and in training mode (residual dropout 0.3, activation
dropout 0.2) with the same seed before both, so both draw the same dropout masks in fairseq's order.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import yaml

from prelnx.config.load import load_config
from prelnx.config.schema import Config, ModelConfig
from prelnx.plan.common import normalize_before_argv, variant_argv
from prelnx.plan.language_model import LM_PLUGIN_ARCH
from tests.conftest import TINY
from tests.plugin import build, recompute
from tests.plugin.recompute import ACTIVATION_DROPOUT, DIM, DROPOUT, FFN, HEADS

DEPTH = 6  # x 0.25 = 1.5: Mix-LN's floor (1) and round (2) differ
TRANSLATION = ("post", "pre", "deepnorm", "admin", "tfixup", "rezero", "rezero_postln", "b2t",
               "peri", "reorder", "mixln", "residual", "lnscale")  # fmt: skip
LANGUAGE_MODEL = ("post", "pre", "peri", "reorder", "mixln", "residual", "lnscale")
CASES = [(layout, side) for layout in TRANSLATION for side in ("encoder", "decoder")]
CASES += [(layout, "lm") for layout in LANGUAGE_MODEL]


def translation_model(folder, layout: str):
    model = {**TINY["model"], "layout": layout, "encoder_layers": DEPTH, "decoder_layers": DEPTH, "dropout": DROPOUT,
             "activation_dropout": ACTIVATION_DROPOUT, "attention_dropout": 0.0}  # fmt: skip
    path = folder / f"{layout}.yaml"
    path.write_text(yaml.safe_dump({**TINY, "model": model}))
    config, _ = load_config(path)
    return build.translation(config)[2]


def language_model(folder, layout: str, seed: int = 1, **model):
    """The decoder-only model as fairseq-train builds it from the argv plan/common.py gives for these model keys."""
    from prelnx.plugin_path import PLUGIN_DIR

    (folder / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(40)))
    config = Config(model=dataclasses.replace(ModelConfig(), layout=layout, **model))
    argv = [str(folder), "--user-dir", str(PLUGIN_DIR), "--task", "language_modeling", "--arch", LM_PLUGIN_ARCH,
            *variant_argv(config), *normalize_before_argv(config, ("decoder",)), "--decoder-layers", str(DEPTH),
            "--decoder-embed-dim", str(DIM), "--decoder-input-dim", str(DIM), "--decoder-output-dim", str(DIM),
            "--decoder-ffn-embed-dim", str(FFN), "--decoder-attention-heads", str(HEADS), "--tokens-per-sample", "16",
            "--dropout", str(DROPOUT), "--activation-dropout", str(ACTIVATION_DROPOUT), "--attention-dropout", "0",
            "--share-decoder-input-output-embed"]  # fmt: skip
    return build.built(argv, seed)[2]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One model per (layout, translation or LM), built once for the module, its parameters perturbed."""
    built: dict[tuple[str, bool], torch.nn.Module] = {}

    def get(layout: str, lm: bool) -> torch.nn.Module:
        if (layout, lm) not in built:
            folder = tmp_path_factory.mktemp(f"{layout}-{'lm' if lm else 'mt'}")
            model = language_model(folder, layout) if lm else translation_model(folder, layout)
            recompute.perturb(model)
            built[layout, lm] = model
        return built[layout, lm]

    return get


def inputs(side: str):
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(5, 2, DIM, generator=generator) * 3 + 0.5  # T x B x C, not at a norm's scale
    encoder_out = torch.randn(6, 2, DIM, generator=generator) if side == "decoder" else None
    mask = recompute.causal_mask(5) if side != "encoder" else None
    return x, encoder_out, mask


@pytest.mark.parametrize(("layout", "side"), CASES)
def test_every_stack_is_its_layouts_formula_in_eval_and_in_training(models, layout, side):
    model = models(layout, side == "lm")
    stack = model.encoder if side == "encoder" else model.decoder
    places = recompute.places(layout, "encoder" if side == "encoder" else "decoder", DEPTH, DEPTH)
    x, encoder_out, mask = inputs(side)
    outputs = {}
    for training in (False, True):
        model.train(training)
        with torch.no_grad():
            torch.manual_seed(11)
            ours = recompute.run_stack(stack, x, encoder_out, mask)
            torch.manual_seed(11)
            hand = recompute.stack(stack, layout, x, places, encoder_out=encoder_out, mask=mask, training=training)
        error = float((ours - hand).abs().max())  # float32 rounding, relative to the stack's scale (no norm: tfixup)
        assert error <= 1e-5 * (1 + float(hand.abs().max())), (layout, side, training, error)
        outputs[training] = ours
    assert not torch.allclose(outputs[False], outputs[True], atol=1e-3)  # dropout acted: the check sees its masks


def test_residual_output_norm_uses_the_references_eps(models):
    """ResiDual's LN(x_d) with eps 1e-7 (resi_dual/resi_dual.py at 8682f75): on an x_d of variance ~1e-6 fairseq's
    1e-5 would shrink the output about 3x, which the stacks' scale hides."""
    output = models("residual", False).encoder.layer_norm
    x_d = torch.randn(5, 2, DIM, generator=torch.Generator().manual_seed(3)) * 1e-3
    output.stream.x_d = x_d
    with torch.no_grad():
        got = output(torch.zeros(5, 2, DIM))
    assert torch.allclose(got, recompute.norm(x_d, output.norm, recompute.RESIDUAL_OUTPUT_EPS), rtol=1e-4, atol=1e-5)
