"""The claims at a look of a sequential sweep (docs/sequential.md has the method): the engine's own outcome, each case
kept only where its evidence also clears the look's nominal level p_k (prelnx.sequential; every p_k is at most the
fixed design's 0.025, so a look's verdict is the engine's made stricter, never one it would not give), Holm's
step-down with each step's boundaries at alpha / (k - i) (Maurer & Bretz 2013, Stat. Biopharm. Res. 5:311), and the
non-binding futility rule. `decide_look` is the sweep's injected decider (sweep/looks.py's `Decider`): every claim at
one look, on that look's runs, with the arms each claim reads (those whose removal changes its outcome)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, NamedTuple

from scipy import stats as scipy_stats

from prelnx.paper import methods_data, paper_data
from prelnx.report.arms import Arm, load_arms
from prelnx.report.claims import paper_outcomes
from prelnx.report.outcome import Case, ClaimOutcome, combined
from prelnx.report.norm_claims import norm_claims
from prelnx.report.placements import TASK, method_claims
from prelnx.report.stats import ALPHA_ONE_SIDED, POWER, Comparison, Verdict
from prelnx.sequential import ALPHA, ClaimLook, ClaimState, SeedPlan, fixed_seeds, reachable, t_to_z
from prelnx.sweep.looks import read_state

DECIDED = (Verdict.HOLDS, Verdict.DOES_NOT_HOLD, Verdict.NOT_TESTABLE)


def at_level(c: Comparison, alpha: float) -> Verdict:
    """The comparison's verdict kept where it clears a one-sided `alpha` <= 0.025, else inconclusive."""
    if c.verdict not in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD):
        return c.verdict
    if c.failures_p is not None and c.failures_p <= ALPHA_ONE_SIDED:  # the failure counts decided (compare's exits)
        return c.verdict if c.failures_p <= alpha else Verdict.INCONCLUSIVE
    if c.se is None or c.df is None or not c.se:
        return Verdict.INCONCLUSIVE
    low, high = c.interval(1 - 2 * alpha)
    lo, hi = c.region
    kept = (lo < low and high < hi) if c.verdict is Verdict.HOLDS else (high <= lo or low >= hi)
    return c.verdict if kept else Verdict.INCONCLUSIVE


def case_verdicts(outcome: ClaimOutcome, plan: SeedPlan, look: int) -> list[Verdict]:
    """Each case at the look; "does not hold" by Holm's step-down with boundaries at alpha / (k - i)."""
    cases = [dataclasses.replace(case, comparison=dataclasses.replace(
        case.comparison, verdict=at_level(case.comparison, plan.nominal(look)))) for case in outcome.cases]  # fmt: skip
    verdicts = [case.verdict for case in cases]
    testable = [i for i, v in enumerate(verdicts) if v is not Verdict.NOT_TESTABLE]
    if len(testable) < 2:
        return verdicts
    ordered = sorted(testable, key=lambda i: cases[i].comparison.p_outside)
    for rank, i in enumerate(ordered):
        if cases[i].comparison.p_outside / 2 > plan.nominal(look, ALPHA / (len(ordered) - rank)):
            for j in ordered[rank:]:  # the step-down stops: no later case may be "does not hold"
                verdicts[j] = Verdict.INCONCLUSIVE if verdicts[j] is Verdict.DOES_NOT_HOLD else verdicts[j]
            break
    return verdicts


def unreachable(case: Case, plan: SeedPlan, look: int) -> tuple[bool, bool]:
    """(holds out of reach, does not hold out of reach) for one undecided case (prelnx.sequential.reachable): a side
    is out of reach only when it is on every route that can decide the case. A route's pair is the z (significance-
    level scale) of "holds" and of "does not hold" at this look: the trained seeds' t interval (Welch or one-sample)
    and the failure counts (Fisher), which decide first wherever a seed failed. No route: nothing to read. The
    counts' p is the leading side's, so their pair gives it to both sides (conservative: a route kept open keeps
    seeds coming, which futility may always do)."""
    c, routes = case.comparison, []
    if c.se and c.df:
        lo, hi, e, g = c.region[0], c.region[1], c.estimate, c.grain
        inside = min(e - g - lo, hi - e - g)
        outside = max(lo - e, e - hi) - g
        routes.append((t_to_z(inside / c.se, c.df), t_to_z(outside / c.se, c.df)))
    if c.failures_p is not None:
        z = float(scipy_stats.norm.isf(min(max(c.failures_p, 1e-300), 1.0)))
        routes.append((z, z))
    if not routes:
        return False, False
    return (all(not reachable(z[0], plan, look) for z in routes),
            all(not reachable(z[1], plan, look) for z in routes))  # fmt: skip


