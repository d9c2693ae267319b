"""The gradient study of the paper's Figure 3: FFN weight-gradient norms of real fairseq models at initialisation.

For every layout x depth x seed, a model built as `prelnx train` builds it gets the same real mini-batches; a row
of grads.csv is the Frobenius norm of an FFN weight's (W1 = fc1, W2 = fc2) per-token gradient, the mean over the
batches; hidden.csv holds each layer's output RMS. Modules: study (what to measure), measure (one model in a
worker), summary (rows, statistics, the closing table), run (the pool and `run_study`). The package holds the names
the command and scripts/bench_grads.py import.
"""

from __future__ import annotations

from prelnx.analysis.grads.run import run_study
from prelnx.analysis.grads.study import QUICK, GradStudy, check_study
from prelnx.analysis.grads.summary import report_lines
from prelnx.machine import usable_cores as available_cores

__all__ = ["QUICK", "GradStudy", "available_cores", "check_study", "report_lines", "run_study"]
