"""The claims' outcomes and the arms' means in words: the markdown tables of the report and the text `prelnx report`
prints. Everything upstream is typed values (prelnx.report.outcome, prelnx.report.stats); only this module writes."""

from __future__ import annotations

import math
import statistics
from typing import Any

from prelnx.layouts import display_name
from prelnx.records.results import is_finite
from prelnx.report.arms import Arm, RunState, at_updates, describe_arm, outcome_counts, seed_groups
from prelnx.report.outcome import ClaimOutcome, Judged, PremiseState
from prelnx.report.stats import MAX_SEEDS, ONE_SAMPLE, POWER, WELCH, Comparison, Sample, Verdict, counts_text
from prelnx.report.warmup_free import MethodClaims, RankRow

MEASURED = {"failed to train": "trained", "did not reach the target": "reached it", "failed at either lr": "trained at both"}


def _seeds(sample: Sample) -> str:
    """`3 seeds` or `3 seeds: 1 trained, 1 failed to train, 1 diverged (update 24), 1 no validation row`."""
    text = f"{sample.n} seed{'s' if sample.n != 1 else ''}"
    if not sample.failed and not sample.missing and not sample.unjudged and not sample.no_value:
        return text
    others = ((sample.failed - sample.diverged, sample.failure),
              (sample.diverged, f"diverged{at_updates(sample.diverged_at)}"),
              (sample.missing, "no validation row"), (sample.unjudged, "not judged (no unigram plateau)"),
              (len(sample.no_value), f"no value ({', '.join(sorted(set(sample.no_value)))})"))  # fmt: skip
    parts = [f"{sample.measured} {MEASURED.get(sample.failure, 'measured')}", *(f"{k} {w}" for k, w in others if k)]
    return f"{text}: {', '.join(parts)}"


def _region(region: tuple[float, float], log: bool = False) -> str:
    """`> +0.50`, `< -0.20`, `within ±0.50`, `in [0.10, 0.90]`; a log ratio's region as the ratio's (unsigned)."""
    lo, hi = region
    sign, (low, high) = ("", (math.exp(lo), math.exp(hi))) if log else ("+", region)
    if math.isinf(lo) or math.isinf(hi):
        return f"< {high:{sign}.2f}" if math.isinf(lo) else f"> {low:{sign}.2f}"
    return f"within ±{hi:.2f}" if lo == -hi and not log else f"in [{low:.2f}, {high:.2f}]"


def interval_text(c: Comparison) -> str:
    if c.estimate != c.estimate:  # nan: an arm has no seed with the quantity
        return "no estimate (an arm has no seed with the quantity)"
    f = ".2f" if c.level else "+.2f"  # a ratio or a norm is a level; everything else a difference
    shown = (lambda v: f"{math.exp(v):.2f}") if c.a.log else (lambda v: f"{v:{f}}")  # a log ratio: as the ratio
    if c.one_seed:
        why = "1 seed" if c.reason == "1 seed" else "fewer than 2 seeds per arm"
        return f"{shown(c.estimate)} (no interval: {why})"
    widened = f"×{math.exp(c.grain):.2f}" if c.a.log else f"±{c.grain:g}"
    grain = f", widened by the grain {widened}" if c.grain else ""
    return f"{shown(c.estimate)} [95 % CI {shown(c.low)}, {shown(c.high)}{grain}]"


def _arm_text(s: Sample) -> str:
    """`Pre-LN adam lr 0.001, no warm-up at update 138: 6.62 (2 seeds)`: the arm, the update(s) read, the mean."""
    mean = (f"geometric mean {math.exp(s.mean):.1f}" if s.log else f"{s.mean:.2f}") if s.values else "-"
    read = f" at {s.read}" if s.read else ""
    return f"{s.label}{read}: {mean} ({_seeds(s)})"


def _test_text(c: Comparison) -> str:
    """`; test: Welch's t over the trained seeds; failures 2/3 vs 0/3, Fisher's exact test (one-sided) p = 0.2`."""
    tests = [t for t in (WELCH, ONE_SAMPLE) if t in c.test and c.low is not None]  # an interval was computed
    tests = [f"{t.replace('the trained seeds', 'the seeds that reached it')}, on ln(updates)" if c.a.log else t
             for t in tests]  # a ratio of updates to a target reads every seed that reached it, whatever its class
    if c.failures_p is not None and c.b is not None:
        tests.append(f"{counts_text(c.a, c.b)}, Fisher's exact test (one-sided) p = {c.failures_p:.3g}")
    return f"; test: {'; '.join(tests)}" if tests else ""


