"""The premises that make a claim meaningful at a sweep's scale, checked on the same sweep's runs.

Each premise's statement and margin are in paper.yaml (the claim's `premise`). A premise is judged like a claim
(prelnx.report.stats): met when its 95 % interval is on its side, failed when on the other, unsettled when it
straddles; with one seed its point value decides (a premise is a check of the set-up, and a claim on one seed is
inconclusive anyway). What each premise compares:

- trains (Figure 2a, 2b): an arm's final valid nll (fairseq's unsmoothed loss; the valid loss when the run has no
  nll) lies at least `margin_bits` below the unigram plateau (prelnx.report.arms.unigram_plateau). A diverged
  seed did not train: it counts at the plateau.
- fails_or_worse (Figure 5a): Post-LN with warm-up at Pre-LN's lr diverges in every seed, or ends at least
  `margin_bits` worse than Post-LN with warm-up at its own lr.
"""

from __future__ import annotations

from typing import Any

from prelnx.report.arms import Arm, describe_arm, final_nll, loss_sample
from prelnx.report.outcome import Premise, PremiseState
from prelnx.report.stats import Comparison, Sample, Verdict, above, below, compare

_STATES = {Verdict.HOLDS: PremiseState.MET, Verdict.DOES_NOT_HOLD: PremiseState.FAILED}


def _state(comparison: Comparison) -> PremiseState:
    if comparison.one_seed:
        lo, hi = comparison.region
        return PremiseState.MET if lo < comparison.estimate < hi else PremiseState.FAILED
    return _STATES.get(comparison.verdict, PremiseState.UNSETTLED)


def trains(spec: dict[str, Any], group: list[Arm]) -> Premise:
    """The arm's final valid nll is clearly (spec's margin_bits) below the unigram plateau."""
    statement, margin = spec["statement"], float(spec["margin_bits"])
    plateaus = [a.plateau for a in group if a.plateau is not None]
    if not group:
        return Premise(statement, PremiseState.UNCHECKED, "the sweep has no runs of the arm it needs")
    if not plateaus:
        return Premise(statement, PremiseState.UNCHECKED,
                       "no unigram plateau: the target dictionary (data.path) is not on this machine")  # fmt: skip
    plateau = max(plateaus)
    values = tuple(nll - plateau if (nll := final_nll(a)) is not None else 0.0 for a in group)
    sample = Sample(describe_arm(group[0]), values, sum(a.diverged for a in group))
    comparison = compare("final valid nll minus the unigram plateau (bits)", sample, None, below(-margin))
    note = f"{describe_arm(group[0])}: final valid nll minus the unigram plateau ({plateau:.2f} bits)"
    return Premise(statement, _state(comparison), note, comparison)


def fails_or_worse(spec: dict[str, Any], at_larger: list[Arm], at_own: list[Arm], failure: float) -> Premise:
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
    if all(a.diverged for a in at_larger):
        note = f"{describe_arm(at_larger[0])}: all {len(at_larger)} seeds diverged"
        return Premise(statement, PremiseState.MET, note)
    comparison = compare("final valid loss difference (bits)", loss_sample(describe_arm(at_larger[0]), at_larger, failure),
                         loss_sample(describe_arm(at_own[0]), at_own, failure), above(margin))  # fmt: skip
    return Premise(statement, _state(comparison), "Post-LN with warm-up, this lr against its own", comparison)
