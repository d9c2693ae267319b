"""fairseq in this process: the plugin loaded, and a run's task and model built from the same argv as `prelnx train`
(for the tests of the layouts and the gradient study, which need the model rather than a training)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prelnx.config.schema import Config
from prelnx.launch import fairseq_entry
from prelnx.launch.prepare import ensure_data
from prelnx.plan.launch import fairseq_argv
from prelnx.plugin_path import PLUGIN_DIR


def load_plugin(argv: list[str] | None = None) -> None:
    """Import the plugin as fairseq's --user-dir does (registered once), fairseq as a training of `argv` imports it
    (fairseq_entry.install); silence what fairseq 0.12 says in process (Hydra's deprecations, torch's pin_memory)."""
    import warnings
    from argparse import Namespace

    warnings.filterwarnings("ignore", module=r"hydra\.")
    warnings.filterwarnings("ignore", message=r".*(hydra|version_base|ConfigStore schema).*")
    warnings.filterwarnings("ignore", message=r".*'pin_memory' argument is set as true.*")

    fairseq_entry.install(argv or ())
    from fairseq import utils

    utils.import_user_module(Namespace(user_dir=str(PLUGIN_DIR)))


def build_task_and_model(config: Config, save_dir: Path = Path("unused-checkpoints")) -> tuple[Any, Any, Any]:
    """(fairseq cfg, task, model) for the config, on CPU, at initialisation (seeded with train.seed)."""
    from fairseq import tasks

    cfg = training_cfg(config, save_dir)
    task = tasks.setup_task(cfg.task)
    return cfg, task, build_model(task, cfg)


def training_cfg(config: Config, save_dir: Path = Path("unused-checkpoints")) -> Any:
    """fairseq's training cfg of the config: the argv of `prelnx train` (on CPU), parsed by fairseq in this process
    (for callers that set up the task once and build many models from it)."""
    argv = fairseq_argv(config, ensure_data(config), save_dir, cuda=False)
    load_plugin(argv)
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    return convert_namespace_to_omegaconf(args)


def build_model(task: Any, cfg: Any, seed: int | None = None) -> Any:
    """A model of `cfg` for a set-up task, at initialisation, seeded with `seed` (None: the cfg's, train.seed)."""
    from fairseq import utils

    utils.set_torch_seed(cfg.common.seed if seed is None else seed)
    return task.build_model(cfg.model)
