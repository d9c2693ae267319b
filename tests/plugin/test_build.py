"""tests/plugin/build.py builds the model prelnx's own in-process build builds (build_task_and_model, one hydra
conversion per model): for a layout whose build runs a forward pass (Admin's profile) and a layout with a declared
option, after another layout's conversion was cached, the same modules and the same weights."""

from __future__ import annotations

import torch

from prelnx.config.load import load_config
from prelnx.launch.inprocess import build_task_and_model
from tests.plugin import build


def test_the_shared_conversion_builds_build_task_and_models_model(tiny_config_file):
    build.translation(load_config(tiny_config_file(model={"layout": "post"}))[0])
    for model in ({"layout": "admin"}, {"layout": "mixln", "encoder_layers": 4, "decoder_layers": 4, "mixln_alpha": 0.5}):
        config, _ = load_config(tiny_config_file(model=model))
        ours, theirs = build.translation(config)[2], build_task_and_model(config)[2]
        assert str(ours) == str(theirs)  # every module, its type and its sizes
        ours, theirs = ours.state_dict(), theirs.state_dict()
        assert set(ours) == set(theirs) and all(torch.equal(ours[name], theirs[name]) for name in ours), model
