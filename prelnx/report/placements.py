"""The norm placements on the decoder-only language model (issue 32): each placement's authors' claims
(prelnx/methods.yaml, a method's `lm_claims`) checked on a language-model sweep, as typed values.

Only what a sweep's valid losses and failed runs can decide is checked; a claim about hidden states or gradients
(variance growth with depth, uniform gradient norms, loss spikes) has kind `not_testable_here` and the report says
what would decide it. The kinds (methods.yaml's header says the same):
- beats_preln, matches_postln: as for the warm-up-free methods (prelnx.report.warmup_free): per lr, the method's
  final valid loss (bits per token, a failed seed at the sweep's failure loss) minus Pre-LN's (with warm-up), or
  minus Post-LN's with warm-up, with Welch's 95 % interval, below `margin_bits`.
- lr_sensitivity: per warm-up setting, each seed's |final loss at the largest lr - at the smallest lr| (the same
  seed number at both), the method's minus Pre-LN's, below `margin_bits`: less sensitive to the lr than Pre-LN.
- fewer_failures: every run of the layout in the sweep (each lr, warm-up and seed) scored 1 if it failed - diverged,
  or ended with its valid nll not `trained_margin_bits` below the unigram plateau (prelnx.report.arms.trained at a
  plateau lowered by that margin: a run that stalled just under the plateau did not train) - else 0; the method's
  share minus Pre-LN's, below `margin_share`. Premise: Pre-LN fails at least once (a claim of fewer failures than
  none is not testable here).
"""

from __future__ import annotations

from typing import Any, Callable

from prelnx.report.arms import Arm, describe_arm, failure_loss, loss_sample, pick, plateau, trained
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState, not_measured
from prelnx.report.stats import Sample, below, compare
from prelnx.report.warmup_free import CHECKS as METHOD_CHECKS
from prelnx.report.warmup_free import MethodClaims

TASK = "language_model"


def lm_arms(arms: list[Arm]) -> list[Arm]:
    return [a for a in arms if a.task == TASK]


def _lrs(arms: list[Arm], layout: str) -> list[float]:
    return sorted({a.lr for a in pick(arms, layout=layout)})


def _gaps(arms: list[Arm], layout: str, warmup: int, lrs: tuple[float, float], failure: float) -> Sample:
    """Per seed present at both lrs: |final loss at the larger lr - at the smaller| (a failed seed at `failure`)."""
    low, high = (pick(arms, layout=layout, warmup=warmup, lr=lr) for lr in lrs)
    by_seed = {a.seed: a for a in low}
    values, failed = [], 0
    for arm in sorted(high, key=lambda a: a.seed):
        if arm.seed not in by_seed:
            continue
        pair = [by_seed[arm.seed], arm]
        sample = loss_sample("", pair, failure)
        values.append(abs(sample.values[1] - sample.values[0]))
        failed += sample.failed > 0
    label = f"{describe_arm(high[0]).split(' lr ')[0]}, {warmup or 'no'} warm-up" if high else layout
    return Sample(f"{label}: loss gap between lr {lrs[0]:g} and {lrs[1]:g}", tuple(values), failed)


