"""`prelnx env`: the lines a bug report needs, read from the libraries and this machine."""

from __future__ import annotations

import json
import platform
from importlib.metadata import version

import torch
from typer.testing import CliRunner

from prelnx.cli import app


def test_env_prints_the_versions_the_cpu_and_its_bf16_the_gpus_and_slurm():
    from prelnx.machine import cpu_bf16_flags, usable_cores

    result = CliRunner().invoke(app, ["env"])
    assert result.exit_code == 0, result.output
    lines = {line[2:].split(":", 1)[0]: line.split(":", 1)[1].strip() for line in result.output.splitlines()}
    assert lines["prelnx"] == version("prelnx") and lines["torch"] == torch.__version__
    assert lines["Python"].startswith(platform.python_version())
    assert lines["fairseq"].startswith(version("ve-fairseq"))
    assert lines["CUDA (torch built with)"] == (torch.version.cuda or "none (a CPU build)")
    assert f"{usable_cores()} usable cores" in lines["CPU"]
    flags = cpu_bf16_flags()
    assert lines["CPU native bf16"] == (", ".join(flags) if flags else "none (train.precision: bf16 refused)")
    assert "GPUs" in lines and "Slurm" in lines
    as_json = CliRunner().invoke(app, ["env", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output) == lines  # the same facts, one JSON object
