"""A sweep's runs as the claims see them: each run's arm (layout, optimizer, warm-up, lr, seed), rows and outcome
(prelnx.report.seeds: trained, failed to train, diverged, no validation row - computed once, one margin), its seeds
grouped, and per-seed samples of a loss in which a seed that failed is counted, never given a value.

Run dirs are read only through the reader functions imported below (status.json, metrics.jsonl, sweep.json, and
config.yaml through prelnx.records.run_config, the config validator's reading of it): each run's config says its
arm, and its data folder the unigram plateau (prelnx.report.plateau).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.config.schema import OptimizerConfig
from prelnx.layouts import DisplayNames
from prelnx.plan.data import data_dir

# The run-dir readers.
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import read_points, run_results
from prelnx.records.run_config import has_config, read_run_config
from prelnx.records.status import read_status
from prelnx.report.plateau import find_plateau, is_finite
from prelnx.report.samples import Sample
from prelnx.report.seeds import RunOutcome, RunState, final_nll_of, run_outcome

NO_PLATEAU = ("no unigram plateau: neither the target dictionary nor the binarized training set the runs trained "
              "on is readable here, so whether a run trained cannot be said")  # fmt: skip


@dataclass
class Arm:
    """One run: its arm's settings, seed, results (prelnx.records.results.run_results), metrics rows and plateau."""

    name: str
    layout: str
    optimizer: str
    warmup: int
    lr: float
    seed: int
    results: dict[str, Any]
    rows: list[dict[str, Any]]
    task: str = "translation"
    plateau: float | None = None  # unigram plateau, bits per token (None: no dictionary or data here)
    plateau_source: str = ""  # what it was computed from (prelnx.report.plateau)
    diverged_at: int | None = None  # status.json's divergence update

    @property
    def status(self) -> RunStatus:
        return RunStatus.of(self.results)

    @property
    def diverged(self) -> bool:
        return self.status is RunStatus.DIVERGED

    def final(self, key: str = "valid_loss") -> float | None:
        value = self.rows[-1].get(key) if self.rows else None
        return float(value) if is_finite(value) else None

    def outcome(self, margin: float | None = None) -> RunOutcome:
        """Trained / failed to train / diverged / no validation row (prelnx.report.seeds; margin: paper.yaml's)."""
        return run_outcome(self.status, self.rows, self.plateau, margin, self.diverged_at)


def optimizer_variant(optimizer: OptimizerConfig) -> str:
    """The optimizer as an arm tells it apart: `adam`, or `gi_adam` (second_moment_init: gradient, GI-Adam) and
    `adam_no_bias_correction`, so that runs differing only in these are never pooled as one arm."""
    name = optimizer.name
    if optimizer.second_moment_init == "gradient":
        name = f"gi_{name}"
    if not optimizer.bias_correction:
        name = f"{name}_no_bias_correction"
    return name


def _diverged_at(status: dict[str, Any]) -> int | None:
    """status.json's divergence update (`diverged_at`; the update it stopped at for older records)."""
    if status.get("status") != "diverged":
        return None
    value = status.get("diverged_at", status.get("update"))
    return int(value) if isinstance(value, int) else None


def load_arms(sweep_dir: Path) -> list[Arm]:
    """Every run of the sweep with the paper's LayerNorm layouts (the norm variants are reported apart)."""
    names = [p["name"] for p in read_points(sweep_dir)] or sorted(d.name for d in sweep_dir.iterdir() if has_config(d))
    arms = []
    for name in names:
        run_dir = sweep_dir / name
        if not has_config(run_dir):
            continue
        config = read_run_config(run_dir)
        if config.model.norm != "layernorm" or config.model.qk_norm:
            continue
        found = find_plateau(config, data_dir(config), sweep_dir)
        arms.append(Arm(
            name=name,
            layout=config.model.layout,
            optimizer=optimizer_variant(config.optimizer),
            warmup=int(config.schedule.warmup_updates),
            lr=float(config.optimizer.lr),
            seed=int(config.train.seed),
            results=run_results(run_dir),
            rows=read_metrics(run_dir),
            task=config.task,
            plateau=None if found is None else found.bits,
            plateau_source="" if found is None else found.source,
            diverged_at=_diverged_at(read_status(run_dir) or {}),
        ))  # fmt: skip
    return arms


