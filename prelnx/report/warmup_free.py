"""The warm-up-free benchmark (issue 24): the methods ranked by final valid loss and by updates to a target loss,
and each method's authors' claims (prelnx/methods.yaml) checked on the same sweep, as typed values.

The ranking: one row per arm (method x optimizer x warm-up x lr), its seeds' final valid losses (fairseq's, bits
per token) with a diverged seed at the sweep's failure loss (prelnx.report.arms.failure_loss), their mean, sd and
95 % t interval (prelnx.report.stats), ranked by the mean. The target loss, per optimizer and lr, is the mean final
valid loss of Post-LN with its longest warm-up over its finished seeds: each arm says how many of its seeds reached
it (k/n) and after how many updates (the first validation at or below it; validations are `eval.every_updates`
apart, so the count is that coarse). No Post-LN with warm-up at that optimizer and lr: no target.

The claims are checked like the paper's (prelnx.report.claims): per optimizer and lr, a difference of two arms'
final losses with Welch's 95 % interval against the claim's margin, one of five verdicts (methods.yaml says what
each kind compares). "Trains deeper" is never measured here: the report groups arms by layout, warm-up and lr,
not by depth, and the benchmark trains one depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from prelnx.report.arms import Arm, describe_arm, failure_loss, loss_sample, pick, seed_groups
from prelnx.report.outcome import Case, ClaimOutcome, not_measured
from prelnx.report.stats import Sample, below, compare, t_interval

LOSS = "final valid loss (bits)"
METHOD_LAYOUTS = ("admin", "tfixup", "rezero", "rezero_postln", "b2t", "deepnorm")  # any of them in a sweep: the report's section


@dataclass(frozen=True)
class RankRow:
    """One arm of the ranking: its seeds' final losses with their interval and its updates to the target loss."""

    layout: str
    method: str  # the method's name (methods.yaml)
    optimizer: str
    warmup: int
    lr: float
    sample: Sample  # final valid loss per seed, a diverged seed at the failure loss
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
    """Whether a sweep is a warm-up-free benchmark: any of the later methods among its translation arms."""
    return any(a.layout in METHOD_LAYOUTS and a.task == "translation" for a in arms)


def method_names(methods: list[dict[str, Any]]) -> dict[str, str]:
    return {m["layout"]: m["name"] for m in methods}


def _settings(arms: list[Arm], layout: str) -> list[tuple[str, float]]:
    """The (optimizer, lr) pairs the layout trained at, in order."""
    return sorted({(a.optimizer, a.lr) for a in pick(arms, layout=layout)})


def with_warmup(arms: list[Arm], layout: str, optimizer: str, lr: float) -> list[Arm]:
    """The layout's seeds with its longest warm-up at this optimizer and lr (none: [])."""
    warmups = sorted({a.warmup for a in pick(arms, layout=layout, optimizer=optimizer, lr=lr)} - {0})
    return pick(arms, layout=layout, optimizer=optimizer, lr=lr, warmup=warmups[-1]) if warmups else []


def target_loss(arms: list[Arm], optimizer: str, lr: float) -> float | None:
    """Post-LN with warm-up's mean final valid loss over its finished seeds (None: no such arm, or all diverged)."""
    finals = [v for a in with_warmup(arms, "post", optimizer, lr) if not a.diverged and (v := a.final()) is not None]
    return sum(finals) / len(finals) if finals else None


def first_update_at(arm: Arm, target: float) -> int | None:
    """The first validation's update at which the seed's valid loss is at or below the target."""
    for row in arm.rows:
        value = row.get("valid_loss")
        if isinstance(value, (int, float)) and math.isfinite(value) and value <= target:
            return int(row.get("num_updates", 0))
    return None


def ranking(arms: list[Arm], names: dict[str, str]) -> list[RankRow]:
    """Every translation arm that trained, ranked by its mean final valid loss (best first)."""
    failure = failure_loss(arms)
    rows = []
    for (task, layout, optimizer, warmup, lr), group in seed_groups(arms).items():
        group = pick(group)
        if task != "translation" or not group:
            continue
        sample = loss_sample(describe_arm(group[0]), group, failure)
        low = high = None
        if sample.n > 1:
            _, low, high = t_interval(sample)
        target = target_loss(arms, optimizer, lr)
        reached = () if target is None else tuple(u for a in group if (u := first_update_at(a, target)) is not None)
        rows.append(RankRow(layout, names.get(layout, layout), optimizer, warmup, lr, sample, low, high,
                            target, reached))  # fmt: skip
    return sorted(rows, key=lambda r: (r.sample.mean, r.layout, r.warmup, r.lr))


