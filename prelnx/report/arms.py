"""A sweep's runs as the claims see them (read only through prelnx.records): each run's arm, rows and outcome
(`RunState`, computed once by `Arm.outcome`: trained means a final valid nll at least paper.yaml's
`trained_margin_bits`, or a claim's own margin, below the unigram plateau), its seeds grouped, and per-seed samples
in which a seed that failed is counted, never given a value; its context (the keys outside the claims' factors), and
a claim's check decided on each context apart (`matched`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config, OptimizerConfig
from prelnx.exits import Refusal
from prelnx.layouts import RECIPE_KEYS, display_name
from prelnx.paper import paper_data
from prelnx.plan.data import data_dir
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import is_finite, read_index, run_results
from prelnx.records.run_config import LAYOUT_SUM, arm_values, has_config, read_run_config
from prelnx.records.status import format_problem, read_status
from prelnx.report.outcome import ClaimOutcome
from prelnx.report.plateau import find_plateau
from prelnx.report.stats import Sample

NO_PLATEAU = ("no unigram plateau: neither the target dictionary nor the binarized training set the runs trained "
              "on is readable here, so whether a run trained cannot be said")  # fmt: skip


class RunState(str, Enum):
    TRAINED = "trained"
    FAILED = "failed to train"
    DIVERGED = "diverged"
    NO_VALIDATION = "no validation row"
    NOT_JUDGED = "not judged (no unigram plateau)"
    NOT_FINISHED = "not finished"


@dataclass(frozen=True)
class RunOutcome:
    state: RunState
    update: int | None  # diverged: the update it diverged at; else its last validation's (None: none)
    final_nll: float | None  # None: no finite one


@functools.cache
def trained_margin() -> float:
    """paper.yaml's `trained_margin_bits`: how far below the unigram plateau a run's final valid nll must be."""
    return float(paper_data()["trained_margin_bits"])


def final_nll_of(rows: list[dict[str, Any]]) -> float | None:
    """The last validation row's nll (the report's legend says it): `valid_nll_loss`, or `valid_loss` where the
    criterion logs no nll (the key absent, or null as metrics rows store it for cross_entropy and masked_lm)."""
    last = rows[-1] if rows else {}
    value = last.get("valid_loss") if last.get("valid_nll_loss") is None else last["valid_nll_loss"]
    return float(value) if is_finite(value) else None


@dataclass
class Arm:
    """One run: its arm's settings, seed, results (prelnx.records.results.run_results), metrics rows and plateau."""

    name: str
    layout: str
    optimizer: str
    warmup: int
    lr: float
    seed: int
    results: dict[str, Any]
    rows: list[dict[str, Any]]
    task: str = "translation"
    plateau: float | None = None  # unigram plateau, bits per token (None: no dictionary or data here)
    plateau_source: str = ""  # what it was computed from (prelnx.report.plateau)
    diverged_at: int | None = None  # status.json's divergence update
    values: dict[str, str] = dataclasses.field(default_factory=dict)  # its arm's keys (records.run_config.arm_values)
    context: tuple[tuple[str, str], ...] = ()  # its arm's keys outside the claims' factors (set by load_arms)
    context_label: str = ""  # those of them that differ in the sweep, in words ("" when every run shares them)
    norm: str = "layernorm"  # model.norm: a context key, never a paper claim's factor (prelnx.report.norm_claims)
    qk_norm: bool = False  # model.qk_norm: likewise
    config: Config | None = dataclasses.field(default=None, compare=False, repr=False)  # its config.yaml, read once

    @functools.cached_property  # read ~10^5 times by a report's picks; its fields are never changed after load
    def key(self) -> tuple:
        """Its arm: every key that can change what is trained, except the seed (one arm, one seed number once)."""
        return (self.task, self.layout, self.optimizer, self.warmup, self.lr, tuple(sorted(self.values.items())))

    @property
    def status(self) -> RunStatus:
        return RunStatus.of(self.results)

    @property
    def diverged(self) -> bool:
        return self.status is RunStatus.DIVERGED

    def final(self) -> float | None:
        value = self.rows[-1].get("valid_loss") if self.rows else None
        return float(value) if is_finite(value) else None

    def outcome(self, margin: float | None = None) -> RunOutcome:
        """Its outcome from its status, its validation rows and the plateau (margin: paper.yaml's by default)."""
        margin = trained_margin() if margin is None else margin
        last = int(self.rows[-1].get("num_updates", 0)) if self.rows else None
        if self.status == "diverged":
            return RunOutcome(RunState.DIVERGED, self.diverged_at if self.diverged_at is not None else last, None)
        if self.status != "finished":
            return RunOutcome(RunState.NOT_FINISHED, last, None)
        if not any("valid_loss" in r or "valid_nll_loss" in r for r in self.rows):
            return RunOutcome(RunState.NO_VALIDATION, None, None)
        nll = final_nll_of(self.rows)
        if nll is None:
            return RunOutcome(RunState.FAILED, last, None)
        if self.plateau is None:
            return RunOutcome(RunState.NOT_JUDGED, last, nll)
        return RunOutcome(RunState.TRAINED if nll <= self.plateau - margin else RunState.FAILED, last, nll)


