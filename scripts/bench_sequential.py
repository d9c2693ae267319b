"""The proof of issue 47's sequential seed policy, by simulation through the engine's own decision code.

    python scripts/bench_sequential.py                 # 20,000 sweeps per scenario (minutes per scenario on a core)
    python scripts/bench_sequential.py --sweeps 2000   # a smaller run (a smoke test cannot tell 2.5 % from 5 %)

Per-seed values are drawn from known distributions (each seed fails with the scenario's share, else has a normal
value), built into the engine's arm objects (report/stats.py's `Sample`: failed seeds counted, never valued; a
grain'd quantity rounded to its grain) and decided from there on by the engine: `compare` / `compare_counts`, a
claim's `Case` and `ClaimOutcome`, and report/sequential.py's `claim_state` at each look of the plan. Printed:

1. Under a null at the claim's margin, for each claim kind (Welch against a margin with failure shares 0, 0.3 and
   0.6; Fisher's failure counts; a log ratio read on a grain), the rate of a wrong "holds" and of a wrong "does not
   hold": the plan's (<= 0.025 per side, within 2 Monte Carlo standard errors, is the guarantee), the fixed design's
   at the last look's seeds, and the naive loop's - the fixed 95 % interval re-tested at every look, stopping at the
   first verdict - which exceeds 0.025 (the check can fail).
2. Under effects and spreads like the committed studies', and at the margin: the plan's mean runs (two arms) and
   the runs of a fixed design with the same power (the smallest seeds per arm whose fixed-design power, simulated
   the same way, reaches the plan's), and their ratio. At the margin no power is defined: the plan's fixed n_K.
3. Study A as a whole (scripts/bench_sequential_study.py): its 10 arms and 6 claims, arms shared between claims,
   per-arm failure shares and valid-loss spreads from its committed runs, its own plan (4, 6, 8 seeds per arm); the
   sweep's mean runs against a fixed design with the same power per claim, an arm shared by claims paid once.

    python scripts/bench_sequential.py --part study   # only part 3 (--part nulls | runs | study | all)

The engine's "seeds needed" (advice printed for an inconclusive claim, never part of a verdict) is replaced by None
here: its own power simulation per inconclusive comparison would make 20,000 sweeps take days.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np
from bench_sequential_study import StudyResult, load_study, simulate_study

from prelnx.report import stats
from prelnx.report.outcome import Case, ClaimOutcome
from prelnx.report.sequential import claim_state
from prelnx.report.stats import Sample, Verdict, above, below, compare, compare_counts
from prelnx.sequential import ClaimState, SeedPlan

LOOKS = (3, 5, 8)  # the looks: the naive loop's inflation is about 5 % there
MARGIN = 0.5


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # "welch" | "counts" | "ratio"
    delta: float  # true mean(a) - mean(b) of the trained seeds' values
    sd: float
    share_a: float  # each seed's chance to fail
    share_b: float
    region: tuple[float, float]
    grain: float = 0.0
    expected: Verdict | None = None  # the correct verdict (None: a null at the margin, both verdicts wrong)


def nulls() -> list[Scenario]:
    found = [Scenario(f"Welch vs margin, failure share {f:g}", "welch", MARGIN, 0.3, f, f, above(MARGIN))
             for f in (0.0, 0.3, 0.6)]  # fmt: skip
    found += [Scenario(f"Fisher counts, failure share {f:g}", "counts", 0.0, 0.3, f, f, below(0.0)) for f in (0.3, 0.6)]
    found += [Scenario(f"log ratio on a grain 0.05, failure share {f:g}", "ratio", math.log(1.5), 0.2, f, f,
                       above(math.log(1.5)), grain=0.05) for f in (0.0, 0.3, 0.6)]  # fmt: skip
    return found


def observed() -> list[Scenario]:
    """Effects and spreads like the committed studies' (docs/sequential.md names each source)."""
    return [
        Scenario("matches, far (CPU study: -0.68 vs +0.5, sd 0.07)", "welch", -0.68, 0.07, 0, 0, below(MARGIN),
                 expected=Verdict.HOLDS),
        Scenario("needs warm-up, far apart (2.0 bits, sd 0.3)", "welch", 2.0, 0.3, 0, 0, above(MARGIN),
                 expected=Verdict.HOLDS),
        Scenario("near the margin (0.9 vs 0.5, sd 0.3)", "welch", 0.9, 0.3, 0, 0, above(MARGIN),
                 expected=Verdict.HOLDS),
        Scenario("failures 0 vs 0.6 (counts)", "counts", 0.0, 0.3, 0.0, 0.6, below(0.0), expected=Verdict.HOLDS),
        Scenario("at the margin (0.5 vs 0.5, sd 0.3)", "welch", MARGIN, 0.3, 0, 0, above(MARGIN)),
    ]


