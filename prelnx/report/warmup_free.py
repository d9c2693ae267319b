"""The warm-up-free benchmark (issue 24): the methods ranked by final valid loss and by updates to a target loss,
and each method's authors' claims (prelnx/methods.yaml) checked on the same sweep, as typed values.

The ranking: one row per arm (method x optimizer x warm-up x lr), its trained seeds' final valid losses (fairseq's,
bits per token; the seeds that failed counted beside them, never given a loss), their mean, sd and 95 % t interval
(prelnx.report.stats), ranked by the share of failed seeds, then the mean. The target loss, per optimizer and lr, is the mean final
valid loss of Post-LN with its longest warm-up over its finished seeds: each arm says how many of its seeds reached
it (k/n) and after how many updates (the first validation at or below it; validations are `eval.every_updates`
apart, so the count is that coarse). No Post-LN with warm-up at that optimizer and lr: no target.

The claims are checked like the paper's (prelnx.report.claims): per optimizer and lr, a difference of two arms'
final losses with Welch's 95 % interval against the claim's margin, one of five verdicts (methods.yaml says what
each kind compares). "Converges faster" is measured as ReZero's paper measures it: updates to a fixed target loss
stated in methods.yaml before the runs (not a loss of this sweep), per seed, with Post-LN with warm-up reaching the
target as its premise - and as a ratio (the method's updates over Post-LN's, on the log scale) tested against
the paper's number (1 / its speed-up) with methods.yaml's margin, not by its sign. "Trains deeper" is never
measured here: the report groups arms by layout, warm-up and lr, not by depth, and the benchmark trains one depth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import dataclasses

from prelnx.layouts import VARIANT, WARMUP_FREE, LayoutFileError, display_name, is_file_spec, layout, names
from prelnx.report.arms import Arm, describe_arm, loss_sample, outcome_sample, pick, seed_groups
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState, not_measured
from prelnx.report.stats import Sample, below, compare, t_interval

LOSS = "final valid loss (bits)"
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
    """Whether a sweep is a warm-up-free benchmark: any of the later methods among its translation arms, or a user's
    layout whose file declares claims."""
    return any(a.layout in METHOD_LAYOUTS and a.task == "translation" for a in arms) or bool(user_methods(arms))


def user_methods(arms: list[Arm]) -> list[dict[str, Any]]:
    """The user's layouts of the sweep's translation arms whose files declare claims (prelnx.layouts.CLAIM_KINDS), as
    methods.yaml entries: its display name cites it, its `reference` is its code. A file that no longer loads (an
    old sweep's) declares nothing."""
    methods = []
    for value in dict.fromkeys(a.layout for a in arms if a.task == "translation" and is_file_spec(a.layout)):
        try:
            row = layout(value)
        except (KeyError, LayoutFileError):
            continue
        if row.claims:
            code = row.reference.repo if row.reference else value
            methods.append({"layout": value, "cite": row.display, "code": code,  # ids kept apart from methods.yaml's
                            "claims": [{**claim, "id": f"{value}#{claim['id']}"} for claim in row.claims]})
    return methods


def method_names(methods: list[dict[str, Any]]) -> dict[str, str]:
    """Each method's layout -> its display name (prelnx.layouts, the one table of names)."""
    return {m["layout"]: display_name(m["layout"]) for m in methods}


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


def ranking(arms: list[Arm], names: dict[str, str], task: str = "translation") -> list[RankRow]:
    """Every arm of the task that trained, ranked by its mean final valid loss (best first)."""
    rows = []
    for (arm_task, layout, optimizer, warmup, lr), group in seed_groups(arms).items():
        group = pick(group)
        if arm_task != task or not group:
            continue
        sample = loss_sample(describe_arm(group[0]), group)
        low = high = None
        if sample.measured > 1:
            _, low, high = t_interval(sample)
        target = target_loss(arms, optimizer, lr)
        reached = () if target is None else tuple(u for a in group if (u := first_update_at(a, target)) is not None)
        rows.append(RankRow(layout, names.get(layout, layout), optimizer, warmup, lr, sample, low, high,
                            target, reached))  # fmt: skip
    def key(r: RankRow) -> tuple:
        share = r.sample.failed / max(1, r.sample.failed + r.sample.measured)
        return (share, r.sample.mean if r.sample.values else math.inf, r.layout, r.warmup, r.lr)

    return sorted(rows, key=key)


# The claims. Each check gets the sweep's arms, the method's layout, the claim's spec and the failure loss, and
# returns its outcome: one case per (optimizer, lr) at which both arms it compares trained.


def _case(label: str, a: list[Arm], b: list[Arm], region: tuple[float, float], failure: Any = None,
          at_update: float | None = None) -> Case:  # fmt: skip
    sample_a = loss_sample(describe_arm(a[0]), a, at_update=at_update)
    return Case(label, compare(LOSS, sample_a, loss_sample(describe_arm(b[0]), b), region))


def _per_setting(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any,
                 pair: Callable[[str, float], tuple[list[Arm], list[Arm]]], needs: str) -> ClaimOutcome:  # fmt: skip
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {needs}")
    for optimizer, lr in _settings(arms, layout):
        a, b = pair(optimizer, lr)
        if a and b:
            outcome.cases.append(_case(f"{optimizer} lr {lr:g}", a, b, below(spec["margin_bits"]), failure))
    return outcome


def _named(layout: str) -> str:
    """A layout as a claim's line names it: a user's file by its display name (its path is this machine's)."""
    return display_name(layout) if is_file_spec(layout) else layout


def _arm(arms: list[Arm], layout: str, optimizer: str, lr: float, warmup: bool) -> list[Arm]:
    if warmup:
        return with_warmup(arms, layout, optimizer, lr)
    return pick(arms, layout=layout, optimizer=optimizer, lr=lr, warmup=0)


def no_warmup(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any = None) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, False), _arm(arms, layout, o, lr, True)),
                        f"{_named(layout)} both with and without warm-up at one lr")  # fmt: skip


