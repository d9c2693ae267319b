"""A claim's outcome as typed values: its premise, its cases (one comparison each, e.g. one per lr) and its verdict.
A failed premise makes its case not testable; an unchecked or unsettled one turns "does not hold" into inconclusive.
A claim holds if every testable case holds (intersection-union: no correction); "does not hold" is existential: each
such case must survive Holm's step-down over the testable ones of its context (`ClaimOutcome.judged`, p <= 0.05):
a case's verdict never moves with runs of another context."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

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
    family: str = ""  # its context (prelnx.report.arms.matched): Holm runs within one, so other contexts move no case

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
    """A case's verdict within its claim; `holm_p`: its Holm-adjusted p (None: one testable case)."""

    case: Case
    verdict: Verdict
    holm_p: float | None = None


@dataclass
class ClaimOutcome:
    claim_id: str
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what else was measured (e.g. Figure 5a's fraction of updates)
    missing: str = "the sweep has no runs for these arms"  # why, when there are no cases
    premises: list[Premise] = field(default_factory=list)  # checked with no case to test (a premise sweep)
    untestable: str = ""  # no case: a protocol's premise study decided none can be tested here (why); not testable

    def judged(self) -> list[Judged]:
        """Each case's verdict within the claim: Holm over the testable cases for "does not hold"."""
        judged = [Judged(case, case.verdict) for case in self.cases]
        for family in dict.fromkeys(case.family for case in self.cases):
            testable = [i for i, case in enumerate(self.cases)
                        if case.family == family and case.verdict is not Verdict.NOT_TESTABLE]  # fmt: skip
            if len(testable) < 2:
                continue
            for i, p in zip(testable, holm([self.cases[i].comparison.p_outside for i in testable])):
                case = self.cases[i]
                kept = case.verdict is not Verdict.DOES_NOT_HOLD or p <= 1 - LEVEL
                judged[i] = Judged(case, case.verdict if kept else Verdict.INCONCLUSIVE, p)
        return judged

    @property
    def verdict(self) -> Verdict:
        if not self.cases:
            return Verdict.NOT_TESTABLE if self.untestable else Verdict.NOT_MEASURED
        return combined([j.verdict for j in self.judged()])


def combined(verdicts: list[Verdict]) -> Verdict:
    """A claim's verdict from its cases': holds when every testable case holds, does not hold when one does not."""
    testable = [v for v in verdicts if v is not Verdict.NOT_TESTABLE]
    if not testable:
        return Verdict.NOT_TESTABLE
    if Verdict.DOES_NOT_HOLD in testable:
        return Verdict.DOES_NOT_HOLD
    return Verdict.HOLDS if all(v is Verdict.HOLDS for v in testable) else Verdict.INCONCLUSIVE


def check_claims(claims: list[dict[str, Any]], checks: dict[str, Any], evidence: Any) -> dict[str, ClaimOutcome]:
    """Each claim its check decides, from a sweep's arms or a gradient or theory summary (the one claim loop)."""
    return {claim["id"]: checks[claim["id"]](evidence, claim) for claim in claims if claim["id"] in checks}
