"""Study A as a sequential sweep, simulated through the engine (scripts/bench_sequential.py's study scenario).

Study A (configs/sweeps/cpu_multi30k.yaml, docs/results/cpu_multi30k.md): 10 arms read by the six training claims of
prelnx/paper.yaml, several arms shared between claims (Post-LN Adam lr 1e-3 with 120 warm-up is the premise or the
comparator of four). Per arm, from its committed runs (read with the report's own `load_arms` and `Arm.outcome`):
the share of seeds that failed to train, and the mean and covariance of the trained seeds' valid loss at every
validation (an arm with < 2 trained seeds takes the covariance of the arm with the widest final spread). A simulated
seed fails with its arm's share (its rows: an observed failed seed's) or trains (its rows: an observed trained seed's,
the valid losses drawn from that normal), and becomes an `Arm` like a loaded run, so the claims are decided by the
engine's own checks (report/claims.py's TRAINING_CHECKS: premises, comparators, Holm, the read between validations),
then by report/sequential.py's `claim_state` at each look of the study's own plan (its spec's `seeds:`), and the
look-by-look rule is sweep/looks.py's: `merge` freezes a decided claim, `still_running` gives the next look's seeds
to the arms an open claim reads, and only to them. The claim -> arm map is the real decider's (`decide_look`) on the
study's first look (seeds 1-4 of every arm), fixed at the plan as in a sweep.

Against it, a fixed design with the same power per claim: each claim's smallest seeds per arm (the same for each of
its arms) whose fixed-design power - the engine's verdict on those seeds, simulated the same way - reaches the plan's
power for that claim (within 0.01); an arm shared by claims costs the most any of them needs, once. A claim's correct
verdict is the one the engine gives on 40 seeds per arm in at least 90 % of draws; a claim without one (its reads
disagree, or it sits at its margin) has no power to match, and the fixed design spends the plan's n_K on its arms.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from prelnx.paper import paper_data
from prelnx.report.arms import Arm, RunState, load_arms
from prelnx.report.claims import TRAINING_CHECKS
from prelnx.report.outcome import ClaimOutcome
from prelnx.report.sequential import claim_state, decide_look
from prelnx.report.stats import Verdict
from prelnx.sequential import ClaimLook, ClaimState, SeedPlan
from prelnx.sweep.looks import FROZEN, LookState, merge, still_running
from prelnx.sweep.seeds import parse_seeds

ROOT = Path(__file__).resolve().parents[1]
STUDY_RUNS = ROOT / "docs/results/cpu_multi30k/runs"
STUDY_SPEC = ROOT / "configs/sweeps/cpu_multi30k.yaml"
TRUTH_SEEDS, TRUTH_DRAWS, TRUTH_SHARE = 40, 200, 0.9  # a claim's correct verdict: the engine's on 40 seeds per arm
PROGRESS = 2000  # sweeps between progress lines (stderr)


@dataclass
class StudyArm:
    """One arm of the study as observed: a template run, its failure share, its trained seeds' valid losses."""

    name: str
    template: Arm  # a seed of it as loaded (its settings, context, plateau)
    share: float  # the share of its seeds that failed to train
    seeds: int  # how many it has
    trained_rows: list[dict] = field(default_factory=list)  # an observed trained seed's rows (the losses replaced)
    failed_rows: list[dict] = field(default_factory=list)  # an observed failed seed's rows
    mean: np.ndarray = field(default_factory=lambda: np.empty(0))  # valid loss at each validation, trained seeds
    factor: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))  # covariance = factor @ factor.T

    def draw(self, rng: np.random.Generator, seed: int) -> Arm:
        """One simulated seed of the arm, as a loaded run."""
        failed = rng.random() < self.share
        if failed:
            rows = self.failed_rows
        else:
            losses = self.mean + self.factor @ rng.standard_normal(self.factor.shape[1])
            rows = [{**row, "valid_loss": float(v)} for row, v in zip(self.trained_rows, losses)]
        return dataclasses.replace(self.template, name=f"{self.name}_seed-{seed}", seed=seed, rows=rows)


@dataclass
class Study:
    arms: dict[str, StudyArm]
    reads: dict[str, tuple[str, ...]]  # claim -> the arms it reads (the decider's map at the first look)
    specs: dict[str, dict]  # claim -> paper.yaml's entry
    plan: SeedPlan


