"""The warm-up-free benchmark (issue 24; docs/warmup_free.md) as typed values: the methods ranked by final valid loss
(failed seeds first, then the trained seeds' mean with its 95 % t interval) and by updates to a target loss (Post-LN
with its longest warm-up's mean at the same optimizer and lr), and each method's authors' claims (methods.yaml)
checked like the paper's, per optimizer and lr. "Converges faster" is ReZero's paper's measure: updates to a target
fixed in methods.yaml, a ratio tested against the paper's number. "Trains deeper" is never measured: one depth."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from prelnx.layouts import VARIANT, WARMUP_FREE, LayoutFileError, display_name, is_file_spec, layout, names
from prelnx.plots.diagnostics import save_figure
from prelnx.report.arms import (
    Arm,
    describe_arm,
    first_update_at,
    longest_warmup,
    loss_sample,
    matched,
    outcome_counts,
    outcome_sample,
    pick,
    seed_groups,
)
from prelnx.report.claims import comparator_trained, loss_case
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState
from prelnx.report.stats import Sample, below, compare, t_interval

METHOD_LAYOUTS = names(WARMUP_FREE) + names(VARIANT)  # any of them in a sweep: the report's section (prelnx.layouts)


@dataclass(frozen=True)
class RankRow:
    """One arm of the ranking: its seeds' final losses with their interval and its updates to the target loss."""

    layout: str
    method: str  # the method's display name (prelnx.layouts)
    optimizer: str
    warmup: int
    lr: float
    sample: Sample  # final valid loss per trained seed, the failed seeds counted
    low: float | None  # 95 % t interval of the mean; None with one seed
    high: float | None
    target: float | None  # Post-LN with warm-up's mean final valid loss at this optimizer and lr
    updates_to_target: tuple[int, ...] = ()  # one entry per seed that reached the target

    @property
    def reached(self) -> int:
        return len(self.updates_to_target)


@dataclass(frozen=True)
class MethodClaims:
    """A method's entry of methods.yaml and its claims' outcomes (keyed by claim id)."""

    spec: dict[str, Any]
    outcomes: dict[str, ClaimOutcome]


def has_methods(arms: list[Arm]) -> bool:
    """A later method among the translation arms, or a user's layout whose file declares claims."""
    return any(a.layout in METHOD_LAYOUTS and a.task == "translation" for a in arms) or bool(user_methods(arms))


