"""The gradient study of the paper's Figure 3: FFN weight-gradient norms of real fairseq models at initialisation.

For every layout x depth x seed, the model is built exactly as `prelnx train` builds it (the config's fairseq argv,
the plugin, `task.build_model`, seeded with the seed), put in train mode (dropout as configured), and fed the same
N real mini-batches of the configured data (the task's own train iterator, shuffled with the seed) through the
configured criterion. As in fairseq's trainer, the summed loss's gradient is divided by the batch's sample_size
(target tokens), so a gradient is per token. For each batch we take the Frobenius norm of the gradient of every FFN
weight (fc1 = W1, fc2 = W2) of every encoder and decoder layer; a row of grads.csv is its mean over the batches.

Only the FFN weights require gradients: autograd then skips the weight gradients nobody reads (attention, embeddings,
output projection); the FFN gradients are the same numbers.

Models are independent, so they run in a pool of worker processes (by default one per core, one torch thread each):
see `plan_workers` for why processes rather than threads.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import logging
import math
import multiprocessing
import os
import statistics
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from prelnx.atomic import write_text_atomic
from prelnx.config.schema import Config, check_values
from prelnx.run.build import load_plugin
from prelnx.run.plan import ensure_data, fairseq_argv

LAYOUTS = ("post", "pre", "deepnorm")  # the schema's model.layout values; the paper compares post and pre
WEIGHTS = {"W1": "fc1", "W2": "fc2"}  # the paper's names -> fairseq's FFN modules
CSV_COLUMNS = ("layout", "depth", "seed", "side", "layer", "weight", "grad_norm")

# Figure 3 of the paper (IWSLT14 sizes, 10 seeds), read off the plots; see docs/gradients.md.
PAPER = {
    "last_layer_w2": {"post": "about 1.6 at every depth 6-14 (flat)", "pre": "about 0.3 at 6 layers, falling to about 0.13 at 14",
                      "deepnorm": "not in the paper"},
    "per_layer": {"post": "grows with the layer index, largest at the last layer", "pre": "about flat across layers",
                  "deepnorm": "not in the paper"},
    "after_warmup": "Post-LN after warm-up: nearly 0 in every layer",
}

# --quick: the picture in about a minute on 2 cores (fewer seeds and depths, smaller batches).
QUICK = {"seeds": 3, "depths": (6, 10, 14), "max_tokens": 1024, "batches": 1}


class GradsError(ValueError):
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
    tokens: int  # target tokens seen, over all batches
    build_s: float  # building (or loading) the model and its fairseq cfg
    data_s: float  # loading the dataset and collating this seed's batches (0 when cached)
    fwdbwd_s: float  # criterion forward + backward, summed over the batches
    total_s: float  # the whole job in the worker


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

    def tokens_per_batch(self) -> int:
        return self.max_tokens or self.config.train.max_tokens


@dataclass
class StudyOutcome:
    rows: list[dict[str, Any]]
    checkpoint_rows: list[dict[str, Any]]
    summary: dict[str, Any]
    files: list[Path] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- input checks


def parse_seeds(text: str) -> tuple[int, ...]:
    """`10` -> seeds 1..10; `3,7` -> seeds 3 and 7."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.lstrip("-").isdigit() for part in parts):
        raise GradsError(f"--seeds: expected a count (10 = seeds 1..10) or a list (3,7), got {text!r}")
    if "," not in text:
        count = int(parts[0])
        if count < 1:
            raise GradsError(f"--seeds: need at least 1 seed, got {count}")
        return tuple(range(1, count + 1))
    seeds = tuple(int(part) for part in parts)
    if len(set(seeds)) != len(seeds):
        raise GradsError(f"--seeds: repeated seed in {text!r}")
    return seeds


def parse_layouts(text: str) -> tuple[str, ...]:
    layouts = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown or not layouts:
        raise GradsError(f"--layouts: unknown layout {', '.join(unknown) or repr(text)}; allowed: {', '.join(LAYOUTS)} (e.g. post,pre)")
    return tuple(dict.fromkeys(layouts))