def _factor(rows: list[list[float]]) -> np.ndarray:
    """A square root of the rows' sample covariance (possibly singular: a few seeds, many validations)."""
    u, s, _ = np.linalg.svd(np.cov(np.asarray(rows), rowvar=False))
    return u * np.sqrt(np.clip(s, 0, None))


def load_study(runs: Path = STUDY_RUNS, spec: Path = STUDY_SPEC) -> Study:
    """Study A's arms, claims and plan from its committed raw data and spec."""
    loaded = load_arms(runs)
    groups: dict[str, list[Arm]] = {}
    for arm in loaded:
        groups.setdefault(arm.name.rsplit("_seed-", 1)[0], []).append(arm)
    arms = {}
    for name, seeds in groups.items():
        trained = [a for a in seeds if a.outcome().state is RunState.TRAINED]
        failed = [a for a in seeds if a.outcome().state is not RunState.TRAINED]
        study_arm = StudyArm(name, seeds[0], len(failed) / len(seeds), len(seeds))
        if trained:
            study_arm.trained_rows = trained[0].rows
            study_arm.mean = np.mean([[r["valid_loss"] for r in a.rows] for a in trained], axis=0)
            if len(trained) >= 2:
                study_arm.factor = _factor([[r["valid_loss"] for r in a.rows] for a in trained])
        study_arm.failed_rows = failed[0].rows if failed else []
        arms[name] = study_arm
    widest = max((a for a in arms.values() if a.factor.size), key=lambda a: float(a.factor[-1] @ a.factor[-1]))
    for arm in arms.values():
        if arm.trained_rows and not arm.factor.size:
            arm.factor = widest.factor
    plan = parse_seeds(spec, yaml.safe_load(spec.read_text())["seeds"])
    first = {name: tuple(a.name for a in sorted(seeds, key=lambda a: a.seed)[: plan.looks[0]])
             for name, seeds in groups.items()}  # fmt: skip
    decided = decide_look(runs, first, plan, 0)
    reads = {c.claim: c.arms for c in decided if c.state is not ClaimState.NOT_MEASURED}
    specs = {c["id"]: c for c in paper_data()["training"] if c["id"] in reads}
    return Study(arms, reads, specs, plan)


def outcomes(study: Study, runs: list[Arm], claims: list[str]) -> dict[str, ClaimOutcome]:
    """The engine's outcome of each claim on these runs (as report/sequential.py's all_outcomes, for translation)."""
    return {claim: TRAINING_CHECKS[claim](runs, study.specs[claim]) for claim in claims}


def draw_all(study: Study, rng: np.random.Generator, n: int) -> dict[str, list[Arm]]:
    """n simulated seeds of every arm."""
    return {name: [study.arms[name].draw(rng, s) for s in range(1, n + 1)] for name in study.arms}


def sweep(study: Study, rng: np.random.Generator) -> tuple[dict[str, int], dict[str, ClaimLook]]:
    """One simulated sequential sweep: seeds per arm at its end, and each claim's final state."""
    plan = study.plan
    seeds = draw_all(study, rng, plan.looks[-1])
    have = dict.fromkeys(study.arms, 0)
    state = LookState(looks=plan.looks, method=plan.method)
    active = list(study.arms)
    for look, n in enumerate(plan.looks):
        have.update(dict.fromkeys(active, n))
        runs = [a for name in study.arms for a in seeds[name][: have[name]]]
        unfrozen = [c for c in study.reads if c not in state.claims or state.claims[c].state not in FROZEN]
        decided = []
        for claim, outcome in outcomes(study, runs, unfrozen).items():
            claim_state_, verdict = claim_state(outcome, plan, look)
            arms = study.reads[claim]
            decided.append(ClaimLook(claim, claim_state_, verdict.value, arms, sum(have[a] for a in arms), look))
        last = look == len(plan.looks) - 1
        merge(state, decided, look, last)
        state.running = still_running(state)
        if last or not state.running:
            break
        active = list(state.running)
    return have, state.claims


def flat(seeds: dict[str, list[Arm]]) -> list[Arm]:
    return [a for runs in seeds.values() for a in runs]


