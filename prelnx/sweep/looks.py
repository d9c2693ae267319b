"""A sequential sweep, look by look (docs/sequential.md, "The loop"): the claims are decided by the injected `Decider`
(the report's engine, which lives above this layer: commands/sweep.py passes it). Each claim's state and the arms still
running with the claims that keep them are written to looks.json after every step, so `prelnx status` shows the look
and a resumed sweep (a kill at any look, mid-look included) replays the looks from its records: the runs that finished
are skipped, each look is decided again on that look's runs only, and what looks.json froze stays frozen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prelnx.atomic import write_text_atomic
from prelnx.console import counted
from prelnx.sequential import ClaimLook, ClaimState, SeedPlan, most_runs
from prelnx.sweep.seeds import seed_run_name
from prelnx.sweep.spec import SweepPoint, SweepSpec, arm_runs

LOOKS_FILE = "looks.json"
FROZEN = (ClaimState.DECIDED, ClaimState.FUTILE)

# sweep dir, arm name -> the run names it has at this look, the plan, the look (0-based) -> every claim the sweep's
# arms make, at this look (it must read only the runs named)
log = logging.getLogger(__name__)
Decider = Callable[[Path, dict[str, tuple[str, ...]], SeedPlan, int], list[ClaimLook]]


@dataclass
class LookState:
    """looks.json: where the sweep stands."""

    look: int = 0  # the current look (0-based)
    looks: tuple[int, ...] = ()  # the plan's seeds per arm
    method: str = "obrien-fleming"  # the plan's spending function
    claims: dict[str, ClaimLook] = field(default_factory=dict)  # each claim's latest (or frozen) state
    running: dict[str, list[str]] = field(default_factory=dict)  # arm -> the open claims that give it this look's seeds
    done: bool = False

    def to_json(self) -> str:
        data = asdict(self)
        data["claims"] = {c: {**asdict(v), "state": v.state.value} for c, v in self.claims.items()}
        return json.dumps(data, indent=2) + "\n"


def read_state(sweep_dir: Path) -> LookState | None:
    path = sweep_dir / LOOKS_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    claims = {c: ClaimLook(v["claim"], ClaimState(v["state"]), v["verdict"], tuple(v["arms"]), v["runs"], v["look"])
              for c, v in data["claims"].items()}  # fmt: skip
    return LookState(data["look"], tuple(data["looks"]), data["method"], claims, data["running"], data["done"])


def merge(state: LookState, decided: list[ClaimLook], look: int, last: bool, earlier: LookState | None = None) -> None:
    """This look's decisions into the state: a frozen claim keeps its verdict (one a former attempt froze at this
    look or before included); the claim -> arms map of the first look stays; an open claim at the last look is
    undecided there."""
    for claim in decided:
        before = state.claims.get(claim.claim)
        if before is not None and before.state in FROZEN:
            continue
        kept = earlier.claims.get(claim.claim) if earlier is not None else None
        if kept is not None and kept.state in FROZEN and kept.look <= look:
            state.claims[claim.claim] = kept
            continue
        if look == 0 and claim.state is ClaimState.NOT_MEASURED:
            continue  # not a claim of this sweep's arms
        if before is None and look > 0:
            continue  # the map is fixed at the plan: a claim that appears later is not this sweep's
        arms = before.arms if before is not None else claim.arms
        state_ = ClaimState.LAST if last and claim.state is ClaimState.OPEN else claim.state
        state.claims[claim.claim] = ClaimLook(claim.claim, state_, claim.verdict, arms, claim.runs, look)


def still_running(state: LookState) -> dict[str, list[str]]:
    """Arm -> the open claims that read it."""
    running: dict[str, list[str]] = {}
    for claim in state.claims.values():
        if claim.state is ClaimState.OPEN:
            for arm in claim.arms:
                running.setdefault(arm, []).append(claim.claim)
    return running


def run_looks(spec: SweepSpec, sweep_dir: Path, arms: list[SweepPoint], plan: SeedPlan, decide: Decider,
              run_points: Callable[[list[SweepPoint]], None],
              register: Callable[[list[SweepPoint]], None]) -> LookState:  # fmt: skip
    """Run the plan look by look; `register` records the runs scheduled so far (the sweep's index), `run_points`
    trains runs (finished ones are skipped by the executor)."""
    earlier = read_state(sweep_dir)  # a former attempt's: what it froze stays frozen at its look
    state = LookState(looks=plan.looks, method=plan.method)
    active = [arm.name for arm in arms]
    scheduled: list[SweepPoint] = []
    runs_of = {arm.name: {seed_run_name(arm.name, seed) for seed in plan.order} for arm in arms}  # an arm's run names
    for look in range(len(plan.looks)):
        added = plan.seeds_at(look)[len(plan.seeds_at(look - 1)) if look else 0 :]  # the seeds this look adds
        points = arm_runs(spec, [arm for arm in arms if arm.name in active], added)
        scheduled += points
        register(scheduled)
        state.look, state.running = look, {arm: state.running.get(arm, []) for arm in active}
        write_text_atomic(sweep_dir / LOOKS_FILE, state.to_json())
        log.info(f"look {look + 1} of {len(plan.looks)} ({counted(plan.looks[look], 'seed')} per arm): "
                 f"{len(points)} new run(s) "
                 f"for {len(active)} arm(s)")  # fmt: skip
        run_points(points)
        groups = {arm: tuple(p.name for p in scheduled if p.name in names) for arm, names in runs_of.items()}
        last = look == len(plan.looks) - 1
        merge(state, decide(sweep_dir, groups, plan, look), look, last, earlier)
        for claim in state.claims.values():
            if claim.look == look:
                log.info(f"look {look + 1}: {claim.claim}: {claim.state.value} "
                         f"({claim.verdict}, {counted(claim.runs, 'run')})")
        state.running = still_running(state)
        if last or not state.running:
            break
        active = list(state.running)
    state.done = True
    write_text_atomic(sweep_dir / LOOKS_FILE, state.to_json())
    log.info(f"sequential sweep {spec.name}: {counted(len(scheduled), 'run')} of at most {most_runs(plan, len(arms))} "
             f"({counted(len(arms), 'arm')} x {counted(plan.looks[-1], 'seed')})")  # fmt: skip
    return state


def plan_lines(spec: SweepSpec, arms: list[SweepPoint], plan: SeedPlan) -> list[str]:
    """`--dry-run` of an armed spec: the looks, the first look's runs, the most the plan can cost."""
    first = arm_runs(spec, arms, plan.seeds_at(0))
    kind = (f"sequential, {counted(len(plan.looks), 'look')} at {', '.join(map(str, plan.looks))} seeds per arm "
            f"({plan.method} spending, futility below {plan.futility:g} conditional power)") if plan.sequential else \
        f"fixed, seeds {', '.join(map(str, plan.order))}"  # fmt: skip
    lines = [f"sweep {spec.name}: {counted(len(arms), 'arm')}; seeds: {kind}"]
    lines += [f"  arm {arm.name}: " + (", ".join(f"{k}={v}" for k, v in arm.overrides.items()) or "the base")
              for arm in arms]  # fmt: skip
    if plan.sequential:
        lines += [f"  look {k + 1}: {counted(n, 'seed')} per arm, nominal one-sided level {plan.nominal(k):.4f} per side"
                  for k, n in enumerate(plan.looks)]  # fmt: skip
    lines.append(f"first look: {counted(len(first), 'run')}: {', '.join(p.name for p in first)}")
    lines.append(f"at most: {counted(most_runs(plan, len(arms)), 'run')} "
                 f"({counted(len(arms), 'arm')} x {counted(plan.looks[-1], 'seed')})")
    return lines


def look_lines(sweep_dir: Path) -> list[str]:
    """`prelnx status` of a sequential sweep: the look, each claim's state and why each arm is still running."""
    state = read_state(sweep_dir)
    if state is None:
        return []
    where = "ended" if state.done else "not ended"
    lines = [f"look {state.look + 1} of {len(state.looks)} ({counted(state.looks[state.look], 'seed')} per arm), "
             f"{where}"]
    lines += [f"  claim {c.claim}: {c.state.value} at look {c.look + 1} ({c.verdict}; {counted(c.runs, 'run')})"
              for c in state.claims.values()]  # fmt: skip
    lines += [f"  arm {arm}: seeds added for {', '.join(claims)}" for arm, claims in state.running.items() if claims]
    return lines
