"""The claims' outcomes and the arms' means in words: the markdown tables of the report and the text `prelnx report`
prints. Everything upstream is typed values (prelnx.report.outcome, prelnx.report.stats); only this module writes."""

from __future__ import annotations

import math
import statistics
from typing import Any

from prelnx.report.outcome import ClaimOutcome, Judged, Premise, PremiseState
from prelnx.report.stats import MAX_SEEDS, POWER, Comparison, Sample, Verdict
from prelnx.report.warmup_free import MethodClaims, RankRow


DEAD = "neither arm trained: every seed diverged or ended with its valid nll at or above the unigram plateau"


def _seeds(sample: Sample) -> str:
    text = f"{sample.n} seed{'s' if sample.n != 1 else ''}"
    return text + (f", {sample.failed} diverged" if sample.failed else "")


def _region(region: tuple[float, float]) -> str:
    lo, hi = region
    if math.isinf(lo):
        return f"< {hi:+.2f}"
    if math.isinf(hi):
        return f"> {lo:+.2f}"
    return f"within ±{hi:.2f}" if lo == -hi else f"in [{lo:.2f}, {hi:.2f}]"


def interval_text(c: Comparison) -> str:
    f = ".2f" if c.metric == "ratio" else "+.2f"  # a ratio is a level; everything else a difference
    if c.one_seed:
        return f"{c.estimate:{f}} (no interval: 1 seed)"
    return f"{c.estimate:{f}} [95 % CI {c.low:{f}}, {c.high:{f}}]"


def comparison_text(c: Comparison, short: bool = False) -> str:
    """`A 8.46 (2 seeds) - B 6.79 (3 seeds) = +1.67 [95 % CI +1.2, +2.1]; claimed > +0.50`."""
    if short:
        seeds = "" if c.one_seed and not c.a.failed else f" ({_seeds(c.a)})"  # interval_text says "1 seed"
        return f"{interval_text(c)}{seeds}; needed {_region(c.region)}"
    if c.verdict is Verdict.NOT_TESTABLE:  # two dead arms: their difference is failure minus failure
        return f"{c.a.label} ({_seeds(c.a)}) and {c.b.label if c.b else '-'} ({_seeds(c.b) if c.b else '-'}): {DEAD}"
    if c.b is None:
        head = f"{c.metric}: {c.a.label} {interval_text(c)} ({_seeds(c.a)})"
    else:
        head = (f"{c.a.label} {c.a.mean:.2f} ({_seeds(c.a)}) − {c.b.label} {c.b.mean:.2f} ({_seeds(c.b)}) "
                f"= {interval_text(c)}")  # fmt: skip
    return f"{head}; claimed {_region(c.region)}"


def verdict_text(outcome: ClaimOutcome) -> str:
    """The verdict, with why when it is inconclusive (1 seed, seeds needed, an unsettled premise, Holm's
    correction) or not testable because both arms never trained."""
    verdict, judged = outcome.verdict, outcome.judged()
    if verdict is Verdict.NOT_TESTABLE and any(j.case.comparison.verdict is Verdict.NOT_TESTABLE for j in judged):
        return f"{verdict.value} ({DEAD})"
    if verdict is not Verdict.INCONCLUSIVE:
        return verdict.value
    open_cases = [j.case for j in judged if j.verdict is Verdict.INCONCLUSIVE]
    reasons = []
    if any(c.comparison.one_seed for c in open_cases):
        reasons.append("1 seed")
    needed = [c.comparison.seeds_needed for c in open_cases if c.comparison.seeds_needed]
    if needed:
        most = max(needed)
        count = f"~{most}" if most <= MAX_SEEDS else f"more than {MAX_SEEDS}"
        reasons.append(f"{count} seeds per arm for {100 * POWER:.0f} % power")
    if any(c.premise is not None and c.premise.state in (PremiseState.UNSETTLED, PremiseState.UNCHECKED)
           and c.comparison.verdict is Verdict.DOES_NOT_HOLD for c in open_cases):  # fmt: skip
        reasons.append("does not hold, but its premise is not settled")
    corrected = [j for j in judged if j.corrected]
    if corrected:
        reasons.append(f"does not hold at 95 % in {len(corrected)} case(s), not after Holm's correction over "
                       f"{sum(j.holm_level is not None for j in judged)}")  # fmt: skip
    return f"inconclusive ({'; '.join(reasons)})" if reasons else "inconclusive"


def _level(level: float) -> str:
    return f"{100 * level:.3g} %"


def _case_line(judged: Judged) -> str:
    """A case with its verdict; a "does not hold" at 95 % among several cases also shows its Holm-adjusted interval."""
    case, line = judged.case, f"{judged.case.label}: {comparison_text(judged.case.comparison)}"
    if judged.holm_level is not None and case.comparison.verdict is Verdict.DOES_NOT_HOLD:
        low, high = case.comparison.interval(judged.holm_level)
        f = ".2f" if case.comparison.metric == "ratio" else "+.2f"
        line += f"; Holm-adjusted {_level(judged.holm_level)} CI [{low:{f}}, {high:{f}}]"
    return f"{line} → {judged.verdict.value}"