def parse_depths(text: str) -> tuple[int, ...]:
    try:
        depths = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise GradsError(f"--depths: expected layer counts like 6,8,10, got {text!r}") from None
    if not depths or any(depth < 1 for depth in depths):
        raise GradsError(f"--depths: every depth must be >= 1 (layers per encoder and decoder), got {text!r}")
    return tuple(dict.fromkeys(depths))


def check_study(study: GradStudy) -> None:
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
    if study.checkpoint is not None and not Path(study.checkpoint).is_file():
        raise GradsError(f"--checkpoint: {study.checkpoint}: no such file")
    if study.checkpoint is not None:
        from prelnx.run.checkpoints import load_checkpoint

        try:
            load_checkpoint(Path(study.checkpoint), mmap=True)  # refused or damaged: one message, nothing runs
        except ValueError as error:
            raise GradsError(f"--checkpoint: {error}") from None
    problems = {
        f"layout {layout}: {key}: {message}"
        for layout in study.layouts
        for key, message in check_values(model_variant(study.config, layout, max(study.depths), study.seeds[0]))
    }  # e.g. a config's norm that one of the layouts refuses
    if problems:
        raise GradsError("these layouts do not fit the config: " + "; ".join(sorted(problems)))


# ------------------------------------------------------------------------------------ one model, inside a worker


def model_variant(config: Config, layout: str, depth: int, seed: int) -> Config:
    """The config with this layout, depth (encoder and decoder layers) and seed; the rest unchanged."""
    variant = copy.deepcopy(config)
    variant.model.layout = layout
    variant.model.encoder_layers = depth
    variant.model.decoder_layers = depth
    variant.train.seed = seed
    return variant


