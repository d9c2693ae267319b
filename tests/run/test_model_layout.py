"""The built fairseq model really differs by layout (same code path as training)."""

from __future__ import annotations

import pytest
from prelnx.config.load import load_config
from prelnx.launch.inprocess import build_task_and_model


@pytest.mark.parametrize("layout", ["post", "pre"])
def test_layout_sets_normalize_before_and_final_norms(tiny_config_file, layout):
    config, _ = load_config(tiny_config_file(model={"layout": layout, "encoder_layers": 3, "decoder_layers": 2}))
    _, _, model = build_task_and_model(config)
    pre = layout == "pre"
    assert len(model.encoder.layers) == 3 and len(model.decoder.layers) == 2
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        assert layer.normalize_before is pre
    # Pre-LN adds a LayerNorm after the last layer of each stack; Post-LN has none there.
    assert (model.encoder.layer_norm is not None) is pre
    assert (model.decoder.layer_norm is not None) is pre


def test_dimensions_override_the_preset(tiny_config_file):
    config, _ = load_config(tiny_config_file(model={"embed_dim": 48, "ffn_dim": 80, "attention_heads": 4}))
    _, _, model = build_task_and_model(config)
    layer = model.encoder.layers[0]
    assert layer.fc1.in_features == 48 and layer.fc1.out_features == 80
    assert layer.self_attn.num_heads == 4


FINAL_NORM_SCHEME = '''
from prelnx_fairseq_plugin.models.schemes import LayoutScheme


class PostLNWithFinalNorm(LayoutScheme):
    """Post-LN plus a final norm of the model's --norm-type after each stack (none in fairseq's Post-LN)."""

    display_name = "Post-LN + final norm"
    norm_types = ("layernorm", "rmsnorm")

    def final_norm(self, stack, cfg, side, norm):
        assert norm is None  # Post-LN: fairseq built none
        return self.make_norm(cfg.encoder.embed_dim)
'''


def test_a_users_final_norm_hook_replaces_the_stacks_final_norm(tiny_config_file, tmp_path):
    (tmp_path / "final.py").write_text(FINAL_NORM_SCHEME)
    config, _ = load_config(tiny_config_file(model={"layout": f"{tmp_path / 'final.py'}:PostLNWithFinalNorm",
                                                    "norm": "rmsnorm"}))  # fmt: skip
    _, _, model = build_task_and_model(config)
    assert not model.encoder.layers[0].normalize_before  # built on Post-LN (pre_ln false)
    for stack in (model.encoder, model.decoder):
        assert type(stack.layer_norm).__name__ == "RMSNorm" and stack.layer_norm.weight.shape == (32,)
