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
The package holds the names the command and scripts/bench_grads.py import from it; anything else is read from its
module.
"""

from __future__ import annotations

from prelnx.analysis.grads.run import run_study
from prelnx.analysis.grads.study import QUICK, GradStudy, check_study
from prelnx.analysis.grads.summary import report_lines
from prelnx.analysis.grads.workers import available_cores

__all__ = ["QUICK", "GradStudy", "available_cores", "check_study", "report_lines", "run_study"]
