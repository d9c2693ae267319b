"""Building a run's fairseq task and model in this process, from the same argv as `prelnx train`.

Used where prelnx needs the model itself rather than a training (tests of the layouts, the gradient study).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prelnx.config.schema import Config
from prelnx.run.plan import PLUGIN_DIR, ensure_data, fairseq_argv


def load_plugin() -> None:
    """Import the plugin the way fairseq's --user-dir does, so its parts are registered exactly once.

    Also silences the deprecation notices fairseq 0.12's in-process config conversion triggers in Hydra
    (`hydra.experimental.initialize`, `version_base`): they are about fairseq's code, not the user's.
    """
    import warnings
    from argparse import Namespace

    warnings.filterwarnings("ignore", module=r"hydra\.")
    warnings.filterwarnings("ignore", message=r".*(hydra|version_base).*")

    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=str(PLUGIN_DIR)))


def build_task_and_model(config: Config, save_dir: Path = Path("unused-checkpoints")) -> tuple[Any, Any, Any]:
    """(fairseq cfg, task, model) for the config, on CPU, at initialisation (seeded with train.seed)."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    load_plugin()
    data = ensure_data(config)
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, fairseq_argv(config, data, save_dir, cuda=False))
    cfg = convert_namespace_to_omegaconf(args)
    utils.set_torch_seed(cfg.common.seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    return cfg, task, model