def matches_postln(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any = None) -> ClaimOutcome:
    """Against Post-LN with warm-up at the same optimizer, or at the claim's `postln_optimizer` (the baseline's
    optimizer as the authors compare, whichever optimizer the method's arm used)."""
    warmup = spec.get("arm", "no_warmup") == "warmup"
    needs = f"{_named(layout)} {'with' if warmup else 'without'} warm-up and Post-LN with warm-up at one lr"
    baseline = spec.get("postln_optimizer")
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, warmup), _arm(arms, "post", baseline or o, lr, True)),
                        needs)  # fmt: skip


def beats_preln(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any = None) -> ClaimOutcome:
    return _per_setting(arms, layout, spec, failure,
                        lambda o, lr: (_arm(arms, layout, o, lr, True), _arm(arms, "pre", o, lr, True)),
                        f"{_named(layout)} and Pre-LN, both with warm-up, at one lr")  # fmt: skip


def validation_grain(arms: list[Arm]) -> int:
    """The validation interval of these runs: the largest gap between validations (the first one's update
    included) - the resolution of any update count read from them."""
    updates = [[int(r.get("num_updates", 0)) for r in a.rows] for a in arms]
    gaps = [b - a for u in updates for a, b in zip(u, u[1:])] + [u[0] for u in updates if u]
    return max(gaps, default=0)


def updates_sample(label: str, group: list[Arm], target: float, grain: int) -> Sample:
    """Each trained seed's first validation update at or below `target`; a seed that never reached it, failed to
    train or diverged is counted as a failure (never given an update count it did not reach)."""
    reached = lambda arm: (u, u) if (u := first_update_at(arm, target)) is not None else None  # noqa: E731
    sample = outcome_sample(label, group, reached, failure="did not reach the target")
    return dataclasses.replace(sample, grain=float(grain))


def log_grain(update: float, grain: int) -> float:
    """The resolution of ln(updates) read on validations `grain` updates apart: the seed reached the target at an
    update in [max(1, u - grain + 1), u] (the validation before it was above), so its log is known to
    ln(u / max(1, u - grain + 1)) - large when u is a few validations in, ln(u) at the first."""
    update = max(1.0, update)
    return math.log(update / max(1.0, update - grain + 1))


def log_updates_sample(label: str, group: list[Arm], target: float, grain: int) -> Sample:
    """updates_sample on the log scale, for a ratio claim: ln(updates) per seed that reached the target, the others
    counted as failures; the grain is the widest log resolution among its seeds (log_grain)."""
    sample = updates_sample(label, group, target, grain)
    logs = tuple(math.log(max(1.0, u)) for u in sample.values)
    resolution = max((log_grain(u, grain) for u in sample.values), default=0.0)
    return dataclasses.replace(sample, values=logs, grain=resolution, log=True)


