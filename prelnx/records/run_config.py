"""A run dir's config.yaml: the one writer and the one reader. It is the config `prelnx train` trained, read back
through the config package's strict reader and validator, so it means what it meant (today's defaults for keys it
lacks); a missing, non-YAML or invalid file is one `RunConfigError` naming the file, never a silent guess.
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


def has_config(run_dir: Path) -> bool:
    """Whether `run_dir` holds a run (prelnx train writes config.yaml before anything else of it)."""
    return (run_dir / CONFIG_NAME).is_file()


def write_run_config(run_dir: Path, config: Config) -> None:
    write_text_atomic(run_dir / CONFIG_NAME, dump_config(config))


def read_run_config(run_dir: Path) -> Config:
    """The Config a run trained, from its config.yaml."""
    path = run_dir / CONFIG_NAME
    if not path.is_file():
        raise RunConfigError(f"{run_dir}: not a run dir (no {CONFIG_NAME}); give a folder `prelnx train` wrote")
    try:
        return config_from_dict(read_yaml(path, TOP_KEYS, "a run's config") or {}, str(path))
    except (YamlInputError, ConfigError) as error:  # one problem a line, each naming the file: one line here
        lines = [line.strip().removeprefix(str(path)).lstrip(": ") for line in str(error).splitlines()]
        said = "; ".join(line for line in lines if line and not line.endswith(":"))  # not ConfigError's heading
        raise RunConfigError(f"{path}: not a readable run config ({said}); it is the file `prelnx train` wrote: "
                             f"restore it, or train the run again with --force") from None  # fmt: skip