def draw(rng: np.random.Generator, scenario: Scenario, n: int) -> tuple[np.ndarray, ...]:
    """Per seed of each arm: failed? and its value (a grain'd quantity rounded to the grain)."""
    fail_a, fail_b = rng.random(n) < scenario.share_a, rng.random(n) < scenario.share_b
    value_a, value_b = rng.normal(scenario.delta, scenario.sd, n), rng.normal(0.0, scenario.sd, n)
    if scenario.grain:
        value_a, value_b = (np.round(v / scenario.grain) * scenario.grain for v in (value_a, value_b))
    return fail_a, value_a, fail_b, value_b


def outcome(scenario: Scenario, seeds: tuple[np.ndarray, ...], n: int) -> ClaimOutcome:
    """The engine's claim from the first n seeds of each arm, from its arm objects on."""
    fail_a, value_a, fail_b, value_b = (x[:n] for x in seeds)
    log = scenario.kind == "ratio"
    a = Sample("a", tuple(value_a[~fail_a].tolist()), int(fail_a.sum()), grain=scenario.grain, log=log)
    b = Sample("b", tuple(value_b[~fail_b].tolist()), int(fail_b.sum()), grain=scenario.grain, log=log)
    c = compare_counts("failures", a, b) if scenario.kind == "counts" else compare("value", a, b, scenario.region)
    return ClaimOutcome("claim", [Case("case", c)])


@dataclass
class Tally:
    holds: int = 0
    not_holds: int = 0
    runs: int = 0

    def add(self, verdict: Verdict, runs: int) -> None:
        self.holds += verdict is Verdict.HOLDS
        self.not_holds += verdict is Verdict.DOES_NOT_HOLD
        self.runs += runs


def simulate(scenario: Scenario, plan: SeedPlan, sweeps: int, seed: int) -> dict[str, Tally]:
    """The plan, the naive re-testing loop and the fixed design at n_K, on the same draws."""
    rng = np.random.default_rng(seed)
    tallies = {"plan": Tally(), "naive": Tally(), "fixed": Tally()}
    for _ in range(sweeps):
        seeds = draw(rng, scenario, plan.looks[-1])
        outcomes = [outcome(scenario, seeds, n) for n in plan.looks]
        for look, claim in enumerate(outcomes):
            state, verdict = claim_state(claim, plan, look)
            if state is not ClaimState.OPEN or look == len(plan.looks) - 1:
                tallies["plan"].add(verdict, 2 * plan.looks[look])
                break
        for look, claim in enumerate(outcomes):
            if claim.verdict in (Verdict.HOLDS, Verdict.DOES_NOT_HOLD) or look == len(plan.looks) - 1:
                tallies["naive"].add(claim.verdict, 2 * plan.looks[look])
                break
        tallies["fixed"].add(outcomes[-1].verdict, 2 * plan.looks[-1])
    return tallies


