"""The whole gradient study: check it, plan the models, measure them in a pool of workers (how many processes, how
many threads each), write the CSVs and the summary."""

from __future__ import annotations

import json
import logging
import multiprocessing
import signal
import time
from pathlib import Path

from prelnx.analysis.grads.measure import Worker, load_checkpoint_model
from prelnx.analysis.grads.study import (GradStudy, ModelResult, ModelSpec, StudyOutcome, check_study, model_code,
                                        plan_models)  # fmt: skip
from prelnx.analysis.grads.summary import HIDDEN_COLUMNS, csv_text, hidden_summary, result_rows, summarize, timing_summary
from prelnx.atomic import write_text_atomic
from prelnx.config.schema import Config
from prelnx.eta import Eta
from prelnx.launch.inprocess import load_plugin
from prelnx.launch.prepare import ensure_data
from prelnx.machine import usable_cores
from prelnx.plan.model_sizes import model_sizes
from prelnx import console

log = logging.getLogger(__name__)
# the sizes when fairseq does not know the preset (or cannot say): Transformer big's, the most memory
FALLBACK_SIZES = {"encoder_layers": 6, "decoder_layers": 6, "embed_dim": 1024, "ffn_dim": 4096}


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
    """Peak bytes of one worker measuring one model: the process, plus the activations kept for backward
    (calibrated on the Figure-3 model: 14-14 layers, d 512, FFN 1024, 4096 tokens peaked at 5.3 GB resident)."""
    sizes = model_sizes(config, FALLBACK_SIZES)
    d, ffn = sizes["embed_dim"], sizes["ffn_dim"]
    return 0.8e9 + 80.0 * tokens * d * 2 * depth * (1 + ffn / d) / 3


