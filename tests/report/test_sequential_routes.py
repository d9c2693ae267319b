"""`unreachable`, the futility half of a sequential look (prelnx.report.sequential): each side of a case - "holds",
"does not hold" - is out of reach only on its own route's statistic, and a case with no route to read is never out of
reach. The comparisons are `compare`'s own, from real seed values (no training)."""

from __future__ import annotations

from prelnx.report.outcome import Case, ClaimOutcome
from prelnx.report.sequential import case_verdicts, claim_state, unreachable
from prelnx.report.stats import Sample, Verdict, above, compare
from prelnx.sequential import ClaimState, SeedPlan

PLAN = SeedPlan((4, 6, 8))  # O'Brien-Fleming, futility 0.1: looks 0 and 1 may stop a side, the last never does
LOW = Sample("a", (0.0, 1.0, -1.0, 0.5))  # mean 0.125
HIGH = Sample("b", (1.5, 2.5, 0.5, 2.0))  # mean 1.625: 1.5 above LOW, se 0.60 on Welch's 6 df


def _case(a: Sample, b: Sample) -> Case:
    """The claim "mean(a) - mean(b) > 0" on four seeds per arm, none failed: the t interval is its only route."""
    comparison = compare("valid_loss", a, b, above(0.0))
    assert comparison.failures_p is None and comparison.se and comparison.df == 6.0  # the t route alone
    return Case("lr 1e-3", comparison)


def test_holds_out_of_reach_while_does_not_hold_is_still_reachable():
    """a 1.5 below b (t = -2.48): "holds" needs a +1.5 swing, its conditional power is ~0; "does not hold" is a
    trend already going its way. A swap of the t route's pair (inside <-> outside) answers (False, True)."""
    case = _case(LOW, HIGH)
    assert case_verdicts(ClaimOutcome("c", [case]), PLAN, 0) == [Verdict.INCONCLUSIVE]  # undecided at look 0
    assert unreachable(case, PLAN, 0) == (True, False)
    assert unreachable(case, PLAN, 1) == (True, False)
    assert unreachable(case, PLAN, 2) == (False, False)  # the last look: nothing is ever out of reach


def test_does_not_hold_out_of_reach_while_holds_is_still_reachable():
    """The mirror: a 1.5 above b, "holds" on its way, "does not hold" out of reach."""
    case = _case(HIGH, LOW)
    assert case_verdicts(ClaimOutcome("c", [case]), PLAN, 0) == [Verdict.INCONCLUSIVE]
    assert unreachable(case, PLAN, 0) == (False, True)
    assert unreachable(case, PLAN, 1) == (False, True)
    assert unreachable(case, PLAN, 2) == (False, False)


def test_a_case_with_no_route_is_never_out_of_reach_and_keeps_its_claim_open():
    """One seed per arm, none failed: no t interval (no se) and no failure counts - nothing to read, so neither side is
    out of reach (an empty `all` would call both unreachable, and the claim futile on no evidence at all)."""
    case = Case("lr 1e-3", compare("valid_loss", Sample("a", (0.0,)), Sample("b", (2.0,)), above(0.0)))
    assert case.comparison.se is None and case.comparison.failures_p is None  # no route
    assert case.verdict is Verdict.INCONCLUSIVE
    for look in range(len(PLAN.looks)):
        assert unreachable(case, PLAN, look) == (False, False), look
    assert claim_state(ClaimOutcome("c", [case]), PLAN, 0) == (ClaimState.OPEN, Verdict.INCONCLUSIVE)