def comparison_text(c: Comparison, short: bool = False) -> str:
    """`metric: A 8.46 (3 seeds, read at update 408) − B 6.79 (3 seeds: 2 trained, 1 diverged (update 24)) = +1.67
    [95 % CI +1.2, +2.1]; claimed > +0.50; test: Welch's t ...`: every number with where it came from."""
    if short:
        seeds = "" if c.one_seed and not c.a.failed else f" ({_seeds(c.a)})"  # interval_text says "1 seed"
        return f"{interval_text(c)}{seeds}; needed {_region(c.region, c.a.log)}"
    b = ":" if c.b is None else f" {'/' if c.a.log else '−'} {_arm_text(c.b)} ="
    return f"{c.metric}: {_arm_text(c.a)}{b} {interval_text(c)}; claimed {_region(c.region, c.a.log)}{_test_text(c)}"


def verdict_text(outcome: ClaimOutcome) -> str:
    """The verdict, with why when it is inconclusive or not testable."""
    verdict, judged = outcome.verdict, outcome.judged()
    if verdict is Verdict.NOT_TESTABLE:
        why = list(dict.fromkeys(j.case.comparison.reason for j in judged
                                 if j.case.comparison.verdict is Verdict.NOT_TESTABLE and j.case.comparison.reason))  # fmt: skip
        why = why or ([outcome.untestable] if outcome.untestable else [])
        return f"{verdict.value} ({'; '.join(why)})" if why else verdict.value
    if verdict is not Verdict.INCONCLUSIVE:
        return verdict.value
    open_cases = [j.case for j in judged if j.verdict is Verdict.INCONCLUSIVE]
    reasons = list(dict.fromkeys(c.comparison.reason for c in open_cases
                                 if c.comparison.verdict is Verdict.INCONCLUSIVE and c.comparison.reason))  # fmt: skip
    if needed := [c.comparison.seeds_needed for c in open_cases if c.comparison.seeds_needed]:
        count = f"~{max(needed)}" if max(needed) <= MAX_SEEDS else f"more than {MAX_SEEDS}"
        reasons.append(f"{count} seeds per arm for {100 * POWER:.0f} % power")
    if any(c.premise is not None and c.premise.state in (PremiseState.UNSETTLED, PremiseState.UNCHECKED)
           and c.comparison.verdict is Verdict.DOES_NOT_HOLD for c in open_cases):  # fmt: skip
        reasons.append("does not hold, but its premise is not settled")
    if corrected := [j for j in judged if j.case.verdict is Verdict.DOES_NOT_HOLD and j.verdict is not j.case.verdict]:
        reasons.append(f"does not hold at 95 % in {len(corrected)} case(s), not after Holm's step-down over "
                       f"{sum(j.holm_p is not None for j in judged)}")  # fmt: skip
    return f"inconclusive ({'; '.join(reasons)})" if reasons else "inconclusive"


def _case_line(judged: Judged) -> str:
    """A case with its verdict (and its Holm-adjusted p, which decided a "does not hold" among several cases)."""
    case, line = judged.case, f"{judged.case.label}: {comparison_text(judged.case.comparison)}"
    if judged.holm_p is not None and case.comparison.verdict is Verdict.DOES_NOT_HOLD:
        kept = "≤ 0.05: kept" if judged.verdict is Verdict.DOES_NOT_HOLD else "> 0.05: not kept"
        line += f"; Holm step-down adjusted p = {judged.holm_p:.3g} ({kept})"
    return f"{line} → {judged.verdict.value}"


def _case_lines(outcome: ClaimOutcome) -> list[str]:
    return [_case_line(judged) for judged in outcome.judged()] if outcome.cases else [outcome.missing]


def _premise_lines(outcome: ClaimOutcome) -> list[str]:
    lines = []
    for p in [case.premise for case in outcome.cases] + outcome.premises:
        if p is not None:
            c = p.comparison
            measured = p.note if c is None else f"{p.note}: {comparison_text(c, short=c.b is None)}"
            lines.append(f"{p.statement} **{p.state.value}**: {measured}")
    return list(dict.fromkeys(lines))


