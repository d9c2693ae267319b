"""One meaning of a run's outcome, computed once per run and read by every claim and every report line.

- trained: it finished with a final valid nll at least `trained_margin_bits` (prelnx/paper.yaml, the one margin;
  a claim may state its own) below the unigram plateau (prelnx.report.plateau);
- failed to train: it finished with its final valid nll not that far below the plateau, or not finite (a NaN loss
  in a finished run is a failure to train, never "diverged");
- diverged: prelnx stopped it as diverged (status.json), at its update;
- no validation row: it finished without a single validation (counted and shown, in no test);
- not judged: it finished with a finite nll but no plateau is known (no dictionary, no binarized data): whether it
  trained cannot be said, and a claim that needs it is "not testable";
- not finished: pending, running, failed or interrupted runs (listed apart by the report).

The final valid nll is fairseq's unsmoothed loss of the last validation (the valid loss when a run has no nll).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum
from typing import Any

from prelnx.paper import paper_data
from prelnx.report.plateau import is_finite


class RunState(str, Enum):
    TRAINED = "trained"
    FAILED = "failed to train"
    DIVERGED = "diverged"
    NO_VALIDATION = "no validation row"
    NOT_JUDGED = "not judged (no unigram plateau)"
    NOT_FINISHED = "not finished"


@dataclass(frozen=True)
class RunOutcome:
    state: RunState
    update: int | None  # diverged: the update it diverged at; else its last validation's (None: none)
    final_nll: float | None  # None: no finite one

    @property
    def counted(self) -> bool:
        """A seed every claim counts (it finished or diverged)."""
        return self.state is not RunState.NOT_FINISHED

    @property
    def failed(self) -> bool:
        return self.state in (RunState.FAILED, RunState.DIVERGED)


@functools.cache
def trained_margin() -> float:
    """paper.yaml's `trained_margin_bits`: how far below the unigram plateau a run's final valid nll must be."""
    return float(paper_data()["trained_margin_bits"])


def final_nll_of(rows: list[dict[str, Any]]) -> float | None:
    if not rows:
        return None
    value = rows[-1].get("valid_nll_loss", rows[-1].get("valid_loss"))
    return float(value) if is_finite(value) else None


def run_outcome(status: str, rows: list[dict[str, Any]], plateau: float | None, margin: float | None = None,
                diverged_at: int | None = None) -> RunOutcome:  # fmt: skip
    """A run's outcome from its status, its validation rows and the plateau (margin: paper.yaml's by default)."""
    margin = trained_margin() if margin is None else margin
    last = int(rows[-1].get("num_updates", 0)) if rows else None
    if status == "diverged":
        return RunOutcome(RunState.DIVERGED, diverged_at if diverged_at is not None else last, None)
    if status != "finished":
        return RunOutcome(RunState.NOT_FINISHED, last, None)
    if not any("valid_loss" in r or "valid_nll_loss" in r for r in rows):
        return RunOutcome(RunState.NO_VALIDATION, None, None)
    nll = final_nll_of(rows)
    if nll is None:
        return RunOutcome(RunState.FAILED, last, None)
    if plateau is None:
        return RunOutcome(RunState.NOT_JUDGED, last, nll)
    return RunOutcome(RunState.TRAINED if nll <= plateau - margin else RunState.FAILED, last, nll)
