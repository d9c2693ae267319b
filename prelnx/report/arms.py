"""A sweep's runs as the claims see them: each run's arm (layout, optimizer, warm-up, lr, seed) and rows, its seeds
grouped, and per-seed samples of a loss with failed seeds counted as failures.

Run dirs are read only through the reader functions imported below (status.json, metrics.jsonl, sweep.json); the
config.yaml of each run says its arm. A seed that diverged is a failure: its loss is the sweep's `failure_loss`
(the unigram plateau - a model that learned nothing but word frequencies - or the worst final loss of a finished
run of the sweep, whichever is higher), so that it counts against its arm instead of being dropped. A seed that
diverged or whose final valid nll is not below the unigram plateau never trained (`trained`): an arm none of whose
seeds trained is dead, and two dead arms decide nothing (prelnx.report.stats).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# The run-dir readers (kept together: they move to prelnx/records/ with the lead's redesign).
from prelnx.config.load import config_from_dict
from prelnx.paper import methods_data
from prelnx.plan.data import data_dir
from prelnx.records.metrics import read_metrics
from prelnx.records.results import read_points, run_results

from prelnx.report.stats import Sample


@dataclass
class Arm:
    """One run: its arm's settings, seed, results (prelnx.sweep.summary.run_results) and metrics rows."""

    name: str
    layout: str
    optimizer: str
    warmup: int
    lr: float
    seed: int
    results: dict[str, Any]
    rows: list[dict[str, Any]]
    task: str = "translation"
    plateau: float | None = None  # unigram entropy of the target side, bits per token (None: dictionary not here)

    @property
    def status(self) -> str:
        return self.results.get("status", "pending")

    @property
    def diverged(self) -> bool:
        return self.status == "diverged"

    def final(self, key: str = "valid_loss") -> float | None:
        value = self.rows[-1].get(key) if self.rows else None
        return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def unigram_plateau(config: dict[str, Any]) -> float | None:
    """The entropy (bits) of the target dictionary's word counts: the loss of predicting word frequencies only.

    fairseq's dict.<target>.txt (dict.txt for masked_lm, language_model) holds one `word count` per line; the data folder is the
    one the run trained on (prelnx.plan.data.data_dir: data.path, or the synthetic task's cache folder). None when
    the folder or file is not on this machine."""
    data = config.get("data") or {}
    if data.get("path"):
        folder = Path(data["path"]).expanduser()  # a relative path is the working directory's, as for prelnx train
    else:
        try:
            folder = data_dir(config_from_dict(config, "config.yaml"))
        except ValueError:  # not a config this prelnx can read: no plateau rather than a guess
            return None
    monolingual = config.get("task") in ("masked_lm", "language_model")
    name = "dict.txt" if monolingual else f"dict.{data.get('target_lang') or 'tgt'}.txt"
    try:
        counts = [int(line.split()[1]) for line in (folder / name).read_text().splitlines() if len(line.split()) >= 2]
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    total = sum(counts)
    return -sum(c / total * math.log2(c / total) for c in counts if c > 0) if total else None


def optimizer_variant(optimizer: dict[str, Any]) -> str:
    """The optimizer as an arm tells it apart: `adam`, or `gi_adam` (second_moment_init: gradient, GI-Adam) and
    `adam_no_bias_correction`, so that runs differing only in these are never pooled as one arm."""
    name = optimizer["name"]
    if optimizer.get("second_moment_init", "zero") == "gradient":
        name = f"gi_{name}"
    if not optimizer.get("bias_correction", True):
        name = f"{name}_no_bias_correction"
    return name


def load_arms(sweep_dir: Path) -> list[Arm]:
    """Every run of the sweep with the paper's LayerNorm layouts (the norm variants are reported apart)."""
    names = [p["name"] for p in read_points(sweep_dir)] or sorted(
        d.name for d in sweep_dir.iterdir() if (d / "config.yaml").is_file()
    )
    arms = []
    for name in names:
        run_dir = sweep_dir / name
        if not (run_dir / "config.yaml").is_file():
            continue
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        model = config["model"]
        if model.get("norm", "layernorm") != "layernorm" or model.get("qk_norm", False):
            continue
        arms.append(Arm(
            name=name,
            layout=model["layout"],
            optimizer=optimizer_variant(config["optimizer"]),
            warmup=int(config["schedule"]["warmup_updates"]),
            lr=float(config["optimizer"]["lr"]),
            seed=int(config["train"]["seed"]),
            results=run_results(run_dir),
            rows=read_metrics(run_dir),
            task=config.get("task", "translation"),
            plateau=unigram_plateau(config),
        ))  # fmt: skip
    return arms


def pick(arms: list[Arm], **criteria: Any) -> list[Arm]:
    """The runs (every seed) of one arm: those matching every criterion that trained (finished or diverged)."""
    return [a for a in arms if all(getattr(a, k) == v for k, v in criteria.items())
            and a.status in ("finished", "diverged") and (a.rows or a.diverged)]  # fmt: skip


def plateau(arms: list[Arm]) -> float | None:
    values = [a.plateau for a in arms if a.plateau is not None]
    return max(values) if values else None


def failure_loss(arms: list[Arm]) -> float:
    """The loss a diverged seed counts at: the unigram plateau or the worst finished final loss, the higher."""
    finished = [loss for a in arms if a.status == "finished" and (loss := a.final()) is not None]
    candidates = finished + ([p] if (p := plateau(arms)) is not None else [])
    return max(candidates) if candidates else math.inf


def final_nll(arm: Arm) -> float | None:
    """The run's final valid nll (fairseq's unsmoothed loss; the valid loss when the run has no nll), None when it
    diverged or has no finite one."""
    if arm.diverged:
        return None
    value = arm.final("valid_nll_loss")
    return value if value is not None else arm.final("valid_loss")


def trained(arm: Arm, plateau: float | None) -> bool:
    """The seed ended with a finite valid nll below the unigram plateau (no plateau known: a finite one)."""
    nll = final_nll(arm)
    return nll is not None and (plateau is None or nll < plateau)


def loss_sample(label: str, group: list[Arm], failure: float, at_update: float | None = None) -> Sample:
    """Each seed's valid loss - the final one, or the last at or before `at_update` - with diverged seeds (and seeds
    without a finite loss there) at `failure`; `untrained` counts the seeds that never trained over their run."""
    values, failed = [], 0
    for arm in group:
        rows = [r for r in arm.rows if at_update is None or r.get("num_updates", 0) <= at_update]
        value = rows[-1].get("valid_loss") if rows else None
        finite = isinstance(value, (int, float)) and math.isfinite(value)
        if arm.diverged and (at_update is None or not finite):
            values.append(failure)
            failed += 1
        elif finite:
            values.append(float(value))
        else:
            values.append(failure)
            failed += 1
    floor = plateau(group)
    return Sample(label, tuple(values), failed, sum(not trained(arm, floor) for arm in group))


@functools.cache
def layout_names() -> dict[str, str]:
    """`post` -> `Post-LN`, `tfixup` -> `T-Fixup`: each layout's name as its authors write it (methods.yaml)."""
    return {method["layout"]: method["name"] for method in methods_data()}


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
