"""The choices a protocol makes after its premise sweep, by code, from the rule it committed
(configs/sweeps/cpu_multi30k_sgd_premise2.yaml: sgd_lr; bert_scale: D2's rule of docs/protocols/paper_cpu.md).

Each reads the premise runs through prelnx.report.arms and returns a Choice (the rule in words, what it chose and
why, how the next stage's spec changes), saved as the stage's choice.json and shown in the report.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.paper import paper_data
from prelnx.records.outcome import RunStatus
from prelnx.report.arms import Arm, RunState, final_nll, load_arms, trained_margin
from prelnx.sweep.spec import SweepSpec

CHOICE_FILE = "choice.json"  # in the stage's folder: made once, kept for every later attempt


@dataclass
class Choice:
    rule: str
    outcome: str
    evidence: list[str] = field(default_factory=list)  # one line per premise run
    sgd_lr: float | None = None  # sgd_lr: the SGD grids' lr
    scale: dict[str, Any] | None = None  # bert_scale: the chosen scale's `set`, and the stage-2 grids
    grids: list[dict[str, list[Any]]] | None = None

    @property
    def chosen(self) -> bool:
        """The rule chose something (an lr, a scale); False: nothing met it, the committed spec is all there is."""
        return self.sgd_lr is not None or self.grids is not None

    def apply(self, spec: SweepSpec) -> SweepSpec:
        spec = copy.deepcopy(spec)
        if self.sgd_lr is not None:  # the SGD arms' lr: named arms, or an SGD grid's
            for overrides in spec.arms.values():
                if overrides.get("optimizer.name") == "sgd":
                    overrides["optimizer.lr"] = self.sgd_lr
            for grid in spec.grids:
                if grid.get("optimizer.name") == ["sgd"]:
                    grid["optimizer.lr"] = [self.sgd_lr]
        if self.grids is not None:
            spec.fixed.update(self.scale or {})
            spec.grids = self.grids
        return spec

    def save(self, folder: Path) -> None:
        write_text_atomic(folder / CHOICE_FILE, json.dumps(dataclasses.asdict(self), indent=2) + "\n")


def read_choice(folder: Path) -> Choice | None:
    """The stage's choice (None: not made yet)."""
    saved = folder / CHOICE_FILE
    return Choice(**json.loads(saved.read_text())) if saved.is_file() else None


def _claim(family: str, claim_id: str) -> dict[str, Any]:
    return next(claim for claim in paper_data()[family] if claim["id"] == claim_id)


def _line(arm: Arm) -> str:
    nll = final_nll(arm)
    plateau = f", plateau {arm.plateau:.2f}" if arm.plateau is not None else ""
    return f"{arm.name}: {arm.status}, final valid nll {nll:.2f}{plateau}" if nll is not None else f"{arm.name}: {arm.status}"


def sgd_lr(premise_dirs: list[Path]) -> Choice:
    """None meets Figure 2b's premise: the lowest final valid loss (the report then calls Figure 2b not testable)."""
    margin = float(_claim("training", "postln_sgd_needs_warmup")["premise"]["margin_bits"])
    rule = (f"the lr whose final valid loss is lowest among the runs that meet the premise (final valid nll at least "
            f"{margin:g} bit below the unigram plateau); if none does, the lowest final valid loss")  # fmt: skip
    arms = [a for folder in premise_dirs for a in load_arms(folder) if a.optimizer == "sgd"]
    finished = [a for a in arms if a.status == RunStatus.FINISHED and a.final() is not None]
    evidence = [_line(a) for a in arms]
    if not finished:
        return Choice(rule, "no premise run finished: the committed lr stays", evidence)
    meeting = [a for a in finished if a.outcome(margin).state is RunState.TRAINED]
    best = min(meeting or finished, key=lambda a: a.final())
    why = "meets the premise" if meeting else "no lr meets the premise: the lowest final valid loss"
    return Choice(rule, f"lr {best.lr:g} ({why}; final valid loss {best.final():.2f})", evidence, sgd_lr=best.lr)


def unchosen(folder: Path) -> str:
    """Why a stage whose rule may choose nothing (Stage.skip_unless_chosen) is not run: its choice.json chose nothing.
    "" when it chose, or when no choice is made yet."""
    choice = read_choice(folder)
    return "" if choice is None or choice.chosen else choice.outcome


def bert_scale(premise_dirs: list[Path], scales: list[dict[str, Any]], run_anyway: bool = True) -> Choice:
    """`scales`: each premise sweep's fixed settings (its `set`), in the order of `premise_dirs`. None qualifies:
    with `run_anyway` stage 2 keeps the committed grid (a smoke test), else it is not run; the report says which.
    The rule is the protocol's (docs/protocols/paper_cpu.md, 2026-12-05 02:40 UTC): (i) and (ii), nothing more."""
    margin = float(_claim("bert", "bert_preln_fewer_updates")["premise"]["margin_bits"])
    rule = (f"the widest scale, then the largest Pre-LN lr L, such that (i) Post-LN with warm-up at L diverges or "
            f"ends >= {margin:g} bit above Post-LN with warm-up at its best lr and (ii) Pre-LN without warm-up at L "
            f"trains (final valid nll at least {trained_margin():g} bit below the unigram plateau)")  # fmt: skip
    evidence: list[str] = []
    candidates = []
    for folder, fixed in zip(premise_dirs, scales):
        arms = load_arms(folder)
        evidence += [f"{folder.name}/{_line(a)}" for a in arms]
        post = [a for a in arms if a.layout == "post" and a.status == RunStatus.FINISHED and a.final() is not None]
        if not post:
            continue
        best_post = min(post, key=lambda a: a.final())
        for pre in sorted((a for a in arms if a.layout == "pre"), key=lambda a: -a.lr):
            at_l = [a for a in arms if a.layout == "post" and a.lr == pre.lr]
            fails = at_l and (at_l[0].diverged or (at_l[0].final() or 0) >= best_post.final() + margin)
            if fails and pre.outcome().state is RunState.TRAINED:
                candidates.append((int(fixed.get("model.embed_dim", 0)), pre.lr, folder, fixed, best_post, at_l[0]))
    if not candidates:
        then = ("stage 2 runs the committed grid, and Figure 5a's premise decides nothing here" if run_anyway else
                "stage 2 is not run, and Figure 5a's claim is not testable at this scale, with these runs (one seed "
                "per arm) as the evidence")  # fmt: skip
        return Choice(rule, f"no lr of any premise sweep qualifies: {then}", evidence)
    width, lr, folder, fixed, best_post, post_at_l = max(candidates, key=lambda c: (c[0], c[1]))
    seeds = [1, 2, 3]
    grids = [{"model.layout": ["post"], "optimizer.lr": [best_post.lr], "schedule.warmup_updates": [best_post.warmup], "train.seed": seeds},
             {"model.layout": ["pre"], "optimizer.lr": [lr], "schedule.warmup_updates": [0], "train.seed": seeds},
             {"model.layout": ["post"], "optimizer.lr": [lr], "schedule.warmup_updates": [post_at_l.warmup], "train.seed": [1]}]  # fmt: skip
    return Choice(rule, f"{folder.name}: lr {lr:g} (d {width})", evidence, scale=dict(fixed), grids=grids)