def lr_sensitivity(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    outcome = ClaimOutcome(spec["id"], missing=f"not measured: the sweep has no {layout} and Pre-LN at two lrs")
    lrs = [lr for lr in _lrs(arms, layout) if lr in _lrs(arms, "pre")]
    if len(lrs) < 2:
        return outcome
    pair = (lrs[0], lrs[-1])
    for warmup in sorted({a.warmup for a in pick(arms, layout=layout)}):
        method, pre = _gaps(arms, layout, warmup, pair, failure), _gaps(arms, "pre", warmup, pair, failure)
        if method.n and pre.n:
            metric = "absolute gap of final valid losses between the two lrs (bits)"
            label = f"{warmup or 'no'} warm-up, lr {pair[0]:g} vs {pair[1]:g}"
            outcome.cases.append(Case(label, compare(metric, method, pre, below(spec["margin_bits"]))))
    return outcome


def _failures(arms: list[Arm], layout: str, floor: float | None) -> Sample:
    runs = pick(arms, layout=layout)
    label = f"{describe_arm(runs[0]).split(' lr ')[0]}, every run" if runs else layout
    return Sample(label, tuple(0.0 if trained(a, floor) else 1.0 for a in runs))


def fewer_failures(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    floor = plateau(arms)
    floor = None if floor is None else floor - float(spec.get("trained_margin_bits", 0.0))
    method, pre = _failures(arms, layout, floor), _failures(arms, "pre", floor)
    if not method.n or not pre.n:
        return not_measured(spec["id"], f"not measured: the sweep has no {layout} or no Pre-LN runs")
    failed = sum(pre.values)
    state = PremiseState.MET if failed else PremiseState.FAILED
    premise = Premise("Pre-LN fails in at least one run of the sweep", state,
                      f"Pre-LN failed {failed:.0f}/{pre.n} runs; {layout} {sum(method.values):.0f}/{method.n}")  # fmt: skip
    comparison = compare("share of failed runs", method, pre, below(spec["margin_share"]))
    return ClaimOutcome(spec["id"], [Case("every lr, warm-up and seed", comparison, premise)])


def not_testable_here(arms: list[Arm], layout: str, spec: dict[str, Any], failure: float) -> ClaimOutcome:
    return not_measured(spec["id"], f"not testable from this sweep (valid losses and failures only): {spec['decided_by']}")


CHECKS: dict[str, Callable[[list[Arm], str, dict[str, Any], float], ClaimOutcome]] = {
    "beats_preln": METHOD_CHECKS["beats_preln"],
    "matches_postln": METHOD_CHECKS["matches_postln"],
    "no_warmup": METHOD_CHECKS["no_warmup"],
    "lr_sensitivity": lr_sensitivity,
    "fewer_failures": fewer_failures,
    "not_testable_here": not_testable_here,
}


def check_placements(arms: list[Arm], methods: list[dict[str, Any]]) -> list[MethodClaims]:
    """Each method with `lm_claims` whose layout the sweep's language-model runs have: its claims' outcomes, the
    method's spec with `claims` set to them (methods.yaml order)."""
    lm = lm_arms(arms)
    failure, layouts = failure_loss(lm), {a.layout for a in lm}
    return [MethodClaims({**m, "claims": m["lm_claims"]},
                         {c["id"]: CHECKS[c["kind"]](lm, m["layout"], c, failure) for c in m["lm_claims"]})
            for m in methods if m.get("lm_claims") and m["layout"] in layouts]  # fmt: skip


PLACEMENTS_INTRO = [
    "Each norm placement's authors' claims (prelnx/methods.yaml, `lm_claims`, with the paper and code) checked on",
    "this language-model sweep like the paper's: per lr (or per warm-up setting), the two arms' per-seed values,",
    "their difference with its 95 % interval against the claim's margin, one of the five verdicts. Only what final",
    "valid losses and failed runs decide is checked; a claim about hidden states, gradients or loss spikes is listed",
    "with what would decide it. Then every arm ranked by its mean final valid loss.",
]


def placements_section(arms: list[Arm], figures_dir: Any, report_dir: Any) -> list[str]:
    """The report's section for a language-model sweep (none: no section)."""
    from prelnx.paper import methods_data
    from prelnx.report.render import method_claims_table, ranking_table
    from prelnx.report.warmup_free import method_names, ranking

    lm = lm_arms(arms)
    if not lm:
        return []
    methods = methods_data()
    rows = ranking(lm, method_names(methods), task=TASK)
    return ["## Norm placements on the language model", "", *PLACEMENTS_INTRO, "",
            "### The placements' authors' claims", "", *method_claims_table(check_placements(lm, methods)), "",
            "### Ranking by final valid loss", "", *ranking_table(rows), ""]  # fmt: skip
