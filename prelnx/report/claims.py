"""Checking the paper's training claims against a sweep's runs.

Each check picks the runs of the arms it compares (by layout, optimizer, warm-up and lr, read from each run's
config.yaml) and returns what it measured and whether the claim holds at this scale. Arms a sweep lacks make
the claim "not measured", never a guess. Losses are fairseq's valid loss in bits; a difference counts when it
exceeds MARGIN_BITS, so that seed noise does not decide a verdict.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from prelnx.records.metrics import read_metrics
from prelnx.records.results import read_points, run_results

MARGIN_BITS = 0.5


@dataclass
class Arm:
    name: str
    layout: str
    optimizer: str
    warmup: int
    lr: float
    seed: int
    results: dict[str, Any]
    rows: list[dict[str, Any]]
    task: str = "translation"


@dataclass
class Verdict:
    measured: str
    holds: str  # "holds" | "does not hold" | "not measured"


def load_arms(sweep_dir: Path) -> list[Arm]:
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
            continue  # the paper's claims are about its two LayerNorm layouts; variants are reported apart
        arms.append(Arm(
            name=name,
            layout=config["model"]["layout"],
            optimizer=config["optimizer"]["name"],
            warmup=int(config["schedule"]["warmup_updates"]),
            lr=float(config["optimizer"]["lr"]),
            seed=int(config["train"]["seed"]),
            results=run_results(run_dir),
            rows=read_metrics(run_dir),
            task=config.get("task", "translation"),
        ))  # fmt: skip
    return arms


def _pick(arms: list[Arm], **criteria: Any) -> list[Arm]:
    return [a for a in arms if all(getattr(a, k) == v for k, v in criteria.items()) and a.rows]


def _final_loss(group: list[Arm]) -> float:
    """Mean over seeds of the last epoch's valid loss; a diverged run counts as infinitely bad."""
    values = [a.rows[-1]["valid_loss"] if a.results["status"] != "diverged" else math.inf for a in group]
    return statistics.fmean(values) if all(math.isfinite(v) for v in values) else math.inf


def _bleu(group: list[Arm]) -> float:
    values = [a.results["best_valid_bleu"] or 0.0 for a in group]
    return statistics.fmean(values)


def _describe(label: str, group: list[Arm]) -> str:
    seeds = f", {len(group)} seeds" if len(group) > 1 else ""
    return f"{label}: valid loss {_final_loss(group):.2f}, best BLEU {_bleu(group):.1f}{seeds}"


def verdict(ok: bool) -> str:
    return "holds" if ok else "does not hold"


NOT_MEASURED = Verdict("the sweep has no runs for these arms", "not measured")


def postln_adam_needs_warmup(arms: list[Arm]) -> Verdict:
    lines, oks, lrs = [], [], []
    for lr in sorted({a.lr for a in arms}):
        without = _pick(arms, layout="post", optimizer="adam", warmup=0, lr=lr)
        warmups = sorted({a.warmup for a in _pick(arms, layout="post", optimizer="adam", lr=lr)} - {0})
        if not without or not warmups:
            continue
        with_ = _pick(arms, layout="post", optimizer="adam", warmup=warmups[-1], lr=lr)
        lines.append(f"lr {lr:g}: {_describe('no warm-up', without)}; {_describe(f'{warmups[-1]} warm-up', with_)}")
        oks.append(_final_loss(without) > _final_loss(with_) + MARGIN_BITS)
        lrs.append(lr)
    if not lines:
        return NOT_MEASURED
    if any(oks) and not all(oks):
        held = ", ".join(f"{lr:g}" for lr, ok in zip(lrs, oks) if ok)
        missed = ", ".join(f"{lr:g}" for lr, ok in zip(lrs, oks) if not ok)
        return Verdict("<br>".join(lines), f"partly: holds at lr {held}, not at lr {missed}")
    return Verdict("<br>".join(lines), verdict(all(oks)))


def short_warmup_large_lr(arms: list[Arm]) -> Verdict:
    warmups = sorted({a.warmup for a in _pick(arms, layout="post", optimizer="adam")} - {0})
    lrs = sorted({a.lr for a in _pick(arms, layout="post", optimizer="adam")})
    if len(warmups) < 2 or len(lrs) < 2:
        return NOT_MEASURED
    short = warmups[0]
    small, large = _pick(arms, layout="post", optimizer="adam", warmup=short, lr=lrs[0]), \
        _pick(arms, layout="post", optimizer="adam", warmup=short, lr=lrs[-1])  # fmt: skip
    if not small or not large:
        return NOT_MEASURED
    measured = f"{short} warm-up: {_describe(f'lr {lrs[0]:g}', small)}; {_describe(f'lr {lrs[-1]:g}', large)}"
    return Verdict(measured, verdict(_final_loss(large) > _final_loss(small) + MARGIN_BITS))


