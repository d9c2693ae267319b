"""A claim's outcome as typed values: its premise, its cases (one comparison each, e.g. one per lr) and its verdict.

How a premise weighs (prelnx.report.premises checks them): a failed premise makes the case "not testable at this
scale", with the measurement that shows why. A premise that could not be checked (no such arm in the sweep, no
dictionary for the unigram plateau) or whose interval straddles its bound leaves a "holds" standing but turns a
"does not hold" into "inconclusive": the premise is what makes a negative result say something about the paper.

A claim's verdict over its cases: not measured without cases; not testable when no case is testable; else does not
hold if a testable case does not hold, holds if every testable case holds, and inconclusive otherwise. With several
testable cases (several lrs, or a claim's two parts) the claim is their intersection: "holds" needs every case to
hold at 95 % (an intersection-union test: no correction), while "does not hold" - it fails in some case - is an
existential conclusion, so each case's "does not hold" must survive Holm's step-down correction over the testable
cases (`ClaimOutcome.judged`): the cases' p-values of "does not hold" (Comparison.p_outside) sorted, the i-th
smallest multiplied by (k - i), the running maximum taken - the adjusted p the report prints - and a case's "does
not hold" stands when its adjusted p is at most 0.05 (so the step-down stops at the first case that is not kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from prelnx.report.stats import LEVEL, Comparison, Verdict, holm


class PremiseState(str, Enum):
    MET = "met"
    FAILED = "failed"
    UNSETTLED = "unsettled"  # its interval straddles the bound
    UNCHECKED = "not checked"  # the sweep (or this machine) lacks what it needs


@dataclass(frozen=True)
class Premise:
    statement: str  # from paper.yaml
    state: PremiseState
    note: str  # what was compared, or why it could not be
    comparison: Comparison | None = None  # the measurement that decides it


@dataclass(frozen=True)
class Case:
    """One setting a claim is tested at (e.g. one lr): its comparison and its premise."""

    label: str
    comparison: Comparison
    premise: Premise | None = None

    @property
    def verdict(self) -> Verdict:
        verdict = self.comparison.verdict
        if self.premise is None or self.premise.state is PremiseState.MET:
            return verdict
        if self.premise.state is PremiseState.FAILED:
            return Verdict.NOT_TESTABLE
        return Verdict.INCONCLUSIVE if verdict is Verdict.DOES_NOT_HOLD else verdict


@dataclass(frozen=True)
class Judged:
    """A case's verdict within its claim: with several testable cases, a "does not hold" at 95 % that Holm's
    step-down does not keep is inconclusive. `holm_p`: its Holm-adjusted p (None: one testable case)."""

    case: Case
    verdict: Verdict
    holm_p: float | None = None

    @property
    def corrected(self) -> bool:
        """Its 95 % interval says "does not hold", the Holm-adjusted one does not."""
        return self.case.verdict is Verdict.DOES_NOT_HOLD and self.verdict is not Verdict.DOES_NOT_HOLD


@dataclass
class ClaimOutcome:
    claim_id: str
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what else was measured (e.g. Figure 5a's fraction of updates)
    missing: str = "the sweep has no runs for these arms"  # why, when there are no cases
    premises: list[Premise] = field(default_factory=list)  # checked with no case to test (a premise sweep)

    def judged(self) -> list[Judged]:
        """Each case's verdict within the claim: Holm over the testable cases for "does not hold"."""
        testable = [i for i, case in enumerate(self.cases) if case.verdict is not Verdict.NOT_TESTABLE]
        if len(testable) < 2:
            return [Judged(case, case.verdict) for case in self.cases]
        pvalues = [self.cases[i].comparison.p_outside for i in testable]
        corrected = dict(zip(testable, holm(pvalues)))
        judged = []
        for i, case in enumerate(self.cases):
            if i not in corrected:
                judged.append(Judged(case, case.verdict))
                continue
            p = corrected[i]
            kept = case.verdict is not Verdict.DOES_NOT_HOLD or p <= 1 - LEVEL
            judged.append(Judged(case, case.verdict if kept else Verdict.INCONCLUSIVE, p))
        return judged

    @property
    def verdict(self) -> Verdict:
        if not self.cases:
            return Verdict.NOT_MEASURED
        verdicts = [j.verdict for j in self.judged() if j.verdict is not Verdict.NOT_TESTABLE]
        if not verdicts:
            return Verdict.NOT_TESTABLE
        if Verdict.DOES_NOT_HOLD in verdicts:
            return Verdict.DOES_NOT_HOLD
        if all(v is Verdict.HOLDS for v in verdicts):
            return Verdict.HOLDS
        return Verdict.INCONCLUSIVE


def not_measured(claim_id: str, why: str = "the sweep has no runs for these arms") -> ClaimOutcome:
    return ClaimOutcome(claim_id, missing=why)