def ratio_band(spec: dict[str, Any]) -> tuple[float, float]:
    """methods.yaml's claimed ratio (1 / `speedup`: the method's updates over the baseline's) within a factor of
    `margin_factor` either way, as a region of the log ratio."""
    ratio, factor = 1.0 / float(spec["speedup"]), float(spec["margin_factor"])
    return math.log(ratio / factor), math.log(ratio * factor)


def converges_faster(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any = None) -> ClaimOutcome:
    """Updates to a fixed target loss (methods.yaml's `target_loss_bits`, stated before the runs), as ReZero's paper
    measures "56 % faster to 1.2 BPB": a ratio claim, the method without warm-up's updates over Post-LN with
    warm-up's, tested against the paper's number (1 / `speedup`) within `margin_factor` either way. Per seed the
    first validation at or below the target; the log ratio is the difference of the arms' mean ln(updates) with
    Welch's 95 % interval on the logs, widened by the log resolution of the validation grain (log_grain), through
    the one verdict path (prelnx.report.stats.compare: an arm with < 2 seeds that reached it decided by the failure
    counts or not at all, no spread never a verdict). Premise: Post-LN with warm-up reaches the target (in no seed:
    not testable; in some: a "does not hold" is only inconclusive)."""
    target = float(spec["target_loss_bits"])
    metric = f"updates to valid loss {target:g} bits, ratio"
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} without warm-up and "
                           "Post-LN with warm-up at one lr")  # fmt: skip
    for optimizer, lr in _settings(arms, layout):
        method, post = _arm(arms, layout, optimizer, lr, False), _arm(arms, "post", optimizer, lr, True)
        if not method or not post:
            continue
        grain = validation_grain(method + post)
        a = log_updates_sample(describe_arm(method[0]), method, target, grain)
        b = log_updates_sample(describe_arm(post[0]), post, target, grain)
        comparison = compare(metric, a, b, ratio_band(spec))
        label = f"{optimizer} lr {lr:g}, updates to {target:g} bits (validations every {grain} updates)"
        outcome.cases.append(Case(label, comparison, _reaches_target(b, target)))
    if outcome.cases:
        low, high = (math.exp(v) for v in ratio_band(spec))
        outcome.notes.append(f"the paper's ratio: 1/{float(spec['speedup']):g} = {1 / float(spec['speedup']):.2f} "
                             f"(\"{float(spec['speedup']) - 1:.0%} faster\"), claimed within a factor "
                             f"{float(spec['margin_factor']):g} of it: [{low:.2f}, {high:.2f}]")  # fmt: skip
    return outcome


def _reaches_target(post: Sample, target: float) -> Premise:
    statement = f"Post-LN with warm-up reaches the target valid loss ({target:g} bits)"
    note = f"{post.measured}/{post.n} seeds reached it"
    state = (PremiseState.FAILED if not post.measured else
             PremiseState.UNSETTLED if post.failed else PremiseState.MET)  # fmt: skip
    return Premise(statement, state, note)


def trains_deeper(arms: list[Arm], layout: str, spec: dict[str, Any], failure: Any = None) -> ClaimOutcome:
    return not_measured(spec["id"], "not measured: this report compares arms at one depth (the sweep's arms are "
                        "grouped by layout, warm-up and lr); depth is what the claim is about")  # fmt: skip


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any], Any], ClaimOutcome]] = {
    "no_warmup": no_warmup,
    "matches_postln": matches_postln,
    "beats_preln": beats_preln,
    "converges_faster": converges_faster,
    "trains_deeper": trains_deeper,
}


def check_methods(arms: list[Arm], methods: list[dict[str, Any]]) -> list[MethodClaims]:
    """Each method of the sweep with claims, its claims' outcomes (methods.yaml order)."""
    translation = [a for a in arms if a.task == "translation"]
    failure, layouts = None, {a.layout for a in translation}
    return [MethodClaims(m, {c["id"]: CHECKS[c["kind"]](translation, m["layout"], c, failure) for c in m["claims"]})
            for m in methods if m["claims"] and m["layout"] in layouts]  # fmt: skip