def fixed_power(scenario: Scenario, n: int, sweeps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = sum(outcome(scenario, draw(rng, scenario, n), n).verdict is scenario.expected for _ in range(sweeps))
    return hits / sweeps


def rate(count: int, sweeps: int) -> str:
    p = count / sweeps
    se = math.sqrt(max(p * (1 - p), 1e-12) / sweeps)
    flag = "" if p <= 0.025 + 2 * se else "  > 0.025"
    return f"{p:.4f} ± {se:.4f}{flag}"


def print_nulls(plan: SeedPlan, sweeps: int, seed: int) -> None:
    print("\n1. Wrong verdicts under a null at the margin (rate ± its Monte Carlo standard error):")
    print(f"{'scenario':52} {'side':14} {'plan':22} {'fixed n=8':22} {'naive re-testing':22}")
    for i, scenario in enumerate(nulls()):
        started = time.perf_counter()
        t = simulate(scenario, plan, sweeps, seed + i)
        for side, attr in (("holds", "holds"), ("does not hold", "not_holds")):
            plan_, fixed, naive = (rate(getattr(t[key], attr), sweeps) for key in ("plan", "fixed", "naive"))
            print(f"{scenario.name:52} {side:14} {plan_:22} {fixed:22} {naive:22}")
        print(f"{'':52} {'(seconds)':14} {time.perf_counter() - started:.0f}")


def print_runs(plan: SeedPlan, sweeps: int, seed: int) -> None:
    print("\n2. Runs (two arms) against a fixed design with the same power:")
    total_plan = total_fixed = 0.0
    for i, scenario in enumerate(observed()):
        t = simulate(scenario, plan, sweeps, seed + 100 + i)["plan"]
        mean_runs = t.runs / sweeps
        if scenario.expected is None:
            fixed_n, power = plan.looks[-1], float("nan")
        else:
            power = (t.holds if scenario.expected is Verdict.HOLDS else t.not_holds) / sweeps
            reps = max(200, sweeps // 5)
            fixed_n = next((n for n in range(2, 3 * plan.looks[-1] + 1)
                            if fixed_power(scenario, n, reps, seed + 200 + n) >= power - 0.01), 3 * plan.looks[-1])
        total_plan, total_fixed = total_plan + mean_runs, total_fixed + 2 * fixed_n
        print(f"{scenario.name:52} power {power:.3f}  plan {mean_runs:5.2f} runs  fixed {2 * fixed_n:3d} runs "
              f"(n = {fixed_n})  ratio {mean_runs / (2 * fixed_n):.2f}")
    print(f"{'all of them':52} {'':12} plan {total_plan:5.2f} runs  fixed {total_fixed:3.0f} runs        "
          f"ratio {total_plan / total_fixed:.2f}")


def print_study(r: StudyResult, looks: tuple[int, ...]) -> None:
    """Part 3's table: each claim, each arm, the totals (and the same without shared arms: where the saving is)."""
    print(f"{'claim':36} {'correct':14} {'power':6} {'stops (state, look): share':58} {'seeds':5} {'fixed n':7}")
    for claim, stops in r.stops.items():
        expected = r.expected[claim].value if r.expected[claim] is not None else "none"
        shares = ", ".join(f"{state} {look} {count / r.sweeps:.2f}" for (state, look), count in sorted(stops.items()))
        print(f"{claim:36} {expected:14} {r.power[claim]:6.3f} {shares:58} {r.stop_seeds[claim]:5.2f} "
              f"{r.fixed_n[claim]:7d}")  # fmt: skip
    fixed = r.fixed_arm_seeds
    for arm, seeds in r.arm_seeds.items():
        claims = [c for c, arms in r.reads.items() if arm in arms]
        print(f"  arm {arm:44} plan {seeds:5.2f} seeds  fixed {fixed[arm]:2d}  read by {', '.join(claims)}")
    apart_plan = sum(r.stop_seeds[c] * len(arms) for c, arms in r.reads.items())
    apart_fixed = sum(r.fixed_n[c] * len(arms) for c, arms in r.reads.items())
    print(f"study A: plan {r.plan_runs:.2f} runs (mean of {r.sweeps}), fixed design with the same power per claim "
          f"{r.fixed_runs} runs: ratio {r.ratio:.2f}; every arm to n_K: {len(r.arm_seeds) * looks[-1]} runs "
          f"(ratio {r.plan_runs / (len(r.arm_seeds) * looks[-1]):.2f})")  # fmt: skip
    print(f"claims apart (each claim's arms its own, none shared): plan {apart_plan:.2f} runs, fixed {apart_fixed} "
          f"runs: ratio {apart_plan / apart_fixed:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", type=int, default=20000, help="simulated sweeps per scenario (default 20000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default="obrien-fleming")
    parser.add_argument("--futility", type=float, default=0.1)
    parser.add_argument("--part", choices=("nulls", "runs", "study", "all"), default="all")
    parser.add_argument("--study-futility", type=float, default=None, help="part 3's futility (default: its spec's; "
                        "0: efficacy stops only)")  # fmt: skip
    args = parser.parse_args()
    stats.seeds_needed = lambda *_, **__: None  # advice only (the docstring says why)
    plan = SeedPlan(LOOKS, args.method, args.futility)
    print(f"plan: looks {LOOKS} seeds per arm, {plan.method} spending, futility below {plan.futility:g}; nominal "
          f"one-sided levels {', '.join(f'{plan.nominal(k):.4f}' for k in range(len(LOOKS)))}; {args.sweeps} sweeps")
    if args.part in ("nulls", "all"):
        print_nulls(plan, args.sweeps, args.seed)
    if args.part in ("runs", "all"):
        print_runs(plan, args.sweeps, args.seed)
    if args.part in ("study", "all"):
        study = load_study()
        if args.study_futility is not None:
            study.plan = dataclasses.replace(study.plan, futility=args.study_futility)
        print(f"\n3. Study A as a sequential sweep (its plan: looks {study.plan.looks}, {study.plan.method}, futility "
              f"below {study.plan.futility:g}), against a fixed design with the same power per claim:")  # fmt: skip
        for arm in study.arms.values():
            spread = math.sqrt(arm.factor[-1] @ arm.factor[-1]) if arm.factor.size else float("nan")
            final = arm.mean[-1] if arm.mean.size else float("nan")
            print(f"  arm {arm.name:44} {arm.seeds} seeds committed: failure share {arm.share:.3f}, final valid loss "
                  f"{final:.2f} ± {spread:.2f}")  # fmt: skip
        started = time.perf_counter()
        print_study(simulate_study(study, args.sweeps, args.seed + 300, max(200, args.sweeps // 5)), study.plan.looks)
        print(f"(seconds: {time.perf_counter() - started:.0f})")


if __name__ == "__main__":
    main()