def claim_state(outcome: ClaimOutcome, plan: SeedPlan, look: int) -> tuple[ClaimState, Verdict]:
    verdicts = case_verdicts(outcome, plan, look)
    verdict = combined(verdicts) if verdicts else Verdict.NOT_MEASURED  # as ClaimOutcome.verdict
    if verdict is Verdict.NOT_MEASURED:
        return ClaimState.NOT_MEASURED, verdict
    if verdict in DECIDED:
        return ClaimState.DECIDED, verdict
    open_cases = [c for c, v in zip(outcome.cases, verdicts) if v is Verdict.INCONCLUSIVE]
    reach = [unreachable(case, plan, look) for case in open_cases]
    no_holds = any(h for h, _ in reach)  # every case must hold
    no_dnh = all(d for _, d in reach)  # one case not holding is enough
    return (ClaimState.FUTILE if reach and no_holds and no_dnh else ClaimState.OPEN), verdict


class Published(NamedTuple):
    """paper.yaml and methods.yaml's methods, read once for a look (not once per arm it leaves out)."""

    paper: dict[str, Any]
    methods: list[dict[str, Any]]


def published() -> Published:
    return Published(paper_data(), methods_data())


def all_outcomes(arms: list[Arm], claims: Published | None = None) -> dict[str, ClaimOutcome]:
    """Every claim the report decides from these runs: paper.yaml's, methods.yaml's (its `norm_variants` too, on a
    sweep with variant arms), each user layout file's. `claims`: as read for the look (None: read now)."""
    claims = claims or published()
    outcomes = paper_outcomes(arms, claims.paper)[1] | norm_claims(arms)[1]
    read = {"methods": claims.methods, "layout_files": None}  # the layout files: as they read now
    for found in method_claims(*([a for a in arms if a.task == task] for task in ("translation", TASK)), read):
        for method in found or []:  # a user layout file's claim ids carry their layout already
            outcomes.update({key if "#" in key else f"{method.spec['layout']}#{key}": value
                             for key, value in method.outcomes.items()})
    return outcomes


def _fingerprint(outcome: ClaimOutcome) -> tuple:
    """What a claim read: each case's comparison and its premise (an arm read only by a premise is read too)."""
    return tuple((c.label, c.comparison.verdict, c.comparison.estimate if not math.isnan(c.comparison.estimate)
                  else None, c.comparison.a, c.comparison.b, c.premise) for c in outcome.cases)  # fmt: skip


def decide_look(sweep_dir: Path, groups: dict[str, tuple[str, ...]], plan: SeedPlan, look: int) -> list[ClaimLook]:
    """The sweep's decider: each claim's state at this look, the arms it reads, the runs it was decided on."""
    wanted = {run: arm for arm, runs in groups.items() for run in runs}
    arms = [a for a in load_arms(sweep_dir) if a.name in wanted]
    claims = published()
    outcomes = all_outcomes(arms, claims)
    reads: dict[str, list[str]] = {claim: [] for claim in outcomes}
    for arm in groups:  # the arms a claim reads: removing one changes its outcome
        without = all_outcomes([a for a in arms if wanted[a.name] != arm], claims)
        for claim, outcome in outcomes.items():
            if claim not in without or _fingerprint(without[claim]) != _fingerprint(outcome):
                reads[claim].append(arm)
    decided = []
    for claim, outcome in outcomes.items():
        state, verdict = claim_state(outcome, plan, look)
        runs = sum(1 for a in arms if wanted[a.name] in reads[claim])
        decided.append(ClaimLook(claim, state, verdict.value, tuple(reads[claim]), runs, look))
    return decided


def how_decided(sweep_dir: Path) -> list[str]:
    """The report's lines for a sequential sweep (looks.json): each claim at the look that decided it, its runs, and
    what a fixed design with POWER (stats, 80 %) would have spent on its arms ([]: not a sequential sweep)."""
    state = read_state(sweep_dir)
    if state is None:
        return []
    plan = SeedPlan(state.looks, state.method)
    fixed = math.ceil(fixed_seeds(plan, POWER) - 1e-9)
    lines = [f"Seeds were added look by look ({', '.join(map(str, plan.looks))} seeds per arm, {plan.method} "
             f"spending; docs/sequential.md). A fixed design with the plan's {100 * POWER:.0f} % power: {fixed} "
             "seeds per arm.", ""]  # fmt: skip
    for claim in state.claims.values():
        where = f"look {claim.look + 1} of {len(plan.looks)} ({plan.looks[claim.look]} seeds per arm)"
        state = claim.state.value.removesuffix(" at the last look")  # "undecided at the last look": said by `where`
        lines.append(f"- {claim.claim}: {state} at {where}: {claim.verdict}, on {claim.runs} runs of "
                     f"{len(claim.arms)} arm(s); a fixed design: {fixed * len(claim.arms)} runs")  # fmt: skip
    return lines