def pick(arms: list[Arm], **criteria: Any) -> list[Arm]:
    """The runs (every seed) of one arm: those matching every criterion that finished or diverged - a finished run
    with no validation row included (it is counted and shown, never dropped)."""
    return [a for a in arms if all(getattr(a, k) == v for k, v in criteria.items()) and a.status.done]


def plateau(arms: list[Arm]) -> float | None:
    values = [a.plateau for a in arms if a.plateau is not None]
    return max(values) if values else None


def final_nll(arm: Arm) -> float | None:
    """The run's final valid nll (fairseq's unsmoothed loss; the valid loss when the run has no nll), None when it
    diverged or has no finite one."""
    return None if arm.diverged else final_nll_of(arm.rows)


def _updates(read: list[int]) -> str:
    if not read:
        return ""
    low, high = min(read), max(read)
    return f"update {low}" if low == high else f"updates {low}-{high}"


def outcome_sample(label: str, group: list[Arm], value: Any, margin: float | None = None,
                   failure: str = "failed to train") -> Sample:  # fmt: skip
    """Each seed of the arm by its outcome: a trained seed's `value(arm)` - (value, update read), None when the
    seed has none there (counted as a failure) - the failed and diverged seeds counted, the finished seeds with no
    validation row counted apart, nothing imputed. No plateau: the sample cannot be judged (`untestable`)."""
    values, read, failed, diverged, missing, at, untestable, unjudged = [], [], 0, 0, 0, [], "", 0
    for arm in group:
        outcome = arm.outcome(margin)
        if outcome.state is RunState.NOT_FINISHED:
            continue
        if outcome.state is RunState.NO_VALIDATION:
            missing += 1
        elif outcome.state is RunState.NOT_JUDGED:
            untestable, unjudged = NO_PLATEAU, unjudged + 1
        elif outcome.state is RunState.DIVERGED:
            failed, diverged = failed + 1, diverged + 1
            at += [outcome.update] if outcome.update is not None else []
        elif outcome.state is RunState.FAILED:
            failed += 1
        elif (got := value(arm)) is None:
            failed += 1
        else:
            values.append(float(got[0]))
            read.append(int(got[1]))
    return Sample(label, tuple(values), failed, diverged, missing, read=_updates(read), untestable=untestable,
                  diverged_at=tuple(sorted(at)), failure=failure, unjudged=unjudged)  # fmt: skip


def loss_at(arm: Arm, at_update: float | None) -> tuple[float, int] | None:
    """The seed's valid loss - the final one, or the last at or before `at_update` - and the update it was read at."""
    rows = [r for r in arm.rows if at_update is None or r.get("num_updates", 0) <= at_update]
    rows = [r for r in rows if is_finite(r.get("valid_loss"))]
    return (float(rows[-1]["valid_loss"]), int(rows[-1].get("num_updates", 0))) if rows else None


def loss_sample(label: str, group: list[Arm], at_update: float | None = None, margin: float | None = None) -> Sample:
    """The trained seeds' valid loss (final, or the last at or before `at_update`), the failed seeds counted: no
    seed is given a loss it did not reach."""
    return outcome_sample(label, group, lambda arm: loss_at(arm, at_update), margin)


def layout_names() -> DisplayNames:
    """`post` -> `Post-LN`, `tfixup` -> `T-Fixup`, a user's file -> its display name: each layout's name as its
    authors write it (prelnx.layouts, the one table)."""
    return DisplayNames()


def describe_arm(arm: Arm) -> str:
    """`Post-LN adam lr 0.001, 120 warm-up`: an arm's settings in words."""
    layout = layout_names().get(arm.layout, arm.layout)
    warmup = f"{arm.warmup} warm-up" if arm.warmup else "no warm-up"
    optimizer = "" if arm.task == "masked_lm" else f" {arm.optimizer}"
    return f"{layout}{optimizer} lr {arm.lr:g}, {warmup}"


def seed_groups(arms: list[Arm]) -> dict[tuple, list[Arm]]:
    """Runs grouped by arm (everything but the seed), in the sweep's order."""
    groups: dict[tuple, list[Arm]] = {}
    for arm in arms:
        groups.setdefault((arm.task, arm.layout, arm.optimizer, arm.warmup, arm.lr), []).append(arm)
    return groups