class _Worker:
    """What one worker process keeps between models: the task, fairseq cfgs per (layout, depth), each seed's batches."""

    def __init__(self, config: Config, batches: int, max_tokens: int) -> None:
        self.config, self.batches, self.max_tokens = config, batches, max_tokens
        self.cfgs: dict[tuple[str, int], Any] = {}
        self.samples: dict[int, list[dict[str, Any]]] = {}
        self.checkpoints: dict[str, Any] = {}
        self.task: Any = None
        self.criterion: Any = None

    def fairseq_cfg(self, layout: str, depth: int, seed: int) -> Any:
        """The training cfg of this variant: the same argv `prelnx train` would run, parsed by fairseq."""
        key = (layout, depth)
        if key not in self.cfgs:
            from fairseq import options, tasks
            from fairseq.dataclass.utils import convert_namespace_to_omegaconf

            load_plugin()
            variant = model_variant(self.config, layout, depth, seed)
            argv = fairseq_argv(variant, ensure_data(variant), Path("unused-checkpoints"), cuda=False)
            args = options.parse_args_and_arch(options.get_training_parser(), argv)
            with warnings.catch_warnings():  # fairseq's own use of hydra's deprecated API warns at every call
                warnings.simplefilter("ignore")
                cfg = convert_namespace_to_omegaconf(args)
            if self.task is None:  # the task (data, dictionaries) does not depend on layout, depth or seed
                self.task = tasks.setup_task(cfg.task)
                self.criterion = self.task.build_criterion(cfg.criterion)
            self.cfgs[key] = cfg
        return self.cfgs[key]

    def fresh_model(self, spec: ModelSpec) -> Any:
        """What `build_task_and_model` returns for this variant: seeded with the seed, then `task.build_model`."""
        from fairseq import utils

        cfg = self.fairseq_cfg(spec.layout, spec.depth, spec.seed)
        utils.set_torch_seed(spec.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.task.build_model(cfg.model)

    def checkpoint_model(self, spec: ModelSpec) -> Any:
        if spec.checkpoint not in self.checkpoints:
            self.fairseq_cfg(spec.layout, spec.depth, spec.seed)  # sets up the task
            self.checkpoints[spec.checkpoint] = load_checkpoint_model(Path(spec.checkpoint), self.task)[0]
        return self.checkpoints[spec.checkpoint]

    def seed_batches(self, seed: int, cfg: Any, model: Any) -> list[dict[str, Any]]:
        """The first N batches of the train iterator shuffled with this seed: the same for every model of the seed.

        Built as fairseq's train builds its iterator (max positions of task and model, batch-size multiple).
        """
        if seed not in self.samples:
            from fairseq import utils

            if "train" not in self.task.datasets:
                self.task.load_dataset("train", combine=False, epoch=1)
            iterator = self.task.get_batch_iterator(
                dataset=self.task.dataset("train"),
                max_tokens=self.max_tokens,
                max_sentences=cfg.dataset.batch_size,
                max_positions=utils.resolve_max_positions(self.task.max_positions(), model.max_positions()),
                ignore_invalid_inputs=True,
                required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
                seed=seed,
                num_workers=0,
                epoch=1,
                disable_iterator_cache=True,  # the cached iterator would ignore the seed
            )
            with warnings.catch_warnings():  # torch warns that pin_memory does nothing without a GPU
                warnings.simplefilter("ignore")
                batches = iterator.next_epoch_itr(shuffle=True)
                samples = [sample for _, sample in zip(range(self.batches), batches)]
            if len(samples) < self.batches:
                raise GradsError(f"--batches {self.batches}: the train split has only {len(samples)} batches of {self.max_tokens} tokens")
            self.samples[seed] = samples
        return self.samples[seed]

    def measure(self, spec: ModelSpec) -> ModelResult:
        import torch

        start = time.perf_counter()
        model = self.checkpoint_model(spec) if spec.checkpoint else self.fresh_model(spec)
        built = time.perf_counter()
        samples = self.seed_batches(spec.seed, self.cfgs[(spec.layout, spec.depth)], model)
        loaded = time.perf_counter()
        ffn = ffn_weights(model)
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        for weight in ffn.values():
            weight.requires_grad_(True)
        model.train()  # dropout as configured, as in training
        sums = dict.fromkeys(ffn, 0.0)
        fwdbwd, tokens = 0.0, 0
        for index, sample in enumerate(samples):
            torch.manual_seed(spec.seed * 1000 + index)  # the same dropout draws for every model of the seed
            model.zero_grad(set_to_none=True)
            before = time.perf_counter()
            with warnings.catch_warnings():  # torch's deprecation warning about fairseq's attention masks
                warnings.simplefilter("ignore")
                loss, sample_size, _ = self.criterion(model, sample)
                loss.backward()
            fwdbwd += time.perf_counter() - before
            scale = 1.0 / float(sample_size)  # what fairseq's trainer does: multiply_grads(1 / sample_size)
            for key, weight in ffn.items():
                sums[key] += float(weight.grad.norm()) * scale
            tokens += int(sample["ntokens"])
        model.zero_grad(set_to_none=True)
        norms = {key: total / len(samples) for key, total in sums.items()}
        return ModelResult(spec, norms, tokens, built - start, loaded - built, fwdbwd, time.perf_counter() - start)


def ffn_weights(model: Any) -> dict[tuple[str, int, str], Any]:
    """(side, layer from 1, W1|W2) -> the FFN weight parameter of every encoder and decoder layer."""
    found = {}
    for side, stack in (("encoder", model.encoder.layers), ("decoder", model.decoder.layers)):
        for index, layer in enumerate(stack, start=1):
            for name, module in WEIGHTS.items():
                found[(side, index, name)] = getattr(layer, module).weight
    return found


def load_checkpoint_model(path: Path, task: Any) -> tuple[Any, str, int]:
    """(model, layout, depth) of a fairseq checkpoint, built with its own cfg for this task's dictionaries."""
    from fairseq import checkpoint_utils

    from prelnx.run.checkpoints import load_checkpoint

    try:
        load_checkpoint(path, mmap=True)  # a planted or damaged file is refused here, with one message
    except ValueError as error:
        raise GradsError(f"--checkpoint: {error}") from None
    load_plugin()  # safe loading (weights_only=True with fairseq's allowlist) for fairseq's own loader too
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    except Exception as error:  # noqa: BLE001 - any unreadable file is the user's input error
        raise GradsError(f"--checkpoint: {path}: not a readable fairseq checkpoint ({type(error).__name__}: {error})") from None
    cfg = state.get("cfg")
    if cfg is None or cfg.get("model") is None or "model" not in state:
        raise GradsError(f"--checkpoint: {path}: no model config or weights in this file")
    model_cfg = cfg.model
    try:
        model = task.build_model(model_cfg)
        model.load_state_dict(state["model"], strict=True, model_cfg=model_cfg)
    except (RuntimeError, KeyError, AttributeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise GradsError(f"--checkpoint: {path}: does not fit the config's data and model ({first})") from None
    if getattr(model_cfg, "deepnorm", False):
        layout = "deepnorm"
    else:
        layout = "pre" if model.decoder.layers[0].normalize_before else "post"
    return model, layout, len(model.decoder.layers)


_WORKER: _Worker | None = None


def _start_worker(config: Config, batches: int, max_tokens: int, threads: int) -> None:
    import torch

    global _WORKER
    torch.set_num_threads(threads)
    load_plugin()  # a no-op in a forked worker; a spawned one imports fairseq here
    quiet_fairseq_logging()
    _WORKER = _Worker(config, batches, max_tokens)


def _measure_in_worker(spec: ModelSpec) -> ModelResult:
    assert _WORKER is not None
    return _WORKER.measure(spec)


# ----------------------------------------------------------------------------------------------- the whole study


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


# (embed dim, FFN dim) of the fairseq presets, for the memory estimate when the config does not override them.
PRESET_DIMS = {"transformer_iwslt_de_en": (512, 1024), "transformer": (512, 2048), "transformer_wmt_en_de": (512, 2048)}


def available_memory() -> int | None:
    """Bytes the kernel says are available (MemAvailable), or None where /proc/meminfo is not there."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_per_worker(config: Config, depth: int, tokens: int) -> float:
    """Peak bytes of one worker measuring one model: the process, plus the activations kept for backward.

    Calibrated on the Figure-3 model: 14-14 layers, d 512, FFN 1024, 4096 tokens peaked at 5.3 GB resident.
    """
    d, ffn = PRESET_DIMS.get(config.model.arch, (1024, 4096))
    d, ffn = config.model.embed_dim or d, config.model.ffn_dim or ffn
    return 0.8e9 + 80.0 * tokens * d * 2 * depth * (1 + ffn / d) / 3


def plan_workers(study: GradStudy, specs: list[ModelSpec]) -> tuple[int, int]:
    """(worker processes, torch threads each).

    Processes, one per core with one thread each, rather than one process using every core for each model: the models
    are independent, so running them side by side keeps every core busy through the parts torch does not parallelise
    (building a model is single-threaded weight initialisation, and small ops scale badly across threads), a shared
    machine's other load slows single-threaded workers less than a team of OpenMP threads that wait for each other,
    and each process has its own RNG, so a model's dropout draws do not depend on what runs next to it. (Threads
    would share the global torch RNG that fairseq seeds and dropout draws from.) Fewer workers when the memory that
    is available would not hold that many of the largest model's activations.
    """
    cores = available_cores()
    workers = study.workers or max(1, min(cores, len(specs)))
    if study.workers is None:
        memory = available_memory()
        if memory is not None:
            largest = memory_per_worker(study.config, max(spec.depth for spec in specs), study.tokens_per_batch())
            workers = max(1, min(workers, int(0.8 * memory // largest)))
    threads = study.threads or max(1, cores // workers)
    return workers, threads


def plan_models(study: GradStudy, checkpoint: tuple[str, int] | None) -> list[ModelSpec]:
    """Every model to measure, the most expensive first (so the pool ends with small jobs and no idle core)."""
    specs = [ModelSpec(layout, depth, seed) for depth in study.depths for layout in study.layouts for seed in study.seeds]
    if checkpoint is not None:
        layout, depth = checkpoint
        specs += [ModelSpec(layout, depth, seed, str(study.checkpoint)) for seed in study.seeds]
    return sorted(specs, key=lambda spec: -spec.depth)


def _run_models(study: GradStudy, specs: list[ModelSpec], workers: int, threads: int, echo: Callable[[str], None]) -> list[ModelResult]:
    max_tokens = study.tokens_per_batch()
    start = time.perf_counter()
    results: list[ModelResult] = []

    def report(result: ModelResult) -> None:
        results.append(result)
        last = result.norms[("decoder", result.spec.depth, "W2")]
        echo(f"[{len(results)}/{len(specs)}] {result.spec.label()}: last-layer W2 grad {last:.3f} "
             f"(fwd+bwd {result.fwdbwd_s:.1f} s, build {result.build_s:.1f} s; {time.perf_counter() - start:.0f} s elapsed)")  # fmt: skip

    if workers == 1:
        import torch

        previous = torch.get_num_threads()
        try:
            _start_worker(study.config, study.batches, max_tokens, threads)
            for spec in specs:
                report(_measure_in_worker(spec))
        finally:
            torch.set_num_threads(previous)
        return results
    # fork: the workers inherit the imported fairseq and the registered plugin (no import per worker). Safe with one
    # thread per worker even if this process already used OpenMP; with more threads, spawn is the safe choice.
    method = "fork" if threads == 1 and "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with context.Pool(workers, _start_worker, (study.config, study.batches, max_tokens, threads), maxtasksperchild=None) as pool:
        for result in pool.imap_unordered(_measure_in_worker, specs, chunksize=1):
            report(result)
    return results


def result_rows(results: Iterable[ModelResult]) -> list[dict[str, Any]]:
    rows = [
        {"layout": r.spec.layout, "depth": r.spec.depth, "seed": r.spec.seed, "side": side, "layer": layer,
         "weight": weight, "grad_norm": norm}
        for r in results
        for (side, layer, weight), norm in r.norms.items()
    ]  # fmt: skip
    order = {"encoder": 0, "decoder": 1}
    return sorted(rows, key=lambda row: (row["layout"], row["depth"], row["seed"], order[row["side"]], row["layer"], row["weight"]))


def csv_text(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "grad_norm": f"{row['grad_norm']:.6g}"})
    return buffer.getvalue()


def read_grads_csv(path: Path) -> list[dict[str, Any]]:
    with open(path, newline="") as handle:
        return [
            {**row, "depth": int(row["depth"]), "seed": int(row["seed"]), "layer": int(row["layer"]),
             "grad_norm": float(row["grad_norm"])}
            for row in csv.DictReader(handle)
        ]  # fmt: skip


def _mean_std(values: list[float]) -> dict[str, float]:
    """Mean and sample standard deviation (0 for a single seed) over seeds."""
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}


def per_layer_stats(rows: list[dict[str, Any]]) -> dict[tuple[str, int, str, int, str], dict[str, float]]:
    """(layout, depth, side, layer, weight) -> mean/std/n over seeds."""
    groups: dict[tuple[str, int, str, int, str], list[float]] = {}
    for row in rows:
        groups.setdefault((row["layout"], row["depth"], row["side"], row["layer"], row["weight"]), []).append(row["grad_norm"])
    return {key: _mean_std(values) for key, values in sorted(groups.items())}


def bars_depth(depths: Iterable[int]) -> int:
    """The depth shown per layer in Figure 3 (a)(b): 6 as in the paper when measured, else the shallowest."""
    depths = sorted(set(depths))
    return 6 if 6 in depths else depths[0]


def summarize(rows: list[dict[str, Any]], checkpoint_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON summary: per-layer mean/std over seeds, the last-layer W2 per depth, the growth across layers."""
    stats = per_layer_stats(rows)
    depths = sorted({row["depth"] for row in rows})
    layouts = [layout for layout in LAYOUTS if any(row["layout"] == layout for row in rows)]
    last_w2 = {
        layout: {str(depth): stats[(layout, depth, "decoder", depth, "W2")] for depth in depths}
        for layout in layouts
    }  # fmt: skip
    shown = bars_depth(depths)
    growth = {
        layout: {
            side: {weight: stats[(layout, shown, side, shown, weight)]["mean"] / stats[(layout, shown, side, 1, weight)]["mean"]
                   for weight in WEIGHTS}
            for side in ("encoder", "decoder")
        }
        for layout in layouts
    }  # fmt: skip
    summary: dict[str, Any] = {
        "layouts": layouts,
        "depths": depths,
        "seeds": sorted({row["seed"] for row in rows}),
        "last_layer_w2": last_w2,
        "last_layer_w2_falls_with_depth": {
            layout: last_w2[layout][str(depths[-1])]["mean"] / last_w2[layout][str(depths[0])]["mean"] for layout in layouts
        },
        "growth_depth": shown,
        "growth_last_over_first_layer": growth,
        "per_layer": [
            {"layout": layout, "depth": depth, "side": side, "layer": layer, "weight": weight, **values}
            for (layout, depth, side, layer, weight), values in stats.items()
        ],
        "paper": PAPER,
    }
    if checkpoint_rows:
        summary["checkpoint"] = [
            {"layout": layout, "depth": depth, "side": side, "layer": layer, "weight": weight, **values}
            for (layout, depth, side, layer, weight), values in per_layer_stats(checkpoint_rows).items()
        ]
    return summary


def timing_summary(results: list[ModelResult], wall_s: float, workers: int, threads: int) -> dict[str, Any]:
    """Where the time went. The cost ratio is the machine time (wall x workers) over the time spent in fwd+bwd."""
    fwdbwd = sum(r.fwdbwd_s for r in results)
    return {
        "wall_s": wall_s,
        "fwdbwd_sum_s": fwdbwd,
        "build_sum_s": sum(r.build_s for r in results),
        "data_sum_s": sum(r.data_s for r in results),
        "workers": workers,
        "threads_per_worker": threads,
        "models": len(results),
        "cost_ratio": wall_s * workers / fwdbwd if fwdbwd else math.inf,
        "wall_over_fwdbwd_sum": wall_s / fwdbwd if fwdbwd else math.inf,
    }


def quiet_fairseq_logging() -> None:
    """fairseq's text_to_speech task calls logging.basicConfig(level=DEBUG) when fairseq is imported; undo that."""
    root = logging.getLogger()
    if root.level < logging.WARNING:
        root.setLevel(logging.WARNING)


def run_study(study: GradStudy, out_dir: Path, echo: Callable[[str], None] = print, plots: bool = True) -> StudyOutcome:
    """Measure every model of the study; write grads.csv, grads_summary.json (and the checkpoint's), and the plots."""
    check_study(study)
    start = time.perf_counter()
    ensure_data(study.config)  # generate the synthetic task once, before the workers race to do it
    load_plugin()  # registered once here; forked workers inherit it, and fairseq's modules already imported
    from fairseq import checkpoint_utils, options, tasks  # noqa: F401
    from fairseq.dataclass import utils  # noqa: F401

    quiet_fairseq_logging()
    checkpoint = None
    if study.checkpoint is not None:  # checked here, once, so that a bad file is one clear error
        probe = _Worker(study.config, study.batches, study.tokens_per_batch())
        probe.fairseq_cfg(study.layouts[0], study.depths[0], study.seeds[0])
        _, layout, depth = load_checkpoint_model(Path(study.checkpoint), probe.task)
        checkpoint = (layout, depth)
    specs = plan_models(study, checkpoint)
    workers, threads = plan_workers(study, specs)
    setup_s = time.perf_counter() - start
    echo(f"gradient study: {len(specs)} models ({', '.join(study.layouts)} x depths {','.join(map(str, study.depths))} x "
         f"{len(study.seeds)} seeds{' + checkpoint' if checkpoint else ''}), {study.batches} batch(es) of "
         f"{study.tokens_per_batch()} tokens each; {workers} worker process(es) x {threads} thread(s)")  # fmt: skip
    results = _run_models(study, specs, workers, threads, echo)
    models_s = time.perf_counter() - start - setup_s
    fresh = [r for r in results if r.spec.checkpoint is None]
    trained = [r for r in results if r.spec.checkpoint is not None]
    rows, checkpoint_rows = result_rows(fresh), result_rows(trained)
    summary = summarize(rows, checkpoint_rows)
    summary["settings"] = {
        "config": study.config.name, "batches": study.batches, "max_tokens": study.tokens_per_batch(),
        "dropout": study.config.model.dropout, "split": "train",
        "loss": "fairseq's criterion (summed over target tokens) divided by sample_size, as the trainer does",
        "checkpoint": str(study.checkpoint) if study.checkpoint else None,
        "std": "sample standard deviation over seeds",
    }  # fmt: skip
    summary["timing"] = timing_summary(results, time.perf_counter() - start, workers, threads)
    summary["timing"].update(setup_s=setup_s, models_s=models_s)
    out_dir = Path(out_dir)
    files = [out_dir / "grads.csv", out_dir / "grads_summary.json"]
    write_text_atomic(files[0], csv_text(rows))
    if checkpoint_rows:
        files.append(out_dir / "grads_checkpoint.csv")
        write_text_atomic(files[-1], csv_text(checkpoint_rows))
    if plots:
        from prelnx.plots.gradients import plot_figure3

        files.append(plot_figure3(summary, out_dir / "figure3.png"))
    summary["timing"]["total_wall_s"] = time.perf_counter() - start  # with the plots
    write_text_atomic(files[1], json.dumps(summary, indent=2) + "\n")
    return StudyOutcome(rows, checkpoint_rows, summary, files)


def report_lines(summary: dict[str, Any]) -> list[str]:
    """The closing table: our numbers beside the paper's."""
    lines = ["last-layer (decoder) W2 gradient norm, mean +- std over seeds:"]
    for layout, by_depth in summary["last_layer_w2"].items():
        cells = "  ".join(f"{depth}: {v['mean']:.3f}+-{v['std']:.3f}" for depth, v in by_depth.items())
        lines.append(f"  {layout:4s} {cells}   (paper: {PAPER['last_layer_w2'][layout]})")
    lines.append(f"last layer / first layer, at depth {summary['growth_depth']}:")
    for layout, sides in summary["growth_last_over_first_layer"].items():
        cells = "  ".join(f"{side} W1 {v['W1']:.2f} W2 {v['W2']:.2f}" for side, v in sides.items())
        lines.append(f"  {layout:4s} {cells}   (paper: {PAPER['per_layer'][layout]})")
    t = summary["timing"]
    lines.append(
        f"time: wall {t['wall_s']:.1f} s, forward+backward {t['fwdbwd_sum_s']:.1f} s summed over {t['models']} models "
        f"({t['workers']} worker(s) x {t['threads_per_worker']} thread(s)); cost ratio wall x workers / fwd+bwd = "
        f"{t['cost_ratio']:.2f} (build {t['build_sum_s']:.1f} s, data {t['data_sum_s']:.1f} s summed)"
    )
    return lines