def optimizer_variant(optimizer: OptimizerConfig) -> str:
    """`adam`, `gi_adam` (GI-Adam), `adam_no_bias_correction`: runs differing only in these are never one arm."""
    gi = "gi_" if optimizer.second_moment_init == "gradient" else ""
    return f"{gi}{optimizer.name}{'' if optimizer.bias_correction else '_no_bias_correction'}"


def _diverged_at(status: dict[str, Any]) -> int | None:
    """status.json's divergence update (`diverged_at`; the update it stopped at for older records)."""
    value = status.get("diverged_at", status.get("update")) if status.get("status") == "diverged" else None
    return int(value) if isinstance(value, int) else None


def load_arms(sweep_dir: Path) -> list[Arm]:
    """Every run of the sweep, the norm variants' too (model.norm and model.qk_norm are context keys: a paper claim
    compares runs of one norm only; the variants' own claims, prelnx.report.norm_claims, compare across them)."""
    names = [p["name"] for p in read_index(sweep_dir)["runs"]] or sorted(d.name for d in sweep_dir.iterdir() if has_config(d))
    arms = []
    for name in names:
        run_dir = sweep_dir / name
        if not has_config(run_dir):
            continue
        if problem := format_problem(run_dir):
            raise Refusal(problem)
        config = read_run_config(run_dir)
        found = find_plateau(config, data_dir(config), sweep_dir)
        arms.append(Arm(name=name, layout=config.model.layout, optimizer=optimizer_variant(config.optimizer),
                        warmup=int(config.schedule.warmup_updates), lr=float(config.optimizer.lr),
                        seed=int(config.train.seed), results=run_results(run_dir), rows=read_metrics(run_dir),
                        task=config.task, plateau=None if found is None else found.bits,
                        plateau_source="" if found is None else found.source,
                        diverged_at=_diverged_at(read_status(run_dir)), values=arm_values(config, run_dir),
                        norm=config.model.norm, qk_norm=bool(config.model.qk_norm), config=config))  # fmt: skip
    return with_contexts(arms)


# The claims' own factors: a claim compares arms that differ in these only, and in the keys that belong to a factor
# where the sweep sets them per value of it (`_factor_of`; the rule and its examples: docs/verdicts.md, "What a claim
# compares"). Every other key is the context: runs in different contexts are never compared.
FACTOR_KEYS = ("task", "model.layout", "optimizer.lr", "schedule.warmup_updates")


def _factor_of(key: str) -> str | None:
    """The Arm attribute whose values a key may belong to (None: never a factor's)."""
    if key.startswith("schedule."):
        return "warmup"
    if key.startswith("optimizer."):
        return "optimizer"
    return "layout" if any(key in keys for keys in RECIPE_KEYS.values()) else None