def _case_lines(outcome: ClaimOutcome) -> list[str]:
    if not outcome.cases:
        return [outcome.missing]
    return [_case_line(judged) for judged in outcome.judged()]


def premise_measured(premise: Premise) -> str:
    c = premise.comparison
    if c is None:
        return premise.note
    return f"{premise.note}: {comparison_text(c, short=c.b is None)}"


def _premise_lines(outcome: ClaimOutcome) -> list[str]:
    seen: list[str] = []
    for premise in [case.premise for case in outcome.cases] + outcome.premises:
        if premise is not None:
            line = f"{premise.statement} **{premise.state.value}**: {premise_measured(premise)}"
            if line not in seen:
                seen.append(line)
    return seen


def claims_table(claims: list[dict[str, Any]], outcomes: dict[str, ClaimOutcome]) -> list[str]:
    """One row per claim: the paper, the measured cases (means, n, difference and interval), premise, verdict."""
    lines = ["| claim | source | paper | this sweep: mean (seeds) per arm, difference [95 % CI], claimed side "
             "| premise | verdict |", "|---|---|---|---|---|---|"]
    for claim in claims:
        outcome = outcomes.get(claim["id"]) or ClaimOutcome(claim["id"])
        measured = "<br>".join([*_case_lines(outcome), *outcome.notes]).replace("|", "/")
        premise = "<br>".join(_premise_lines(outcome)).replace("|", "/") or "-"
        verdict = verdict_text(outcome)
        mark = verdict if outcome.verdict is Verdict.NOT_MEASURED else f"**{verdict}**"
        lines.append(f"| {claim['claim']} | {claim['source']} | {claim['paper']} | {measured} | {premise} | {mark} |")
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


def arms_table(groups: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """Mean ± sample sd over each arm's seeds (diverged seeds excluded from the means, counted in their column)."""
    lines = ["| arm | seeds | diverged | final valid loss | best valid BLEU | test BLEU (tokenized) |",
             "|---|---|---|---|---|---|"]
    for label, results in groups:
        ok = [r for r in results if r.get("status") == "finished"]

        def values(key: str) -> list[float]:
            return [float(v) for r in ok if isinstance(v := r.get(key), (int, float)) and math.isfinite(v)]

        diverged = sum(r.get("status") == "diverged" for r in results)
        lines.append(f"| {label} | {len(results)} | {diverged} | {_mean_sd(values('final_valid_loss'), 2)} | "
                     f"{_mean_sd(values('best_valid_bleu'), 1)} | {_mean_sd(values('test_bleu_tokenized'), 1)} |")  # fmt: skip
    return lines


def _interval(row: RankRow) -> str:
    return "- (1 seed)" if row.low is None else f"[{row.low:.2f}, {row.high:.2f}]"


def _to_target(row: RankRow) -> str:
    if row.target is None:
        return "- (no Post-LN with warm-up at this lr)"
    reached = f"{row.reached}/{row.sample.n}"
    if not row.reached:
        return reached
    return f"{reached}, after {statistics.fmean(row.updates_to_target):.0f} updates (mean of those)"


def ranking_table(rows: list[RankRow]) -> list[str]:
    """The warm-up-free ranking: one row per arm, best mean final valid loss first."""
    lines = ["| rank | method | optimizer | warm-up | lr | final valid loss, mean ± sd | 95 % CI | seeds | diverged "
             "| target loss | seeds at the target (k/n), updates |", "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for rank, row in enumerate(rows, start=1):
        sd = f" ± {row.sample.sd:.2f}" if row.sample.sd is not None else ""
        target = f"{row.target:.2f}" if row.target is not None else "-"
        lines.append(f"| {rank} | {row.method} | {row.optimizer} | {row.warmup or 'none'} | {row.lr:g} | "
                     f"{row.sample.mean:.2f}{sd} | {_interval(row)} | {row.sample.n} | {row.sample.failed} | "
                     f"{target} | {_to_target(row)} |")  # fmt: skip
    return lines


def method_claims_table(methods: list[MethodClaims]) -> list[str]:
    """Every method's claims in the paper claims' table (method, claim, source with paper and code, verdict), then
    what each method's authors do not claim and what could not be verified."""
    claims, outcomes, notes = [], {}, []
    for method in methods:
        spec = method.spec
        for claim in spec["claims"]:
            claims.append({**claim, "claim": f"**{spec['name']}**: {claim['claim']}",
                           "source": f"{spec['cite']}, {claim['source']} ({spec['code']})"})  # fmt: skip
            outcomes[claim["id"]] = method.outcomes[claim["id"]]
        notes += [f"- {spec['name']}, {key.replace('_', ' ')}: {spec[key]}"
                  for key in ("not_claimed", "unverified") if spec.get(key)]  # fmt: skip
    return claims_table(claims, outcomes) + (["", *notes] if notes else [])
