"""render.claims_table's verdict column (no sweep, no training): a claim's verdict is bold unless it was not measured,
and a verdict text given for a claim (the "Why warm-up" section passes its own) replaces the default one, bold even
when the claim has no measured case."""

from __future__ import annotations

from prelnx.report.outcome import ClaimOutcome
from prelnx.report.render import claims_table, verdict_text
from prelnx.report.stats import Verdict

CLAIM = {"id": "some_claim", "claim": "X trains where Y fails", "source": "Section 3", "paper": "-"}


def test_a_claim_not_measured_gets_the_default_verdict_not_bold():
    outcome = ClaimOutcome(CLAIM["id"])  # no case: not measured
    assert outcome.verdict is Verdict.NOT_MEASURED
    row = claims_table([CLAIM], {CLAIM["id"]: outcome})[-1]
    assert row.endswith(f"| {verdict_text(outcome)} |") and "**" not in row
    assert "| the sweep has no runs for these arms |" in row  # why, in the measured column


def test_a_given_verdict_replaces_the_default_one_and_is_bold_even_when_not_measured():
    outcome = ClaimOutcome(CLAIM["id"], missing="no run of these arms trained")
    assert outcome.verdict is Verdict.NOT_MEASURED
    given = "not testable (every seed of Post-LN failed)"
    row = claims_table([CLAIM], {CLAIM["id"]: outcome}, verdicts={CLAIM["id"]: given})[-1]
    assert row.endswith(f"| **{given}** |")
    assert verdict_text(outcome) not in row  # the default verdict ("not measured") is not printed instead
    assert "| no run of these arms trained |" in row


def test_each_claim_gets_its_own_given_verdict():
    other = {**CLAIM, "id": "other_claim", "claim": "Z does"}
    outcomes = {c["id"]: ClaimOutcome(c["id"]) for c in (CLAIM, other)}
    verdicts = {CLAIM["id"]: "holds (p = 0.010)", other["id"]: "inconclusive"}
    lines = claims_table([CLAIM, other], outcomes, verdicts=verdicts)
    assert len(lines) == 4
    assert lines[2].endswith("| **holds (p = 0.010)** |") and lines[3].endswith("| **inconclusive** |")