def with_contexts(arms: list[Arm]) -> list[Arm]:
    """Each run's context (its arm's keys outside the claims' factors) and, when the sweep's runs differ in it, the
    differing keys in words (`model.encoder_layers 12`): runs in different contexts are never compared."""
    # each layout's recipe keys: RECIPE_KEYS', its options and its file's code (a user's file's), as its runs hold them
    recipes = {a.layout: {*RECIPE_KEYS.get(a.layout, ()), *(f"model.{k}" for k in a.config.model.options), LAYOUT_SUM}
               if a.config else set(RECIPE_KEYS.get(a.layout, ())) for a in arms}  # fmt: skip

    def belongs(key: str) -> bool:
        factor = _factor_of(key) or ("layout" if any(key in keys for keys in recipes.values()) else None)
        if key in FACTOR_KEYS or factor is None:
            return key in FACTOR_KEYS
        if factor == "layout" and not any(key in recipes[a.layout] for a in arms):
            return False
        per_value: dict[Any, set[str | None]] = {}
        for arm in arms:
            per_value.setdefault(getattr(arm, factor), set()).add(arm.values.get(key))
        return all(len(found) == 1 for found in per_value.values())

    factor_keys = {k for k in {k for a in arms for k in a.values} if belongs(k)}  # each key once, not once per run
    for arm in arms:
        arm.context = tuple((k, v) for k, v in sorted(arm.values.items()) if k not in factor_keys)
    differing = differing_keys(arms)
    for arm in arms:
        arm.context_label = context_words(arm, differing)
    return arms


def context_words(arm: Arm, keys: list[str]) -> str:
    """`model.encoder_layers 12, model.norm -`: the run's value of each context key (-: it has none), in words."""
    found = dict(arm.context)
    return ", ".join(f"{k} {'-' if found.get(k) is None else found[k].strip(chr(34))}" for k in keys)


def differing_keys(arms: list[Arm]) -> list[str]:
    """The context keys in which these runs differ (what keeps them from being compared)."""
    contexts = [dict(a.context) for a in arms]  # once, not once per (run, key, run): reading a study of 200 runs
    return sorted(k for k in {k for c in contexts for k in c} if len({c.get(k) for c in contexts}) > 1)


def pick(arms: list[Arm], **criteria: Any) -> list[Arm]:
    """Every seed of one arm that finished (with or without a validation row) or diverged; a seed number once per
    arm (a second run of the same arm and seed, under another name, is left out: the first in the sweep's order)."""
    found, seen = [], set()
    for arm in arms:
        wanted = all(getattr(arm, k) == v for k, v in criteria.items()) and arm.status.done
        if wanted and (arm.key, arm.seed) not in seen:
            seen.add((arm.key, arm.seed))
            found.append(arm)
    return found


def longest_warmup(arms: list[Arm], **criteria: Any) -> list[Arm]:
    """The seeds of the arm matching `criteria` with its longest warm-up ([]: none with warm-up)."""
    warmups = sorted({a.warmup for a in pick(arms, **criteria)} - {0})
    return pick(arms, **criteria, warmup=warmups[-1]) if warmups else []


def first_update_at(arm: Arm, target: float) -> int | None:
    """The update of the seed's first validation at or below `target` (None: never)."""
    for row in arm.rows:
        if is_finite(value := row.get("valid_loss")) and value <= target:
            return int(row.get("num_updates", 0))
    return None


def final_nll(arm: Arm) -> float | None:
    """The run's final valid nll; None when it diverged or has no finite one."""
    return None if arm.diverged else final_nll_of(arm.rows)


def outcome_sample(label: str, group: list[Arm], value: Any, margin: float | None = None,
                   failure: str = "failed to train", by_curve: bool = False) -> Sample:  # fmt: skip
    """Each seed of the arm by its outcome: a trained seed's `value(arm)` - (value, update read), or None (counted
    as a failure) - and the others counted by outcome, nothing imputed; no plateau: `untestable`. `by_curve`: every
    seed's `value(arm)`, whatever its outcome class (what its own curve did), the seeds without one counted."""
    values, read, failed, diverged, missing, at, untestable, unjudged = [], [], 0, 0, 0, [], "", 0
    for arm in group:
        outcome = arm.outcome(margin)
        got = value(arm) if by_curve or outcome.state is RunState.TRAINED else None
        if got is not None:
            values.append(float(got[0]))
            read.append(int(got[1]))
        elif outcome.state is RunState.NO_VALIDATION:
            missing += 1
        elif outcome.state is RunState.NOT_JUDGED and not by_curve:
            untestable, unjudged = NO_PLATEAU, unjudged + 1
        elif outcome.state is RunState.DIVERGED:
            failed, diverged = failed + 1, diverged + 1
            at += [outcome.update] if outcome.update is not None else []
        elif outcome.state is not RunState.NOT_FINISHED:
            failed += 1
    low, high = min(read, default=0), max(read, default=0)
    span = "" if not read else f"update {low}" if low == high else f"updates {low}-{high}"
    return Sample(label, tuple(values), failed, diverged, missing, read=span, untestable=untestable,
                  diverged_at=tuple(sorted(at)), failure=failure, unjudged=unjudged)  # fmt: skip