def truth(study: Study, rng: np.random.Generator) -> dict[str, Verdict | None]:
    """Each claim's correct verdict: the engine's on TRUTH_SEEDS seeds per arm in >= TRUTH_SHARE of draws, else None
    (no power is defined for it)."""
    counts = {claim: Counter() for claim in study.reads}
    for _ in range(TRUTH_DRAWS):
        for claim, outcome in outcomes(study, flat(draw_all(study, rng, TRUTH_SEEDS)), list(study.reads)).items():
            counts[claim][outcome.verdict] += 1
    found = {}
    for claim, count in counts.items():
        verdict, times = count.most_common(1)[0]
        decisive = verdict in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD) and times >= TRUTH_SHARE * TRUTH_DRAWS
        found[claim] = verdict if decisive else None
    return found


def fixed_seeds(study: Study, expected: dict[str, Verdict | None], power: dict[str, float], reps: int,
                rng: np.random.Generator) -> dict[str, int]:  # fmt: skip
    """Each claim's smallest seeds per arm whose fixed design reaches the plan's power (within 0.01); a claim with
    no correct verdict: the plan's n_K. Every arm is drawn (a claim's premise may read an arm its map does not name);
    the claims share the draws."""
    n_max = study.plan.looks[-1]
    found = {claim: n_max for claim, verdict in expected.items() if verdict is None}
    searching = [claim for claim, verdict in expected.items() if verdict is not None]
    for n in range(2, 3 * n_max + 1):
        if not searching:
            break
        hits = Counter()
        for _ in range(reps):
            for claim, outcome in outcomes(study, flat(draw_all(study, rng, n)), searching).items():
                hits[claim] += outcome.verdict is expected[claim]
        for claim in [c for c in searching if hits[c] >= (power[c] - 0.01) * reps]:
            found[claim] = n
            searching.remove(claim)
    return {**found, **dict.fromkeys(searching, 3 * n_max)}


@dataclass
class StudyResult:
    sweeps: int
    plan_runs: float  # mean runs of the sequential sweep
    arm_seeds: dict[str, float]  # mean seeds per arm at its end
    expected: dict[str, Verdict | None]
    power: dict[str, float]  # the plan's, per claim (nan: no correct verdict)
    stops: dict[str, Counter]  # claim -> (state, look) counts
    stop_seeds: dict[str, float]  # claim -> mean seeds per arm at the look it stopped
    fixed_n: dict[str, int]  # claim -> the fixed design's seeds per arm at the same power
    reads: dict[str, tuple[str, ...]]  # claim -> its arms

    @property
    def fixed_arm_seeds(self) -> dict[str, int]:
        """Each arm at the most any claim reading it needs (an arm shared by claims costs once)."""
        return {arm: max((n for claim, n in self.fixed_n.items() if arm in self.reads[claim]), default=0)
                for arm in self.arm_seeds}  # fmt: skip

    @property
    def fixed_runs(self) -> int:
        return sum(self.fixed_arm_seeds.values())

    @property
    def ratio(self) -> float:
        return self.plan_runs / self.fixed_runs


def simulate_study(study: Study, sweeps: int, seed: int, reps: int) -> StudyResult:
    """The plan over `sweeps` simulated sweeps, each claim's fixed design at the same power over `reps` draws per n."""
    rng = np.random.default_rng(seed)
    expected = truth(study, rng)
    runs, seeds_total = 0, Counter()
    hits, stops, stop_seeds = Counter(), {c: Counter() for c in study.reads}, Counter()
    for done in range(sweeps):
        if done and done % PROGRESS == 0:
            print(f"  ({done} sweeps: plan {runs / done:.2f} runs so far)", file=sys.stderr, flush=True)
        have, claims = sweep(study, rng)
        runs += sum(have.values())
        seeds_total.update(have)
        for claim, look in claims.items():
            hits[claim] += expected[claim] is not None and look.verdict == expected[claim].value
            stops[claim][(look.state.value, look.look + 1)] += 1
            stop_seeds[claim] += study.plan.looks[look.look]
    power = {c: hits[c] / sweeps if expected[c] is not None else float("nan") for c in study.reads}
    return StudyResult(sweeps, runs / sweeps, {a: seeds_total[a] / sweeps for a in study.arms}, expected, power,
                       stops, {c: stop_seeds[c] / sweeps for c in study.reads},
                       fixed_seeds(study, expected, power, reps, rng), study.reads)  # fmt: skip
