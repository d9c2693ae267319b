"""tests/plugin/build.py builds the model prelnx's own in-process build builds (build_task_and_model, one hydra
conversion per model): for Admin (a declared option in --layout-options, a forward pass at build time), built from
the conversion cached for Post-LN, the same modules and the same weights."""

from __future__ import annotations

import torch

from prelnx.config.load import load_config
from prelnx.launch.inprocess import build_task_and_model
from tests.plugin import build


def test_the_shared_conversion_builds_build_task_and_models_model(tiny_config_file):
    build.translation(load_config(tiny_config_file(model={"layout": "post"}))[0])
    config, _ = load_config(tiny_config_file(model={"layout": "admin", "encoder_layers": 3}))
    assert '{"admin_init": "profile"}' in build.translation_argv(config)
    ours, theirs = build.translation(config)[2], build_task_and_model(config)[2]
    assert str(ours) == str(theirs)  # every module, its type and its sizes
    ours, theirs = ours.state_dict(), theirs.state_dict()
    assert set(ours) == set(theirs) and all(torch.equal(ours[name], theirs[name]) for name in ours)
