"""What the gradient study measures: its grid of layouts x depths x seeds, the models in it, and their results."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config, check_values
from prelnx.exits import Refusal
from prelnx.layouts import absolute_spec, is_file_spec, names


class _Layouts(tuple):
    """The layout table's names (the paper compares post and pre); `in` also takes a user's PATH.py:CLASS, whose file
    is checked with the study's configs (check_study)."""

    def __contains__(self, value: object) -> bool:
        return (isinstance(value, str) and is_file_spec(value)) or tuple.__contains__(self, value)


LAYOUTS = _Layouts(names())
WEIGHTS = {"W1": "fc1", "W2": "fc2"}  # the paper's names -> fairseq's FFN modules

# --quick: the picture in about a minute on 2 cores (fewer seeds and depths, smaller batches).
QUICK = {"seeds": 3, "depths": (6, 10, 14), "max_tokens": 1024, "batches": 1}


class GradsError(Refusal):
    """Bad input to the gradient study; the message says what is wrong."""


@dataclass(frozen=True)
class ModelSpec:
    """One model to measure: a layout, a depth (encoder and decoder layers) and a seed (init, batches, dropout)."""

    layout: str
    depth: int
    seed: int
    checkpoint: str | None = None  # a trained model instead of a fresh one; layout and depth are then its own

    def label(self) -> str:
        what = f"checkpoint ({self.layout}, {self.depth}-{self.depth})" if self.checkpoint else f"{self.layout} {self.depth}-{self.depth}"
        return f"{what} seed {self.seed}"


@dataclass
class ModelResult:
    spec: ModelSpec
    norms: dict[tuple[str, int, str], float]  # (side, layer, weight) -> mean Frobenius norm over the batches
    build_s: float  # building (or loading) the model and its fairseq cfg
    data_s: float  # loading the dataset and collating this seed's batches (0 when cached)
    fwdbwd_s: float  # criterion forward + backward, summed over the batches
    # (side, layer) -> RMS of the layer's output (the residual stream it hands on; ResiDual's: x_a) over every element
    # of the batch, padding included, mean over the batches: the hidden-state scale the placements argue from
    hidden_rms: dict[tuple[str, int], float] = field(default_factory=dict)


@dataclass
class GradStudy:
    """What to measure: the base config, and the grid of layouts, depths and seeds."""

    config: Config
    layouts: tuple[str, ...] = ("post", "pre")
    depths: tuple[int, ...] = (6, 8, 10, 12, 14)
    seeds: tuple[int, ...] = tuple(range(1, 11))
    batches: int = 1
    max_tokens: int | None = None  # None: the config's train.max_tokens
    checkpoint: Path | None = None
    workers: int | None = None  # None: one per core (at most one per model)
    threads: int | None = None  # torch threads per worker; None: cores // workers

    @classmethod
    def from_options(cls, config: Config, *, quick: bool = False, **given: Any) -> GradStudy:
        """The study of `prelnx grads`' options (the fields'): None takes the default, or with `quick` the QUICK
        preset's value."""
        preset = {**QUICK, "seeds": tuple(range(1, QUICK["seeds"] + 1))} if quick else {}  # QUICK counts its seeds
        study = cls(config, **{**preset, **{key: value for key, value in given.items() if value is not None}})
        study.layouts = tuple(absolute_spec(name) for name in study.layouts)  # a user's file, from anywhere
        return study

    def tokens_per_batch(self) -> int:
        return self.max_tokens or self.config.train.max_tokens


@dataclass
class StudyOutcome:
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    files: list[Path] = field(default_factory=list)


def check_study(study: GradStudy) -> None:
    if study.config.task != "translation":
        raise GradsError(f"task: {study.config.task}: the gradient study (Figure 3) measures the translation "
                         f"transformer's FFNs; give a translation config (e.g. grads/figure3_synthetic.yaml)")  # fmt: skip
    if not study.layouts or any(layout not in LAYOUTS for layout in study.layouts):
        raise GradsError(f"layouts: allowed {', '.join(LAYOUTS)}; got {list(study.layouts)}")
    if not study.depths or any(depth < 1 for depth in study.depths):
        raise GradsError(f"depths: every depth must be >= 1, got {list(study.depths)}")
    if not study.seeds:
        raise GradsError("seeds: need at least one seed")
    for name in ("batches", "max_tokens", "workers", "threads"):
        value = getattr(study, name)
        if value is not None and value < 1:
            raise GradsError(f"--{name.replace('_', '-')}: must be >= 1, got {value}")
    if study.checkpoint is not None:
        if not Path(study.checkpoint).is_file():
            raise GradsError(f"--checkpoint: {study.checkpoint}: no such file")
        from prelnx.records.checkpoints import load_checkpoint

        try:
            load_checkpoint(Path(study.checkpoint), mmap=True)  # refused or damaged: one message, nothing runs
        except Refusal as error:
            raise GradsError(f"--checkpoint: {error}") from None
    problems = {
        f"layout {layout}: {key}: {message}"
        for layout in study.layouts
        for key, message in check_values(model_variant(study.config, layout, max(study.depths), study.seeds[0]))
    }  # e.g. a config's norm that one of the layouts refuses
    if problems:
        raise GradsError("these layouts do not fit the config: " + "; ".join(sorted(problems)))


def model_variant(config: Config, layout: str, depth: int, seed: int) -> Config:
    """The config with this layout, depth (encoder and decoder layers) and seed; the rest unchanged."""
    variant = copy.deepcopy(config)
    variant.model.layout = absolute_spec(layout)
    variant.model.encoder_layers = depth
    variant.model.decoder_layers = depth
    variant.train.seed = seed
    return variant


def model_code(config: Config, layout: str) -> dict[str, Any]:
    """Which model code a layout runs: the `--arch` and normalisation flags of its fairseq-train argv, and whether
    that is fairseq's own transformer (True for the paper's Post-LN and Pre-LN) or prelnx's plugin model."""
    from prelnx.plan.data import data_dir
    from prelnx.plan.translation import translation_argv

    argv = translation_argv(model_variant(config, layout, 6, 1), data_dir(config))
    arch = argv[argv.index("--arch") + 1]
    named = ("--encoder-normalize-before", "--decoder-normalize-before", "--deepnorm", "--qk-norm")
    flags = [a for a in argv if a in named]
    return {"arch": arch, "flags": flags, "fairseq_model": not arch.startswith("prelnx_")}


def plan_models(study: GradStudy, checkpoint: tuple[str, int] | None) -> list[ModelSpec]:
    """Every model to measure, the most expensive first (so the pool ends with small jobs and no idle core)."""
    specs = [ModelSpec(layout, depth, seed) for depth in study.depths for layout in study.layouts for seed in study.seeds]
    if checkpoint is not None:
        layout, depth = checkpoint
        specs += [ModelSpec(layout, depth, seed, str(study.checkpoint)) for seed in study.seeds]
    return sorted(specs, key=lambda spec: -spec.depth)