# The claims. Each check gets the sweep's arms, the method's layout, the claim's spec and the failure loss, and
# returns its outcome: one case per (optimizer, lr) at which both arms it compares trained.


def _case(label: str, a: list[Arm], b: list[Arm], region: tuple[float, float], failure: float,
          at_update: float | None = None) -> Case:  # fmt: skip
    sample_a = loss_sample(describe_arm(a[0]), a, failure, at_update)
    return Case(label, compare(LOSS, sample_a, loss_sample(describe_arm(b[0]), b, failure), region))


def _per_setting(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float,
                 pair: Callable[[str, float], tuple[list[Arm], list[Arm]]], needs: str) -> ClaimOutcome:  # fmt: skip
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {needs}")
    for optimizer, lr in _settings(arms, layout):
        a, b = pair(optimizer, lr)
        if a and b:
            outcome.cases.append(_case(f"{optimizer} lr {lr:g}", a, b, below(spec["margin_bits"]), failure))
    return outcome


def _arm(arms: list[Arm], layout: str, optimizer: str, lr: float, warmup: bool) -> list[Arm]:
    if warmup:
        return with_warmup(arms, layout, optimizer, lr)
    return pick(arms, layout=layout, optimizer=optimizer, lr=lr, warmup=0)


def no_warmup(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, False), _arm(arms, layout, o, lr, True)),
                        f"{layout} both with and without warm-up at one lr")  # fmt: skip


def matches_postln(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    warmup = spec.get("arm", "no_warmup") == "warmup"
    needs = f"{layout} {'with' if warmup else 'without'} warm-up and Post-LN with warm-up at one lr"
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, warmup), _arm(arms, "post", o, lr, True)), needs)


def beats_preln(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, True), _arm(arms, "pre", o, lr, True)),
                        f"{layout} and Pre-LN, both with warm-up, at one lr")  # fmt: skip


def converges_faster(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    """The method without warm-up at `fraction` of Post-LN-with-warm-up's updates against Post-LN's final loss."""
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} without warm-up and "
                           "Post-LN with warm-up at one lr")  # fmt: skip
    for optimizer, lr in _settings(arms, layout):
        method, post = _arm(arms, layout, optimizer, lr, False), _arm(arms, "post", optimizer, lr, True)
        updates = [int(a.rows[-1]["num_updates"]) for a in post if a.rows]
        if method and updates:
            at = spec["fraction"] * max(updates)
            share = f"{spec['fraction']:.0%} of Post-LN's {max(updates)}"
            label = f"{optimizer} lr {lr:g}: at update ≤ {at:.0f} ({share})"
            outcome.cases.append(_case(label, method, post, below(spec["margin_bits"]), failure, at_update=at))
    return outcome


def trains_deeper(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    return not_measured(spec["id"], "not measured: this report compares arms at one depth (the sweep's arms are "
                        "grouped by layout, warm-up and lr); depth is what the claim is about")  # fmt: skip


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any], float], ClaimOutcome]] = {
    "no_warmup": no_warmup,
    "matches_postln": matches_postln,
    "beats_preln": beats_preln,
    "converges_faster": converges_faster,
    "trains_deeper": trains_deeper,
}


def check_methods(arms: list[Arm], methods: list[dict[str, Any]]) -> list[MethodClaims]:
    """Each method of the sweep with claims, its claims' outcomes (methods.yaml order)."""
    translation = [a for a in arms if a.task == "translation"]
    failure, layouts = failure_loss(translation), {a.layout for a in translation}
    return [MethodClaims(m, {c["id"]: CHECKS[c["kind"]](translation, m["layout"], c, failure) for c in m["claims"]})
            for m in methods if m["claims"] and m["layout"] in layouts]  # fmt: skip