def postln_sgd_needs_warmup(arms: list[Arm]) -> Verdict:
    without = _pick(arms, layout="post", optimizer="sgd", warmup=0)
    warmups = sorted({a.warmup for a in _pick(arms, layout="post", optimizer="sgd")} - {0})
    if not without or not warmups:
        return NOT_MEASURED
    with_ = _pick(arms, layout="post", optimizer="sgd", warmup=warmups[-1])
    measured = f"{_describe('no warm-up', without)}; {_describe(f'{warmups[-1]} warm-up', with_)}"
    return Verdict(measured, verdict(_final_loss(without) > _final_loss(with_) + MARGIN_BITS))


def _best_postln_with_warmup(arms: list[Arm]) -> list[Arm]:
    candidates = [a for a in _pick(arms, layout="post", optimizer="adam") if a.warmup > 0]
    if not candidates:
        return []
    best = min(candidates, key=lambda a: _final_loss([a]))
    return _pick(arms, layout="post", optimizer="adam", warmup=best.warmup, lr=best.lr)


def preln_without_warmup_matches(arms: list[Arm]) -> Verdict:
    pre = _pick(arms, layout="pre", optimizer="adam", warmup=0)
    post = _best_postln_with_warmup(arms)
    if not pre or not post:
        return NOT_MEASURED
    pre_lr = max({a.lr for a in pre})
    pre = [a for a in pre if a.lr == pre_lr]
    measured = (f"{_describe(f'Pre-LN no warm-up lr {pre_lr:g}', pre)}; "
                f"{_describe(f'best Post-LN with warm-up ({post[0].warmup} updates, lr {post[0].lr:g})', post)}")  # fmt: skip
    return Verdict(measured, verdict(_final_loss(pre) <= _final_loss(post) + MARGIN_BITS))


def preln_converges_faster(arms: list[Arm]) -> Verdict:
    pre = _pick(arms, layout="pre", optimizer="adam", warmup=0)
    post = _best_postln_with_warmup(arms)
    if not pre or not post:
        return NOT_MEASURED
    target = _final_loss(post)
    reached = [next((row["epoch"] for row in a.rows if row.get("valid_loss", math.inf) <= target), None) for a in pre]
    last_epoch = max(row["epoch"] for a in post for row in a.rows)
    if any(epoch is None for epoch in reached):
        return Verdict(f"Pre-LN never reached Post-LN's final valid loss {target:.2f}", "does not hold")
    epoch = max(e for e in reached if e is not None)
    measured = f"Pre-LN reaches Post-LN-with-warm-up's final valid loss ({target:.2f}, epoch {last_epoch}) at epoch {epoch}"
    return Verdict(measured, verdict(epoch < last_epoch))


def layout_matters_more_than_optimizer(arms: list[Arm]) -> Verdict:
    adam, radam = _pick(arms, layout="pre", optimizer="adam", warmup=0), _pick(arms, layout="pre", optimizer="radam", warmup=0)
    post = _pick(arms, layout="post", optimizer="adam", warmup=0)
    if not adam or not radam or not post:
        return NOT_MEASURED
    lr = max({a.lr for a in radam})
    adam = [a for a in adam if a.lr == lr] or adam
    post = [a for a in post if a.lr == lr] or post
    optimizer_gap = abs(_final_loss(adam) - _final_loss([a for a in radam if a.lr == lr]))
    layout_gap = abs(_final_loss(post) - _final_loss(adam))
    measured = (f"Pre-LN Adam vs RAdam: {optimizer_gap:.2f} bits apart; Post-LN vs Pre-LN (Adam, no warm-up): "
                f"{layout_gap:.2f} bits apart")  # fmt: skip
    return Verdict(measured, verdict(optimizer_gap < layout_gap))


TRAINING_CHECKS: dict[str, Callable[[list[Arm]], Verdict]] = {
    "postln_adam_needs_warmup": postln_adam_needs_warmup,
    "short_warmup_large_lr": short_warmup_large_lr,
    "postln_sgd_needs_warmup": postln_sgd_needs_warmup,
    "preln_without_warmup_matches": preln_without_warmup_matches,
    "preln_converges_faster": preln_converges_faster,
    "layout_matters_more_than_optimizer": layout_matters_more_than_optimizer,
}