def plan_workers(study: GradStudy, specs: list[ModelSpec]) -> tuple[int, int]:
    """(worker processes, torch threads each).

    One single-threaded process per core rather than every core on one model: the models are independent, so side by
    side they keep every core busy through what torch does not parallelise (building a model, small ops), and each
    process has its own RNG (threads would share the global one that fairseq seeds and dropout draws from). Fewer
    workers when the available memory would not hold that many of the largest model's activations.
    """
    cores = usable_cores()
    workers = study.workers or max(1, min(cores, len(specs)))
    if study.workers is None:
        memory = available_memory()
        if memory is not None:
            largest = memory_per_worker(study.config, max(spec.depth for spec in specs), study.tokens_per_batch())
            workers = max(1, min(workers, int(0.8 * memory // largest)))
    threads = study.threads or max(1, cores // workers)
    return workers, threads


_WORKER: Worker | None = None


def _start_worker(config: Config, batches: int, max_tokens: int, threads: int) -> None:
    import torch

    global _WORKER
    torch.set_num_threads(threads)
    if multiprocessing.parent_process() is not None:  # a pool's worker: a console before fairseq's import sets its own
        console.configure()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's KeyboardInterrupt: terminate() ends it quietly
    load_plugin()  # a no-op in a forked worker; a spawned one imports fairseq here
    _WORKER = Worker(config, batches, max_tokens)


def _measure_in_worker(spec: ModelSpec) -> ModelResult:
    assert _WORKER is not None
    return _WORKER.measure(spec)


def run_models(study: GradStudy, specs: list[ModelSpec], workers: int, threads: int) -> list[ModelResult]:
    """Measure every model, in this process (one worker) or in a pool; a progress line per model."""
    max_tokens = study.tokens_per_batch()
    start = time.perf_counter()
    results: list[ModelResult] = []

    eta = Eta(sum(spec.depth for spec in specs))  # a model's cost grows with its layers

    def report(result: ModelResult) -> None:
        results.append(result)
        eta.add(result.spec.depth)
        last = result.norms[("decoder", result.spec.depth, "W2")]
        log.info(f"[{len(results)}/{len(specs)}] {result.spec.label()}: last-layer W2 grad {last:.3f} (fwd+bwd "
                 f"{result.fwdbwd_s:.1f} s, build {result.build_s:.1f} s; {time.perf_counter() - start:.0f} s elapsed"
                 + (f", {eta.text()})" if len(results) < len(specs) else ")"))  # fmt: skip

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


def run_study(study: GradStudy, out_dir: Path, plots: bool = True) -> StudyOutcome:
    """Measure every model of the study; write grads.csv, hidden.csv (each layer's output RMS), grads_summary.json
    (and the checkpoint's), and the plots."""
    check_study(study)
    start = time.perf_counter()
    ensure_data(study.config)  # generate the synthetic task once, before the workers race to do it
    load_plugin()  # registered once here; forked workers inherit it, and fairseq's modules already imported
    from fairseq import checkpoint_utils, options, tasks  # noqa: F401
    from fairseq.dataclass import utils  # noqa: F401

    checkpoint = None
    if study.checkpoint is not None:  # checked here, once, so that a bad file is one clear error
        probe = Worker(study.config, study.batches, study.tokens_per_batch())
        probe.fairseq_cfg(study.layouts[0], study.depths[0], study.seeds[0])
        checkpoint = load_checkpoint_model(Path(study.checkpoint), probe.task)[1:]  # its (layout, depth)
    specs = plan_models(study, checkpoint)
    workers, threads = plan_workers(study, specs)
    setup_s = time.perf_counter() - start
    log.info(f"gradient study: {len(specs)} models ({', '.join(study.layouts)} x depths "
             f"{','.join(map(str, study.depths))} x {console.counted(len(study.seeds), 'seed')}"
             f"{' + checkpoint' if checkpoint else ''}), "
             f"{study.batches} batch(es) of {study.tokens_per_batch()} tokens each; {workers} worker process(es) x "
             f"{threads} thread(s)")  # fmt: skip
    results = run_models(study, specs, workers, threads)
    models_s = time.perf_counter() - start - setup_s
    fresh = [r for r in results if r.spec.checkpoint is None]
    trained = [r for r in results if r.spec.checkpoint is not None]
    rows, checkpoint_rows = result_rows(fresh), result_rows(trained)
    summary = summarize(rows, checkpoint_rows)
    hidden = result_rows(fresh, hidden=True)
    summary["hidden_rms"] = hidden_summary(hidden)  # each layer's output RMS at init (hidden.csv per seed)
    summary["settings"] = {
        "config": study.config.name, "batches": study.batches, "max_tokens": study.tokens_per_batch(),
        "dropout": study.config.model.dropout, "split": "train",
        "loss": "fairseq's criterion (summed over target tokens) divided by sample_size, as the trainer does",
        "checkpoint": str(study.checkpoint) if study.checkpoint else None,
        "std": "sample standard deviation over seeds",
        "models": {layout: model_code(study.config, layout) for layout in study.layouts},  # plain fairseq or not
    }  # fmt: skip
    summary["timing"] = timing_summary(results, time.perf_counter() - start, workers, threads)
    summary["timing"].update(setup_s=setup_s, models_s=models_s)
    out_dir = Path(out_dir)
    files = [out_dir / "grads.csv", out_dir / "grads_summary.json"]
    write_text_atomic(files[0], csv_text(rows))
    files.append(out_dir / "hidden.csv")
    write_text_atomic(files[-1], csv_text(hidden, HIDDEN_COLUMNS))
    if checkpoint_rows:
        files.append(out_dir / "grads_checkpoint.csv")
        write_text_atomic(files[-1], csv_text(checkpoint_rows))
    if plots:  # drawn here, but plotting (matplotlib) is imported only when asked for
        from prelnx.plots.gradients import plot_figure3

        files.append(plot_figure3(summary, out_dir / "figure3.png"))
    summary["timing"]["total_wall_s"] = time.perf_counter() - start  # with the plots
    write_text_atomic(files[1], json.dumps(summary, indent=2) + "\n")
    return StudyOutcome(rows, summary, files)
