"""Config -> the launch of one run: the exact `fairseq-train` argv (saved as command.txt, runnable by hand), its
workers, threads, environment and batch. `plan_run`, a pure function of the config and the environment it is given,
is the one call every launcher makes; a task is one planner module, registered by name in TASK_PLANNERS. Also where
runs and sweeps go by default: runs/train/<run name> (`prelnx train`) and runs/<sweep name>, which holds its runs only.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.exits import Refusal
from prelnx.machine import cpu_bf16_problem, may_have_gpu
from prelnx.plan.common import optimization_argv, run_argv
from prelnx.plan.data import data_dir
from prelnx.plan.encoder import masked_lm_argv, sentence_prediction_argv
from prelnx.plan.language_model import language_model_argv
from prelnx.plan.parallel import describe_batch, resolve, with_effective_batch
from prelnx.plan.translation import translation_argv

RUNS = Path("runs")
TRAININGS = "train"  # runs/train/: single trainings; no sweep may take this name


def default_run_dir(config: Config) -> Path:
    """runs/train/<name>; a name that would leave runs/ (absolute, `..`, a backslash) is refused: give --run-dir."""
    return runs_subdir(config.name or "run", RUNS / TRAININGS)


def sweep_dir(name: str) -> Path:
    """runs/<sweep name>; runs/train/ is refused (it holds single trainings)."""
    if Path(name).parts[:1] == (TRAININGS,):
        raise Refusal(f"sweep name {name!r}: runs/{TRAININGS}/ holds single trainings (prelnx train); name the "
                         f"sweep otherwise (--name) or give --out")  # fmt: skip
    return runs_subdir(name, RUNS)


def runs_subdir(name: str, runs_root: Path) -> Path:
    """runs_root/name, for a run's or a sweep's name; Refusal for a name that would leave runs_root."""
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts or "\\" in name or not parts:
        raise Refusal(f"name: {name!r} would put the run outside {runs_root}/; use a plain name "
                         f"(letters, digits, - _ . and / for subfolders) or give --run-dir explicitly")  # fmt: skip
    return runs_root / name


# How prelnx starts a fairseq program (`python -u -m <ENTRY> fairseq_cli.train ...`): fairseq's own program, less the
# modules it never uses (prelnx/launch/fairseq_entry.py says which and why). command.txt shows the plain command.
FAIRSEQ_ENTRY = "prelnx.launch.fairseq_entry"


def fairseq_program(program: str) -> list[str]:
    """The arguments after `python -u` that run a fairseq program (fairseq_cli.train, fairseq_cli.generate)."""
    return ["-m", FAIRSEQ_ENTRY, program]


# task -> its planner: (config, data folder) -> the task's, model's and criterion's arguments
TASK_PLANNERS: dict[str, Callable[[Config, Path], list[str]]] = {
    "translation": translation_argv,
    "masked_lm": masked_lm_argv,
    "sentence_prediction": sentence_prediction_argv,
    "language_model": language_model_argv,
}


def use_cuda(config: Config) -> bool:
    if config.train.device == "cpu" or (config.train.device == "auto" and not may_have_gpu()):
        return False
    import torch

    available = torch.cuda.is_available()
    if config.train.device == "cuda" and not available:
        raise Refusal("train.device: cuda, but torch sees no GPU; use device: cpu or auto")
    return available


def fairseq_argv(config: Config, data: Path, save_dir: Path, *, cuda: bool) -> list[str]:
    """The `fairseq-train` arguments (without the program name) of one worker of this config."""
    return TASK_PLANNERS[config.task](config, data) + optimization_argv(config) + run_argv(config, save_dir, cuda=cuda)


@dataclass(frozen=True)
class Launch:
    argv: list[str]  # fairseq-train arguments
    env: dict[str, str]  # additions to the environment (torch's threads per worker among them)
    launcher: list[str] = field(default_factory=list)  # torchrun's arguments for several workers; [] for one
    batch: str = ""  # how the batch per update is made up (parallel.describe_batch)
    # srun's arguments when the workers are Slurm tasks (each runs the child command itself): for command.txt only
    slurm_tasks: list[str] = field(default_factory=list)

    def child_argv(self, python: str) -> list[str]:
        """The command prelnx runs: fairseq's train module (through FAIRSEQ_ENTRY), under torchrun for several."""
        train = [*fairseq_program("fairseq_cli.train"), *self.argv]
        if self.launcher:
            return [python, "-u", "-m", "torch.distributed.run", *self.launcher, *train]
        return [python, "-u", *train]

    def command_line(self) -> str:
        """The plain command, with the environment it needs, as saved in command.txt (runnable by hand)."""
        env = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(self.env.items()))
        program = f"torchrun {shlex.join(self.launcher)} -m fairseq_cli.train" if self.launcher else "fairseq-train"
        if self.slurm_tasks:  # inside an allocation of that shape (sbatch/salloc)
            program = f"srun {shlex.join(self.slurm_tasks)} {program}"
        return f"{env} {program} {shlex.join(self.argv)}".strip()

    def command_file(self) -> str:
        """command.txt: how the batch is made up, then the command."""
        return f"# {self.batch}\n{self.command_line()}\n"


@dataclass(frozen=True)
class RunPlan:
    """Everything a launcher needs for one run: the config as it trains (update_freq resolved for its workers),
    its data folder, run dir and launch."""

    config: Config
    data: Path
    run_dir: Path
    launch: Launch

    @property
    def checkpoints(self) -> Path:
        return self.run_dir / "checkpoints"


def plan_run(config: Config, run_dir: Path, env: dict[str, str] | None = None) -> RunPlan:
    """The run of `config` in `run_dir` on this machine; `env`: the run's own environment additions (parallel.resolve).
    A Refusal (BatchError) for a batch or worker request this machine cannot meet."""
    cuda = use_cuda(config)
    # refused before training, where it would train
    if config.train.precision == "bf16" and not cuda and (problem := cpu_bf16_problem()) is not None:
        raise Refusal(problem)
    parallel = resolve(config, cuda, env)
    config = with_effective_batch(config, parallel)  # update_freq from train.effective_batch_tokens
    threads = parallel.threads(config.train.threads)
    data = data_dir(config)
    argv = fairseq_argv(config, data, run_dir / "checkpoints", cuda=cuda) + parallel.fairseq_argv()
    launch = Launch(argv, {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}, parallel.launcher(),
                    describe_batch(config, parallel), parallel.slurm_tasks())  # fmt: skip
    return RunPlan(config, data, run_dir, launch)


def with_threads(config: Config, threads: int) -> Config:
    """`threads` for the run, shared by its data-parallel workers (unless train.threads is set)."""
    if config.train.threads is not None:
        return config
    per_worker = max(1, threads // (config.train.processes or 1))
    return dataclasses.replace(config, train=dataclasses.replace(config.train, threads=per_worker))
