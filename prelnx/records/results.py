"""A run's results as every reader sees them (the runner's final status.json, a sweep's summary, plots, the
report): one rule for best and final values, and the sweep index (`sweep.json`) that lists a sweep's runs."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from prelnx.exits import Refusal
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.status import read_status


def is_finite(value: Any) -> bool:
    """A finite number (a diverged row's nan/inf is no result; bools are no numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def finite(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if is_finite(v)]


def best_and_final(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """best_valid_loss (lowest finite), best_valid_bleu (highest finite), final_valid_loss (the last row's, as
    recorded: nan when the run ended diverging)."""
    losses = finite(r.get("valid_loss") for r in rows)
    bleus = finite(r.get("valid_bleu") for r in rows)
    return {
        "best_valid_loss": min(losses) if losses else None,
        "best_valid_bleu": max(bleus) if bleus else None,
        "final_valid_loss": rows[-1].get("valid_loss") if rows else None,
    }


def run_results(run_dir: Path) -> dict[str, Any]:
    """A run's status and results from its files (`pending` when it has no status.json yet)."""
    status = read_status(run_dir)
    rows = read_metrics(run_dir)
    test_path = run_dir / "eval" / "test.json"
    test = json.loads(test_path.read_text()) if test_path.is_file() else {}
    return {
        "test_bleu_tokenized": test.get("bleu_tokenized"),
        "test_sacrebleu": test.get("sacrebleu"),
        "status": RunStatus.of(status).value,
        "update": status.get("update"),
        "reason": status.get("reason", ""),
        **best_and_final(rows),
        "epochs": rows[-1]["epoch"] if rows else 0,  # epochs trained (rows are per epoch or per validation)
        "updates": rows[-1].get("num_updates") if rows else None,
        "wall_seconds": rows[-1].get("wall_seconds") if rows else None,
    }


SWEEP_INDEX = "sweep.json"


def read_index(sweep_dir: Path) -> dict[str, Any]:
    """The one reader of sweep.json, as `prelnx sweep` saved it: its name ("" where it has none), runs ([{"name",
    "overrides"}]; none for a folder without sweep.json) and frozen claims; a Refusal for a file that is not that
    index."""
    index = sweep_dir / SWEEP_INDEX
    try:
        record = json.loads(index.read_text()) if index.is_file() else {}
        if record and not isinstance(record.get("runs"), list):
            raise KeyError("runs")
        record = {"name": "", "runs": [], **record}
        record["name"] = str(record["name"] or "")  # in its place: save_index writes the record back
        return record
    except (json.JSONDecodeError, KeyError, AttributeError, OSError, UnicodeDecodeError, TypeError) as error:
        raise Refusal(f"{index}: not the sweep index `prelnx sweep` writes ({type(error).__name__}); run the "
                         f"sweep again to rewrite it") from None  # fmt: skip


def override_keys(points: list[dict[str, Any]]) -> list[str]:
    """The keys a sweep's runs override (sweep.json's), each once, in the order they first appear: the columns of
    its summary and the keys its curves are labelled by."""
    return list(dict.fromkeys(key for point in points for key in point["overrides"]))


SUMMARY_LOCK = ".summary.lock"  # held while a sweep's summary and report are rewritten (two sweeps may share a folder)


def sweep_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per run of a sweep: its name and overrides, then its results (records only; nothing is written)."""
    points = read_index(sweep_dir)["runs"]
    keys = override_keys(points)
    return [{"run": point["name"], **{key: point["overrides"].get(key) for key in keys},
             **run_results(sweep_dir / point["name"])} for point in points]  # fmt: skip