def user_methods(arms: list[Arm], frozen: dict[str, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """The translation arms' user layouts whose files declare claims (and still load), as methods.yaml entries; with
    `frozen` (sweep.json's record, prelnx.records.frozen_claims) each file's claims as frozen at the sweep's start."""
    methods = []
    for value in dict.fromkeys(a.layout for a in arms if a.task == "translation" and is_file_spec(a.layout)):
        try:
            row = layout(value)
        except (KeyError, LayoutFileError):
            continue
        claims = row.claims if frozen is None else frozen.get(value, ())
        if claims:
            code = row.reference.repo if row.reference else value
            methods.append({"layout": value, "cite": row.display, "code": code,  # ids kept apart from methods.yaml's
                            "claims": [{**claim, "id": f"{value}#{claim['id']}"} for claim in claims]})
    return methods


def ranking(arms: list[Arm], task: str = "translation") -> list[RankRow]:
    """Every arm of the task that trained, ranked by its mean final valid loss (best first); each method by
    prelnx.layouts' display name."""
    rows = []
    for group in seed_groups(arms).values():
        group = pick(group)
        if not group or group[0].task != task:
            continue
        name, optimizer, warmup, lr = group[0].layout, group[0].optimizer, group[0].warmup, group[0].lr
        sample = loss_sample(describe_arm(group[0]), group)
        low, high = t_interval(sample)[1:] if sample.measured > 1 else (None, None)
        context = [a for a in arms if a.context == group[0].context]
        post = longest_warmup(context, layout="post", optimizer=optimizer, lr=lr)  # the target: its finished seeds' mean
        finals = [v for a in post if not a.diverged and (v := a.final()) is not None]
        target = sum(finals) / len(finals) if finals else None
        reached = () if target is None else tuple(u for a in group if (u := first_update_at(a, target)) is not None)
        rows.append(RankRow(name, display_name(name), optimizer, warmup, lr, sample, low, high, target, reached))
    return sorted(rows, key=lambda r: (r.sample.failure_share, r.sample.mean if r.sample.values else math.inf,
                                       r.layout, r.warmup, r.lr))  # fmt: skip


MARKERS = "osD^vP*X"  # one per lr


def plot_ranking(rows: list[RankRow], path: Path) -> Path:
    """The ranking's figure (PNG): one line per method (and optimizer, when a method ran with several: T-Fixup's Adam
    and RAdam), best arm first; one marker per arm, the lr's shape, filled with warm-up; bars: 95 % t intervals."""
    from matplotlib.figure import Figure  # the object API, no pyplot: a sweep reports from threads

    several = {r.method for r in rows if any(o.method == r.method and o.optimizer != r.optimizer for o in rows)}
    line = {id(r): f"{r.method} ({r.optimizer})" if r.method in several else r.method for r in rows}
    methods = list(dict.fromkeys(line[id(r)] for r in rows))  # rows are ranked: first appearance is the best arm
    lrs = sorted({r.lr for r in rows})
    arms = sorted({(r.warmup > 0, r.lr) for r in rows}, key=lambda k: (not k[0], k[1]))
    step = 0.6 / max(len(arms), 1)
    figure = Figure(figsize=(7.5, 0.55 * len(methods) + 1.6))
    ax = figure.subplots()
    for slot, (warmup, lr) in enumerate(arms):
        color = "tab:blue" if warmup else "tab:red"
        marker = MARKERS[lrs.index(lr) % len(MARKERS)]
        label = f"{'warm-up' if warmup else 'no warm-up'}, lr {lr:g}"
        for row in (r for r in rows if (r.warmup > 0, r.lr) == (warmup, lr)):
            y = methods.index(line[id(row)]) - 0.3 + step * (slot + 0.5)
            if row.low is not None:
                ax.errorbar(row.sample.mean, y, xerr=[[row.sample.mean - row.low], [row.high - row.sample.mean]],
                            fmt="none", ecolor=color, elinewidth=1, capsize=2)  # fmt: skip
            ax.plot(row.sample.mean, y, marker=marker, linestyle="none", markersize=6, color=color,
                    markerfacecolor=color if warmup else "white", label=label)  # fmt: skip
            label = None  # one legend entry per arm kind
    ax.set_yticks(range(len(methods)), methods)
    ax.invert_yaxis()  # the best method at the top
    ax.set_xlabel("final valid loss (bits per token), mean over seeds with its 95 % interval")
    ax.set_title("Warm-up-free methods, ranked by their best arm")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return save_figure(figure, path.parent, path.stem, ("png",))[0]  # by Agg; freed with its last reference


# The claims. Each check gets the sweep's arms, the method's layout and the claim's spec, and returns its outcome:
# one case per (optimizer, lr) at which both arms it compares ran.


def _per_setting(arms: list[Arm], layout: str, spec: dict[str, Any], arm_a: tuple[str, bool, str | None],
                 arm_b: tuple[str, bool, str | None], needs: str,
                 case: Callable[[str, list[Arm], list[Arm]], Case] | None = None) -> ClaimOutcome:  # fmt: skip
    """One case per (optimizer, lr) of the layout's at which both arms ran, each arm (layout, with warm-up: its
    longest, optimizer: None for the case's); `case(label, a, b)` (default: a's final valid loss minus b's below the
    margin, no premise)."""
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {needs}")
    for optimizer, lr in sorted({(a.optimizer, a.lr) for a in pick(arms, layout=layout)}):
        a, b = (longest_warmup(arms, layout=name, optimizer=other or optimizer, lr=lr) if warmup else
                pick(arms, layout=name, optimizer=other or optimizer, lr=lr, warmup=0)
                for name, warmup, other in (arm_a, arm_b))
        if a and b:
            label = f"{optimizer} lr {lr:g}"
            outcome.cases.append(case(label, a, b) if case else loss_case(label, a, b, below(spec["margin_bits"])))
    return outcome


def _named(layout: str) -> str:
    """A layout as a claim's line names it: a user's file by its display name (its path is this machine's)."""
    return display_name(layout) if is_file_spec(layout) else layout


def no_warmup(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, (layout, False, None), (layout, True, None),
                        f"{_named(layout)} both with and without warm-up at one lr")


def matches_postln(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    """Against Post-LN with warm-up at the same optimizer, or at the claim's `postln_optimizer` (the authors')."""
    warmup = spec.get("arm", "no_warmup") == "warmup"
    needs = f"{_named(layout)} {'with' if warmup else 'without'} warm-up and Post-LN with warm-up at one lr"
    return _per_setting(arms, layout, spec, (layout, warmup, None), ("post", True, spec.get("postln_optimizer")),
                        needs, lambda label, a, b: loss_case(label, a, b, below(spec["margin_bits"]),
                                                             comparator_trained(b)))  # "matches X": X trained


def beats_preln(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, (layout, True, None), ("pre", True, None),
                        f"{_named(layout)} and Pre-LN, both with warm-up, at one lr")


def validation_grain(arms: list[Arm]) -> int:
    """The largest gap between validations (the first one's update included): an update count's resolution."""
    updates = [[int(r.get("num_updates", 0)) for r in a.rows] for a in arms]
    gaps = [b - a for u in updates for a, b in pairwise(u)] + [u[0] for u in updates if u]
    return max(gaps, default=0)


def log_grain(update: float, grain: int) -> float:
    """The resolution of ln(updates) read on validations `grain` updates apart: a seed that reached the target at
    validation u did so in [max(1, u - grain + 1), u], so its log is known to ln(u / max(1, u - grain + 1))."""
    update = max(1.0, update)
    return math.log(update / max(1.0, update - grain + 1))


def log_updates_sample(label: str, group: list[Arm], target: float, grain: int) -> Sample:
    """ln(first validation update at or below `target`) per seed whose own curve reached it, whatever its outcome
    class (a seed that reached the target and then ended above the trained threshold, or diverged later, reached it);
    a seed whose curve never did is counted as not reaching it (diverged ones among them with their update); a seed
    with no validation row is missing. The grain is the widest log resolution of the seeds that reached it."""
    def reached(arm: Arm) -> tuple[float, int] | None:
        update = first_update_at(arm, target)
        return None if update is None else (math.log(max(1.0, update)), update)

    sample = outcome_sample(label, group, reached, failure="did not reach the target", by_curve=True)
    resolution = max((log_grain(round(math.exp(v)), grain) for v in sample.values), default=0.0)
    return dataclasses.replace(sample, grain=resolution, log=True)


def ratio_band(spec: dict[str, Any]) -> tuple[float, float]:
    """1 / `speedup` (the method's updates over the baseline's) within `margin_factor` either way, as logs."""
    ratio, factor = 1.0 / float(spec["speedup"]), float(spec["margin_factor"])
    return math.log(ratio / factor), math.log(ratio * factor)


def converges_faster(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    """ReZero's "56 % faster to 1.2 BPB": the method without warm-up's updates to methods.yaml's `target_loss_bits`
    over Post-LN with warm-up's (mean ln(updates), widened by log_grain) against 1 / `speedup` within `margin_factor`;
    premise: Post-LN with warm-up reaches the target (in no seed: not testable; in some: unsettled). A seed counts
    for what its curve did (log_updates_sample); its outcome class is a note beside it, never the reading."""
    target = float(spec["target_loss_bits"])
    metric = f"updates to valid loss {target:g} bits, ratio"
    classes = []

    def case(setting: str, method: list[Arm], post: list[Arm]) -> Case:
        grain = validation_grain(method + post)
        a = log_updates_sample(describe_arm(method[0]), method, target, grain)
        b = log_updates_sample(describe_arm(post[0]), post, target, grain)
        label = f"{setting}, updates to {target:g} bits (validations every {grain} updates)"
        state = PremiseState.FAILED if not b.measured else PremiseState.UNSETTLED if b.failed else PremiseState.MET
        premise = Premise(f"Post-LN with warm-up reaches the target valid loss ({target:g} bits)", state,
                          f"{b.measured}/{b.n} seeds reached it")  # fmt: skip
        classes.append("; ".join(f"{describe_arm(group[0])}: {outcome_counts([arm.outcome() for arm in group])}"
                                 for group in (method, post)))
        return Case(label, compare(metric, a, b, ratio_band(spec)), premise)

    outcome = _per_setting(arms, layout, spec, (layout, False, None), ("post", True, None),
                           f"{layout} without warm-up and Post-LN with warm-up at one lr", case)
    if outcome.cases:
        low, high = (math.exp(v) for v in ratio_band(spec))
        outcome.notes.append(f"the paper's ratio: 1/{float(spec['speedup']):g} = {1 / float(spec['speedup']):.2f} "
                             f"(\"{float(spec['speedup']) - 1:.0%} faster\"), claimed within a factor "
                             f"{float(spec['margin_factor']):g} of it: [{low:.2f}, {high:.2f}]")  # fmt: skip
    outcome.notes += [f"outcome class of the seeds, a separate column (a seed that reached the target reached it, "
                      f"whatever its final loss): {parts}" for parts in classes]
    return outcome


def trains_deeper(arms: list[Arm], layout: str, spec: dict[str, Any]) -> ClaimOutcome:
    return ClaimOutcome(spec["id"], missing="not measured: this report compares arms at one depth (the sweep's arms "
                        "are grouped by layout, warm-up and lr); depth is what the claim is about")  # fmt: skip


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any]], ClaimOutcome]] = {  # a kind: its check's name
    check.__name__: matched(check)  # each on matched arms only
    for check in (no_warmup, matches_postln, beats_preln, converges_faster, trains_deeper)
}


def check_methods(arms: list[Arm], methods: list[dict[str, Any]], task: str = "translation", key: str = "claims",
                  checks: dict[str, Callable[..., ClaimOutcome]] | None = None) -> list[MethodClaims]:  # fmt: skip
    """Each method of the sweep with claims (`key`: a placement's `lm_claims`, prelnx.report.placements) on its runs
    of `task`, as its spec (`claims`: them) and its claims' outcomes (methods.yaml order)."""
    runs = [a for a in arms if a.task == task]
    layouts, checks = {a.layout for a in runs}, checks or CHECKS
    return [MethodClaims({**m, "claims": m[key]}, {c["id"]: checks[c["kind"]](runs, m["layout"], c) for c in m[key]})
            for m in methods if m.get(key) and m["layout"] in layouts]  # fmt: skip
