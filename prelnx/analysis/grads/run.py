"""The whole gradient study: check it, plan the models, measure them in the pool, write the CSVs and the summary."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from prelnx.analysis.grads.measure import Worker, load_checkpoint_model
from prelnx.analysis.grads.study import GradStudy, StudyOutcome, check_study, model_code, plan_models
from prelnx.analysis.grads.summary import HIDDEN_COLUMNS, csv_text, hidden_rows, hidden_summary, result_rows, summarize, timing_summary
from prelnx.analysis.grads.workers import plan_workers, quiet_fairseq_logging, run_models
from prelnx.atomic import write_text_atomic
from prelnx.launch.inprocess import load_plugin
from prelnx.launch.prepare import ensure_data


def run_study(study: GradStudy, out_dir: Path, echo: Callable[[str], None] = print, plots: bool = True) -> StudyOutcome:
    """Measure every model of the study; write grads.csv, hidden.csv (each layer's output RMS), grads_summary.json
    (and the checkpoint's), and the plots."""
    check_study(study)
    start = time.perf_counter()
    ensure_data(study.config)  # generate the synthetic task once, before the workers race to do it
    load_plugin()  # registered once here; forked workers inherit it, and fairseq's modules already imported
    from fairseq import checkpoint_utils, options, tasks  # noqa: F401
    from fairseq.dataclass import utils  # noqa: F401

    quiet_fairseq_logging()
    checkpoint = None
    if study.checkpoint is not None:  # checked here, once, so that a bad file is one clear error
        probe = Worker(study.config, study.batches, study.tokens_per_batch())
        probe.fairseq_cfg(study.layouts[0], study.depths[0], study.seeds[0])
        _, layout, depth = load_checkpoint_model(Path(study.checkpoint), probe.task)
        checkpoint = (layout, depth)
    specs = plan_models(study, checkpoint)
    workers, threads = plan_workers(study, specs)
    setup_s = time.perf_counter() - start
    echo(f"gradient study: {len(specs)} models ({', '.join(study.layouts)} x depths {','.join(map(str, study.depths))} x "
         f"{len(study.seeds)} seeds{' + checkpoint' if checkpoint else ''}), {study.batches} batch(es) of "
         f"{study.tokens_per_batch()} tokens each; {workers} worker process(es) x {threads} thread(s)")  # fmt: skip
    results = run_models(study, specs, workers, threads, echo)
    models_s = time.perf_counter() - start - setup_s
    fresh = [r for r in results if r.spec.checkpoint is None]
    trained = [r for r in results if r.spec.checkpoint is not None]
    rows, checkpoint_rows = result_rows(fresh), result_rows(trained)
    summary = summarize(rows, checkpoint_rows)
    hidden = hidden_rows(fresh)
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
    return StudyOutcome(rows, checkpoint_rows, summary, files)
