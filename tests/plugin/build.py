"""The plugin's models built in this process from their fairseq argv, as `prelnx train`'s fairseq child builds them
(the steps of prelnx.launch.inprocess.build_task_and_model), with fairseq's hydra conversion of the argv done once
per distinct conversion instead of once per model: ~0.3 CPU-s each, most of what building a tiny model costs.

fairseq's `convert_namespace_to_omegaconf(args)` (fairseq/dataclass/utils.py) composes hydra's config from
`override_module_args(args)` alone (the overrides and deletes of the dataclass groups: common, task, dataset,
optimizer, ...), then sets each group left empty to `Namespace(**vars(args))` with its class's `add_args` defaults:
the model of an architecture registered without a dataclass (the plugin's `prelnx_<preset>`) is such a group. Two
argvs with the same overrides and deletes therefore convert to the same cfg except for that Namespace, and a model
of such an architecture is built from the task set up for the first of them with a Namespace of its own argv (every
translation config on the same data: one conversion). The first conversion of each key checks that Namespace against
fairseq's. An architecture with a dataclass (the language model's) has its options among the overrides: its key is
its whole configuration.
"""

from __future__ import annotations

import copy
from argparse import Namespace
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config
from prelnx.launch.inprocess import build_model, load_plugin
from prelnx.launch.prepare import ensure_data
from prelnx.plan.launch import fairseq_argv

# (overrides, deletes) -> (fairseq's cfg converted from the first argv with them, the task set up from its cfg.task)
_CONVERTED: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[Any, Any]] = {}


def converted(argv: list[str]) -> tuple[Any, Any]:
    """(cfg, task) for a fairseq training argv, as training_cfg and setup_task give them: `cfg` has the groups a test
    reads (cfg.common, cfg.criterion, cfg.model, ...) as attributes, its model group this argv's; `task` is shared by
    every argv of the same conversion (a test that changes it sets up its own from cfg.task)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import _set_legacy_defaults, convert_namespace_to_omegaconf, override_module_args
    from fairseq.models import ARCH_MODEL_REGISTRY
    from omegaconf import DictConfig

    load_plugin(argv)
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    overrides, deletes = override_module_args(args)
    model_args = None
    if "model" in deletes:  # fairseq's conversion of a model group without a dataclass
        model_args = Namespace(**vars(args))
        _set_legacy_defaults(model_args, ARCH_MODEL_REGISTRY[args.arch])
        model_args._name = args.arch
    key = (tuple(overrides), tuple(deletes))
    if key not in _CONVERTED:
        cfg = convert_namespace_to_omegaconf(args)
        assert isinstance(cfg.task, DictConfig), "a task without a dataclass is set up from the whole argv"
        assert model_args is None or vars(cfg.model) == vars(model_args), "fairseq's conversion has changed"
        _CONVERTED[key] = cfg, tasks.setup_task(cfg.task)
    cfg, task = _CONVERTED[key]
    model_cfg = model_args if model_args is not None else copy.deepcopy(cfg.model)
    return Namespace(**{**{group: cfg[group] for group in cfg}, "model": model_cfg}), task


def built(argv: list[str], seed: int | None = None) -> tuple[Any, Any, Any]:
    """(cfg, task, model) for a fairseq training argv: the model at initialisation, seeded with `seed` (None: the
    argv's --seed), by build_task_and_model's build_model."""
    cfg, task = converted(argv)
    return cfg, task, build_model(task, cfg, seed)


def translation_argv(config: Config, save_dir: Path = Path("unused-checkpoints")) -> list[str]:
    """The argv of `prelnx train` on CPU for a prelnx config (training_cfg's)."""
    return fairseq_argv(config, ensure_data(config), save_dir, cuda=False)


def translation(config: Config) -> tuple[Any, Any, Any]:
    """(cfg, task, model) of a prelnx config, as build_task_and_model gives them."""
    return built(translation_argv(config))
