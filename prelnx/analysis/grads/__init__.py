"""The gradient study of the paper's Figure 3: FFN weight-gradient norms of real fairseq models at initialisation.

For every layout x depth x seed, the model is built exactly as `prelnx train` builds it (the config's fairseq argv,
the plugin, `task.build_model`, seeded with the seed), put in train mode (dropout as configured), and fed the same
N real mini-batches of the configured data (the task's own train iterator, shuffled with the seed) through the
configured criterion. As in fairseq's trainer, the summed loss's gradient is divided by the batch's sample_size
(target tokens), so a gradient is per token. For each batch we take the Frobenius norm of the gradient of every FFN
weight (fc1 = W1, fc2 = W2) of every encoder and decoder layer; a row of grads.csv is its mean over the batches.
Beside them, hidden.csv holds the RMS of every layer's output (the residual stream) in the same forward passes.

The parts, one job each:
- study: what to measure (GradStudy, its --quick preset, the input checks, the models of the grid);
- measure: one model inside a worker (building it through prelnx.launch.inprocess, its batches, the gradient norms);
- workers: the pool of worker processes and its memory planning;
- summary: grads.csv rows, mean and std over seeds, the JSON summary and the closing table beside the paper's numbers;
- run: `run_study`, the whole study and its files.
Parsing the command's options (--seeds, --layouts, --depths) is the command layer's: prelnx.commands.parsing.
"""

from __future__ import annotations

from prelnx.analysis.grads.measure import Worker, ffn_weights, load_checkpoint_model
from prelnx.analysis.grads.run import run_study
from prelnx.analysis.grads.study import (
    LAYOUTS,
    QUICK,
    WEIGHTS,
    GradsError,
    GradStudy,
    ModelResult,
    ModelSpec,
    StudyOutcome,
    check_study,
    model_variant,
    plan_models,
)
from prelnx.analysis.grads.summary import (
    CSV_COLUMNS,
    HIDDEN_COLUMNS,
    bars_depth,
    csv_text,
    hidden_csv_text,
    hidden_rows,
    hidden_summary,
    paper_figure3,
    per_layer_stats,
    read_grads_csv,
    report_lines,
    result_rows,
    summarize,
    timing_summary,
)
from prelnx.analysis.grads.workers import (
    available_cores,
    available_memory,
    memory_per_worker,
    plan_workers,
    preset_dims,
    quiet_fairseq_logging,
)

__all__ = [
    "CSV_COLUMNS", "HIDDEN_COLUMNS", "LAYOUTS", "QUICK", "WEIGHTS", "GradStudy", "GradsError", "ModelResult", "ModelSpec", "StudyOutcome",
    "Worker", "available_cores", "available_memory", "bars_depth", "check_study", "csv_text", "ffn_weights", "hidden_csv_text", "hidden_rows", "hidden_summary",
    "load_checkpoint_model", "memory_per_worker", "model_variant", "paper_figure3", "per_layer_stats", "plan_models",
    "plan_workers", "preset_dims", "quiet_fairseq_logging", "read_grads_csv", "report_lines", "result_rows", "run_study",
    "summarize", "timing_summary",
]  # fmt: skip