def claims_table(claims: list[dict[str, Any]], outcomes: dict[str, ClaimOutcome],
                 columns: tuple[str, ...] = ("claim", "source", "paper"),
                 measured_as: str = "this sweep: mean (seeds) per arm, difference [95 % CI], claimed side",
                 verdicts: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """One row per claim: its `columns` (the paper's claim, source and number), the measured cases (means, n,
    difference and interval), premise, verdict (bold unless not measured; `verdicts`: each claim's, given, bold)."""
    lines = [f"| {' | '.join(columns)} | {measured_as} | premise | verdict |", "|---" * (len(columns) + 3) + "|"]
    for claim in claims:
        outcome = outcomes.get(claim["id"]) or ClaimOutcome(claim["id"])
        measured = "<br>".join([*_case_lines(outcome), *outcome.notes]).replace("|", "/")
        premise = "<br>".join(_premise_lines(outcome)).replace("|", "/") or "-"
        verdict = verdicts[claim["id"]] if verdicts else verdict_text(outcome)
        mark = f"**{verdict}**" if verdicts or outcome.verdict is not Verdict.NOT_MEASURED else verdict
        lines.append(f"| {' | '.join(claim[column] for column in columns)} | {measured} | {premise} | {mark} |")
    return lines


def claims_text(claims: list[dict[str, Any]], outcomes: dict[str, ClaimOutcome]) -> list[str]:
    """The same, as plain text for the terminal."""
    lines = []
    for claim in claims:
        outcome = outcomes.get(claim["id"]) or ClaimOutcome(claim["id"])
        lines.append(f"{claim['claim']} ({claim['source']})")
        lines += [f"  {line}" for line in _case_lines(outcome) + outcome.notes]
        lines += [f"  premise: {line.replace('**', '')}" for line in _premise_lines(outcome)]
        lines.append(f"  verdict: {verdict_text(outcome)}")
    return lines


def _mean_sd(values: list[float], digits: int) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def arms_table(arms: list[Arm]) -> list[str]:
    """Per arm: its seeds by outcome, then mean ± sample sd over its trained seeds (no failed seed in a mean)."""
    lines = [("| arm | seeds | outcome per seed | final valid loss (trained seeds) | best valid BLEU (trained seeds) "
             "| test BLEU (tokenized) |"), "|---|---|---|---|---|---|"]  # fmt: skip
    for group in seed_groups(arms).values():
        outcomes = [a.outcome() for a in group]
        ok = [a.results for a, o in zip(group, outcomes) if o.state is RunState.TRAINED]
        mean_sd = {key: _mean_sd([float(v) for r in ok if is_finite(v := r.get(key))], digits)
                   for key, digits in (("final_valid_loss", 2), ("best_valid_bleu", 1), ("test_bleu_tokenized", 1))}
        lines.append(f"| {describe_arm(group[0])} | {len(group)} | {outcome_counts(outcomes)} | "
                     f"{' | '.join(mean_sd.values())} |")  # fmt: skip
    return lines


def _to_target(row: RankRow) -> str:
    if row.target is None:
        return "- (no Post-LN with warm-up at this lr)"
    reached = f"{row.reached}/{row.sample.n}"
    if not row.reached:
        return reached
    return f"{reached}, after {statistics.fmean(row.updates_to_target):.0f} updates (mean of those)"


def ranking_table(rows: list[RankRow]) -> list[str]:
    """The warm-up-free ranking: one row per arm, best mean final valid loss first."""
    lines = [("| rank | method | optimizer | warm-up | lr | final valid loss of the trained seeds, mean ± sd | 95 % CI "
             "| seeds | outcome per seed | target loss | seeds at the target (k/n), updates |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for rank, row in enumerate(rows, start=1):
        target = f"{row.target:.2f}" if row.target is not None else "-"
        interval = "- (< 2 trained seeds)" if row.low is None else f"[{row.low:.2f}, {row.high:.2f}]"
        lines.append(f"| {rank} | {row.method} | {row.optimizer} | {row.warmup or 'none'} | {row.lr:g} | "
                     f"{_mean_sd(list(row.sample.values), 2)} | {interval} | {row.sample.n} | {_seeds(row.sample)} | "
                     f"{target} | {_to_target(row)} |")  # fmt: skip
    return lines


def method_claims_table(methods: list[MethodClaims]) -> list[str]:
    """Every method's claims in the paper claims' table, then what its authors do not claim and what is unverified."""
    claims, outcomes, notes = [], {}, []
    for method in methods:
        spec, name = method.spec, display_name(method.spec["layout"])  # the layout table's name (prelnx.layouts)
        for claim in spec["claims"]:
            claims.append({**claim, "claim": f"**{name}**: {claim['claim']}",
                           "source": f"{spec['cite']}, {claim['source']} ({spec['code']})"})  # fmt: skip
            outcomes[claim["id"]] = method.outcomes[claim["id"]]
        notes += [f"- {name}, {key.replace('_', ' ')}: {spec[key]}"
                  for key in ("not_claimed", "unverified") if spec.get(key)]  # fmt: skip
    return claims_table(claims, outcomes) + (["", *notes] if notes else [])
