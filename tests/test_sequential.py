"""The sequential boundaries against published tables, and the plan's rules (prelnx/sequential.py)."""

from __future__ import annotations

import pytest
from scipy import optimize

from prelnx.sequential import (
    SeedPlan,
    boundaries,
    conditional_power,
    crossing_probabilities,
    fixed_seeds,
    problems,
    reachable,
)

FIVE = tuple(k / 5 for k in range(1, 6))
THREE = (1 / 3, 2 / 3, 1.0)


# gsDesign (R, Anderson; sfLDOF, test.type = 1, alpha = 0.025, equal looks): the upper bounds its vignettes print;
# ldbounds (Casper & Perez) gives the same for the symmetric two-sided 0.05 design.
@pytest.mark.parametrize(("fractions", "published"), [
    (THREE, (3.7103, 2.5114, 1.9930)),
    (FIVE, (4.8769, 3.3569, 2.6803, 2.2898, 2.0310)),
])
def test_lan_demets_obrien_fleming_matches_gsdesign(fractions, published):
    assert boundaries(fractions) == pytest.approx(published, abs=2e-4)


def test_spending_is_spent_exactly_under_the_null():
    bounds = boundaries((0.5, 0.75, 1.0))
    assert sum(crossing_probabilities((0.5, 0.75, 1.0), bounds)) == pytest.approx(0.025, abs=1e-6)
    # the first look spends alpha(0.5) only: a plan's nominal levels are each below 0.025
    assert all(SeedPlan((4, 6, 8)).nominal(k) < 0.025 for k in range(3))


def test_the_integration_reproduces_jennison_and_turnbull_constants():
    """Classical (not spending) designs, Jennison & Turnbull (2000) Tables 2.1 and 2.3, K = 5, two-sided 0.05
    (one-sided 0.025): Pocock's constant C_P = 2.413, O'Brien & Fleming's C_B = 2.040 (bounds C_B sqrt(K/k)).
    Each root is bracketed within 0.02 of the published constant and found to 1e-5 (each integration: milliseconds):
    a root outside its bracket fails brentq (f(a) and f(b) of one sign), one inside it is checked to 1e-3 below."""
    pocock = optimize.brentq(lambda c: sum(crossing_probabilities(FIVE, (c,) * 5)) - 0.025, 2.393, 2.433, xtol=1e-5)
    obf = optimize.brentq(lambda c: sum(crossing_probabilities(FIVE, tuple(c * (5 / k) ** 0.5 for k in range(1, 6))))
                          - 0.025, 2.020, 2.060, xtol=1e-5)  # fmt: skip
    assert pocock == pytest.approx(2.413, abs=1e-3)
    assert obf == pytest.approx(2.040, abs=1e-3)


def test_power_of_a_fixed_design_is_recovered():
    """One look with drift z_.975 + z_.9 has power 0.9: the drift is applied where the boundary is read."""
    drift = 1.959964 + 1.281552
    assert crossing_probabilities((1.0,), (1.959964,), drift)[0] == pytest.approx(0.9, abs=1e-4)
    # three spending looks at the same maximum information lose a little power, never more than 1 %
    assert sum(crossing_probabilities(THREE, boundaries(THREE), drift)) == pytest.approx(0.896, abs=3e-3)


def test_a_fixed_plan_is_the_fixed_design():
    plan = SeedPlan((5,))
    assert not plan.sequential and plan.nominal(0) == 0.025 and plan.seeds_at(0) == (1, 2, 3, 4, 5)


def test_conditional_power_and_futility():
    assert conditional_power(0.0, 0.5, 1.96) < 0.01
    assert conditional_power(2.5, 0.5, 1.96) > 0.9
    plan = SeedPlan((4, 6, 8))
    assert not reachable(0.1, plan, 0)  # an estimate at the margin after half the seeds
    assert reachable(1.8, plan, 0)
    assert reachable(0.0, plan, 2)  # the last look decides or leaves it inconclusive, never "futile"
    assert reachable(0.0, SeedPlan((4, 6, 8), futility=0.0), 0)


@pytest.mark.parametrize(("plan", "fragment"), [
    (SeedPlan((4, 4)), "must increase"),
    (SeedPlan((1, 4)), "integer >= 2"),
    (SeedPlan((4, 6), method="haybittle"), "allowed: obrien-fleming, pocock"),
    (SeedPlan((4, 6), futility=1.5), "futility"),
    (SeedPlan((2, 3), seeds=(1, 2)), "the last look needs 3"),
])
def test_bad_plans_name_their_key(plan, fragment):
    assert any(fragment in problem for problem in problems(plan))


def test_the_fixed_design_of_the_same_power():
    """A fixed design of the plan's power needs slightly fewer seeds than its last look: the inflation factor
    n_K / n_fixed of O'Brien-Fleming-type spending is a few per cent, Pocock's larger (Jennison & Turnbull
    section 2.6); a fixed plan is its own."""
    obf = 8 / fixed_seeds(SeedPlan((4, 6, 8)), 0.8)
    pocock = 8 / fixed_seeds(SeedPlan((4, 6, 8), "pocock"), 0.8)
    assert 1.0 < obf < 1.05 < pocock < 1.3
    assert fixed_seeds(SeedPlan((5,))) == 5