def loss_at(arm: Arm, at_update: float | None, after: bool = False) -> tuple[float, int] | None:
    """The seed's valid loss - the final one, or the last at or before `at_update` (`after`: the first at or after
    it) - and the update it was read at."""
    late = after and at_update is not None
    rows = [r for r in arm.rows if is_finite(r.get("valid_loss")) and (at_update is None or (
        r.get("num_updates", 0) >= at_update if late else r.get("num_updates", 0) <= at_update))]
    row = rows[0 if late else -1] if rows else None
    return (float(row["valid_loss"]), int(row.get("num_updates", 0))) if row else None


def loss_sample(label: str, group: list[Arm], at_update: float | None = None, after: bool = False) -> Sample:
    """The trained seeds' valid loss (`loss_at`), the failed seeds counted."""
    return outcome_sample(label, group, lambda arm: loss_at(arm, at_update, after))


def at_updates(updates: list[int] | tuple[int, ...]) -> str:
    """` (update 24)`, ` (updates 24, 30)` or nothing."""
    return f" (update{'s' if len(updates) > 1 else ''} {', '.join(map(str, updates))})" if updates else ""


def outcome_counts(outcomes: list[RunOutcome]) -> str:
    """`2 trained, 1 diverged (update 24)`: an arm's seeds by their outcome."""
    parts = []
    for state in RunState:
        if hits := [o for o in outcomes if o.state is state]:
            at = [o.update for o in hits if state is RunState.DIVERGED and o.update is not None]
            parts.append(f"{len(hits)} {state.value}{at_updates(at)}")
    return ", ".join(parts) or "-"


def describe_arm(arm: Arm, settings: bool = True) -> str:
    """`Post-LN adam lr 0.001, 120 warm-up`: an arm's settings in words (its layout by prelnx.layouts' name); without
    `settings`: its method alone (`Post-LN adam`)."""
    method = display_name(arm.layout) + ("" if arm.task == "masked_lm" else f" {arm.optimizer}")
    if not settings:
        return method
    warmup = f"{arm.warmup} warm-up" if arm.warmup else "no warm-up"
    context = f" ({arm.context_label})" if arm.context_label else ""
    return f"{method} lr {arm.lr:g}, {warmup}{context}"


def seed_groups(arms: list[Arm], by: Callable[[Arm], tuple] = lambda arm: arm.key) -> dict[tuple, list[Arm]]:
    """Runs grouped by arm (everything but the seed; `by`: another key, such as the context), in the sweep's order."""
    groups: dict[tuple, list[Arm]] = {}
    for arm in arms:
        groups.setdefault(by(arm), []).append(arm)
    return groups


def matched(check: Callable[..., ClaimOutcome]) -> Callable[..., ClaimOutcome]:
    """The check decided on matched arms only (docs/verdicts.md), as every claim table's entries are: `check(arms,
    *args)` on each context of `arms` (its runs' keys outside the claims' own factors, `with_contexts`) apart, so two
    arms it compares differ only in what the claim is about. One context: the check as it is. Several: each case
    labelled with its context, the outcomes merged (cases, notes, premises); none with a case while the pooled runs
    would have one: "not measured", naming the keys the arms it needs differ in."""

    def decided(arms: list[Arm], *args: Any) -> ClaimOutcome:
        parts = list(seed_groups(arms, lambda arm: arm.context).values())  # in the sweep's order of first appearance
        if len(parts) <= 1:
            return check(arms, *args)
        outcomes = [(group[0].context_label, check(group, *args)) for group in parts]
        merged = dataclasses.replace(outcomes[0][1], cases=[], notes=[], premises=[])
        for label, outcome in outcomes:
            merged.cases += [dataclasses.replace(c, label=f"{label}: {c.label}", family=label) for c in outcome.cases]
            merged.notes += [f"{label}: {note}" for note in outcome.notes]
            merged.premises += outcome.premises
        if not merged.cases:
            pooled = check(arms, *args)
            if pooled.cases:
                keys = ", ".join(differing_keys(arms))
                merged.missing = (f"not measured: the arms this claim compares differ in {keys} (not one of its "
                                  "factors; each comparison needs the rest of the config alike)")  # fmt: skip
            else:
                merged.missing = pooled.missing
        return merged

    return decided
