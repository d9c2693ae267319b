"""A run dir's config.yaml: the one writer and the one reader (evaluate, finetune, the grain, the identity check).

The file is the config `prelnx train` trained (config.load.dump_config); it is read back through the config
package's own strict YAML reader and validator (config.load.config_from_dict), so it means what it meant to train,
today's defaults filled in for keys it does not hold. A file that is missing, not YAML, or not a valid config is
one `RunConfigError` naming the file and what is wrong, never a traceback and never a silent guess.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.atomic import write_text_atomic
from prelnx.config.load import TOP_KEYS, ConfigError, config_from_dict, dump_config
from prelnx.config.schema import Config
from prelnx.config.strict_yaml import YamlInputError, read_yaml

CONFIG_NAME = "config.yaml"


class RunConfigError(ConfigError):
    """A run dir's config.yaml is missing or cannot be read as a config; the message names the file."""


def config_path(run_dir: Path) -> Path:
    return run_dir / CONFIG_NAME


def has_config(run_dir: Path) -> bool:
    """Whether `run_dir` holds a run (prelnx train writes config.yaml before anything else of it)."""
    return config_path(run_dir).is_file()


def write_run_config(run_dir: Path, config: Config) -> None:
    write_text_atomic(config_path(run_dir), dump_config(config))


def read_run_config(run_dir: Path) -> Config:
    """The Config a run trained, from its config.yaml."""
    path = config_path(run_dir)
    if not path.is_file():
        raise RunConfigError(f"{run_dir}: not a run dir (no {CONFIG_NAME}); give a folder `prelnx train` wrote")
    try:
        return config_from_dict(read_yaml(path, TOP_KEYS, "a run's config") or {}, str(path))
    except (YamlInputError, ConfigError) as error:  # one problem a line, each naming the file: one line here
        lines = [line.strip().removeprefix(str(path)).lstrip(": ") for line in str(error).splitlines()]
        said = "; ".join(line for line in lines if line and not line.endswith(":"))  # not ConfigError's heading
        raise RunConfigError(f"{path}: not a readable run config ({said}); it is the file `prelnx train` wrote: "
                             f"restore it, or train the run again with --force") from None  # fmt: skip
