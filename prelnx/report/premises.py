"""The premises that make a claim meaningful at a sweep's scale, checked on the same sweep's runs.

Each premise's statement and margin are in paper.yaml (the claim's `premise`). A premise is judged like a claim
(prelnx.report.stats): met when its 95 % interval is on its side, failed when on the other, unsettled when it
straddles; with one seed its point value decides (a premise is a check of the set-up, and a claim on one seed is
inconclusive anyway). What each premise compares:

- trains (Figure 2a, 2b): the arm's seeds trained (prelnx.report.seeds: final valid nll at least the premise's
  `margin_bits` - paper.yaml's trained_margin_bits - below the unigram plateau): met when every seed trained,
  failed when none did, unsettled when some did; no plateau: not checked. The mean of final nll minus the plateau
  over the seeds that have one is shown beside the counts.
- fails_or_worse (Figure 5a): Post-LN with warm-up at Pre-LN's lr diverges in every seed, or ends at least
  `margin_bits` worse than Post-LN with warm-up at its own lr.
"""

from __future__ import annotations

from typing import Any

import statistics

from prelnx.report.arms import NO_PLATEAU, Arm, describe_arm, loss_sample
from prelnx.report.outcome import Premise, PremiseState
from prelnx.report.seeds import RunState
from prelnx.report.stats import Comparison, Verdict, above, compare

_STATES = {Verdict.HOLDS: PremiseState.MET, Verdict.DOES_NOT_HOLD: PremiseState.FAILED,
           Verdict.NOT_TESTABLE: PremiseState.UNCHECKED}


def _state(comparison: Comparison) -> PremiseState:
    if comparison.one_seed and comparison.verdict is not Verdict.NOT_TESTABLE and comparison.estimate == comparison.estimate:
        lo, hi = comparison.region
        return PremiseState.MET if lo < comparison.estimate < hi else PremiseState.FAILED
    return _STATES.get(comparison.verdict, PremiseState.UNSETTLED)


def trains(spec: dict[str, Any], group: list[Arm]) -> Premise:
    """Every seed of the arm trained (its final valid nll spec's margin_bits below the unigram plateau)."""
    statement, margin = spec["statement"], float(spec["margin_bits"])
    if not group:
        return Premise(statement, PremiseState.UNCHECKED, "the sweep has no runs of the arm it needs")
    outcomes = [a.outcome(margin) for a in group]
    if any(o.state is RunState.NOT_JUDGED for o in outcomes):
        return Premise(statement, PremiseState.UNCHECKED, NO_PLATEAU)
    plateaus = [a.plateau for a in group if a.plateau is not None]
    if not plateaus:  # every seed diverged (a plateau is needed only to judge a finished one)
        return Premise(statement, PremiseState.FAILED, f"{describe_arm(group[0])}: all {len(group)} seeds diverged")
    plateau = max(plateaus)
    judged = [o for o in outcomes if o.state is not RunState.NO_VALIDATION]
    ok = sum(o.state is RunState.TRAINED for o in judged)
    state = (PremiseState.UNCHECKED if not judged else PremiseState.MET if ok == len(judged)
             else PremiseState.FAILED if ok == 0 else PremiseState.UNSETTLED)  # fmt: skip
    gaps = [o.final_nll - plateau for o in judged if o.final_nll is not None]
    counts = "; ".join(f"{sum(o.state is s for o in outcomes)} {s.value}" for s in RunState
                       if any(o.state is s for o in outcomes))  # fmt: skip
    mean = f", final valid nll minus the plateau {statistics.fmean(gaps):+.2f} (mean of {len(gaps)})" if gaps else ""
    note = (f"{describe_arm(group[0])}: {len(group)} seed{'s' if len(group) != 1 else ''}: {counts} (trained: final "
            f"valid nll ≥ {margin:g} bit below the unigram plateau, {plateau:.2f} bits from {group[0].plateau_source or 'its data'}){mean}")  # fmt: skip
    return Premise(statement, state, note)


def fails_or_worse(spec: dict[str, Any], at_larger: list[Arm], at_own: list[Arm], failure: Any = None) -> Premise:
    """Post-LN with warm-up at the larger lr diverges in every seed, or ends margin_bits worse than at its own lr."""
    statement, margin = spec["statement"], float(spec["margin_bits"])
    if not at_own:
        return Premise(statement, PremiseState.UNCHECKED, "the sweep has no Post-LN with warm-up")
    if not at_larger:
        return Premise(statement, PremiseState.UNCHECKED, f"the sweep has no Post-LN with warm-up at this lr "
                       f"(its Post-LN runs are at lr {', '.join(sorted({f'{a.lr:g}' for a in at_own}))})")  # fmt: skip
    if at_larger[0].lr <= at_own[0].lr:
        return Premise(statement, PremiseState.FAILED, f"this lr is not above Post-LN's own ({at_own[0].lr:g}): "
                       "Post-LN with warm-up trains there by construction")  # fmt: skip
    if all(a.outcome().failed for a in at_larger):
        kinds = sorted({a.outcome().state.value for a in at_larger})
        note = f"{describe_arm(at_larger[0])}: all {len(at_larger)} seeds failed ({', '.join(kinds)})"
        return Premise(statement, PremiseState.MET, note)
    comparison = compare("final valid loss difference (bits)", loss_sample(describe_arm(at_larger[0]), at_larger),
                         loss_sample(describe_arm(at_own[0]), at_own), above(margin))  # fmt: skip
    return Premise(statement, _state(comparison), "Post-LN with warm-up, this lr against its own", comparison)
