"""The explanations of warm-up on one sweep's runs (issues 31, 38, 49; configs/sweeps/why_warmup_edge.yaml): the
`arm_difference` claims of methods.yaml's `why_warmup` (arm a minus arm b over seeds, per lr and warm-up; premise:
Post-LN with Adam fails there without warm-up), each run's stratum (`schedule_key`), cell (every factor fixed per run
but the seed: records.run_config.arm_values) and continuous outcome (`worse`). "X trains where Y fails" does not hold
when X never trained either (>= 2 seeds) while the premise holds: a claim of training, not of how much better."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.config.load import config_to_dict
from prelnx.records.diagnostics import read_diagnostics
from prelnx.records.results import is_finite, read_index
from prelnx.layouts import display_name
from prelnx.report.arms import Arm, describe_arm, final_nll, loss_sample, pick
from prelnx.report.claims import premise_state
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState
from prelnx.report.render import verdict_text
from prelnx.report.stats import Sample, Verdict, above, below, compare

Row = dict[str, Any]
OPTIMIZER_NAMES = {"adam": "Adam", "gi_adam": "GI-Adam", "adam_no_bias_correction": "Adam without bias correction"}
QUANTITY_NAMES = {
    "final_loss": "final valid loss (bits)",
    "last_grad_log10": "log10 gradient norm, decoder's last FFN",
    "overshoot_share": "share of sharpness measurements with lr x lambda_c > 2",
    "update_ratio_log10": "log10 median update / weight",
    "attn_logit_max": "largest attention logit",
    "lr_sharpness_max": "largest lr x lambda_c",
    "early_lr": "mean lr (the schedule alone)",
}


# Per-row reductions (also the figures' series): one value per measured update, None where not measured.
def last_ffn_grad(row: Row) -> float | None:
    norms = row.get("grad_norm") or {}
    layers = [int(g.split(".")[1]) for g in norms if g.startswith("decoder.") and g.endswith(".ffn")
              and g.split(".")[1].isdigit()]  # fmt: skip
    value = norms.get(f"decoder.{max(layers)}.ffn") if layers else None
    return float(value) if is_finite(value) else None


def median_update_ratio(row: Row) -> float | None:
    values = [float(v) for v in (row.get("update_ratio") or {}).values() if is_finite(v) and v > 0]
    return statistics.median(values) if values else None


def max_attention_logit(row: Row) -> float | None:
    values = [float(v) for v in (row.get("attn_logit_max") or {}).values() if is_finite(v)]
    return max(values) if values else None


def lr_sharpness(row: Row) -> float | None:
    """lr x lambda_c; infinite where the loss rose at every step down (not a descent direction on the batch)."""
    if is_finite(row.get("lambda_c")) and is_finite(row.get("lr")):
        return float(row["lambda_c"]) * float(row["lr"])
    note = row.get("sharpness_note") or ""
    return math.inf if "rises at every step" in note else None


# quantity -> (its per-row series, whether it is read as log10, the reduction over the updates read)
REDUCED: dict[str, tuple[Callable[[Row], float | None], bool, Callable[[list[float]], float]]] = {
    "last_grad_log10": (last_ffn_grad, True, statistics.fmean),
    "update_ratio_log10": (median_update_ratio, True, statistics.fmean),
    "attn_logit_max": (max_attention_logit, False, max),
    "lr_sharpness_max": (lr_sharpness, False, max),
    "early_lr": (lambda row: float(row["lr"]) if is_finite(row.get("lr")) else None, False, statistics.fmean),
}
SERIES = {"last_grad_log10": "grad_norm (decoder's last FFN)", "update_ratio_log10": "median update / weight",
          "attn_logit_max": "largest attention logit", "lr_sharpness_max": "lr x lambda_c"}  # the figures' series


def run_quantity(quantity: str, rows: list[Row], updates: list[int] | None) -> float | None:
    """One run's value of a diagnostics quantity over `updates` (None: not measured there)."""
    rows = [r for r in rows if updates is None or updates[0] <= r["num_updates"] <= updates[1]]
    if quantity == "overshoot_share":
        measured = [r for r in rows if r.get("sharpness_passes") is not None]
        if not measured:
            return None
        return sum((s := lr_sharpness(r)) is not None and s > 2 for r in measured) / len(measured)
    if quantity not in REDUCED:
        raise ValueError(f"unknown quantity {quantity!r} (valid: {', '.join(QUANTITY_NAMES)})")
    series, log, reduce = REDUCED[quantity]
    values = [math.log10(v) if log else v for r in rows if (v := series(r)) is not None and (not log or v > 0)]
    return reduce(values) if values else None


@dataclass
class Study:
    """The sweep's runs with their diagnostics rows, and what decides whether a run failed."""

    arms: list[Arm]
    rows: dict[str, list[Row]]
    margin: float  # trained_margin_bits
    schedules: dict[str, str] = field(default_factory=dict)  # run -> its whole lr schedule in words (its stratum)
    cells: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # run -> the keys that vary, values
    sweep: str = ""  # the sweep's name (sweep.json): its entry in methods.yaml's prediction.studies, if any

    @property
    def plateau(self) -> float | None:
        return max((a.plateau for a in self.arms if a.plateau is not None), default=None)

    def failed(self, arm: Arm) -> bool:
        nll = final_nll(arm)
        return nll is None or (self.plateau is not None and nll > self.plateau - self.margin)

    def worse(self, arm: Arm) -> tuple[int, float]:
        """The continuous outcome, larger = worse: (0, final valid nll); diverged: (1, -its update), earlier worse."""
        if arm.diverged:
            return 1, -float(arm.diverged_at if arm.diverged_at is not None else 0)
        nll = final_nll(arm)
        last = float(arm.rows[-1].get("num_updates", 0)) if arm.rows else 0.0
        return (0, nll) if nll is not None else (1, -last)  # no finite nll: as if it diverged at its last row

    def arm(self, spec: dict[str, Any], lr: float, warmup: int | None = None) -> list[Arm]:
        runs = pick(self.arms, layout=spec["layout"], optimizer=spec["optimizer"], lr=lr)
        return [a for a in runs if (a.warmup > 0) == bool(spec["warmup"]) and warmup in (None, a.warmup)]


def schedule_key(config: dict[str, Any]) -> str:
    """A run's whole lr schedule in words: runs with the same key share a stratum."""
    schedule = dict(config.get("schedule") or {})
    warmup = int(schedule.pop("warmup_updates", 0) or 0)
    start = schedule.pop("warmup_init_lr", None)
    lr = float((config.get("optimizer") or {}).get("lr"))
    words = [f"lr {lr:g}", f"{warmup} warm-up updates" + (f" from {float(start):g}" if warmup and start else "")
             if warmup else "no warm-up"]  # fmt: skip
    decay = schedule.pop("decay", None)
    words += [f"decay {decay}"] if decay else []
    words += [f"{key} {value}" for key, value in sorted(schedule.items()) if value not in (None, [])]
    return ", ".join(words)


def stratum_label(key: str) -> str:
    """The stratum as a report names it: peak lr, warm-up, decay (the key's first three parts)."""
    return ", ".join(key.split(", ")[:3])


def load_study(sweep_dir: Path, arms: list[Arm], margin: float) -> Study:
    read = [a for a in arms if a.config is not None]  # a run without its config has no stratum and no cell
    schedules = {a.name: schedule_key(config_to_dict(a.config)) for a in read}
    factors = {a.name: {k: repr(json.loads(v)) for k, v in a.values.items()}  # every training key but the seed
               for a in read}  # (records.run_config.arm_values: keys that cannot change training)
    keys = sorted({k for f in factors.values() for k in f})
    varied = [k for k in keys if len({f.get(k) for f in factors.values()}) > 1]
    cells = {name: tuple((k, f.get(k, "-")) for k in varied) for name, f in factors.items()}
    return Study(arms, {a.name: read_diagnostics(sweep_dir / a.name) for a in arms}, margin, schedules, cells,
                 read_index(sweep_dir)["name"])  # fmt: skip


def arm_name(layout: str, optimizer: str) -> str:
    """`Post-LN GI-Adam`: a run's arm as the why-warm-up tables name it."""
    return f"{display_name(layout)} {OPTIMIZER_NAMES.get(optimizer, optimizer)}"


def arm_label(spec: dict[str, Any], lr: float, warmup_updates: int | None = None) -> str:
    warmup = (f"{warmup_updates} warm-up" if warmup_updates else "with warm-up") if spec["warmup"] else "no warm-up"
    return f"{arm_name(spec['layout'], spec['optimizer'])} lr {lr:g}, {warmup}"


@dataclass(frozen=True)
class ExplanationVerdict:
    """One claim of one explanation: its outcome, and the verdict with why when not the engine's (`override`)."""

    explanation: dict[str, Any]
    claim: dict[str, Any]
    outcome: ClaimOutcome
    override: tuple[Verdict, str] | None = None

    @property
    def verdict(self) -> Verdict:
        return self.override[0] if self.override else self.outcome.verdict

    @property
    def text(self) -> str:
        return f"{self.override[0].value} ({self.override[1]})" if self.override else verdict_text(self.outcome)


def _premise(study: Study, spec: dict[str, Any], lr: float) -> Premise:
    """At this lr, the premise's arm (Post-LN Adam, no warm-up) fails: "X trains where it fails" needs it to."""
    statement = ("At this lr Post-LN with Adam fails without warm-up (its final valid nll not more than "
                 f"{study.margin:g} bit below the unigram plateau).")  # fmt: skip
    fails = study.arm(spec["fails"], lr)
    if not fails or study.plateau is None:
        why = "no unigram plateau (dictionary not here)" if study.plateau is None else "the sweep lacks this arm"
        return Premise(statement, PremiseState.UNCHECKED, why)
    values = tuple(nll - study.plateau if (nll := final_nll(a)) is not None else 0.0 for a in fails)
    c = compare("final valid nll minus the plateau", Sample(describe_arm(fails[0]), values), None, above(-study.margin))
    state = premise_state(c)
    interval = "" if c.one_seed else f" [95 % CI {c.low:+.2f}, {c.high:+.2f}]"
    note = (f"{arm_label(spec['fails'], lr)} fails: final nll minus the plateau ({study.plateau:.2f}) "
            f"{c.estimate:+.2f}{interval} ({len(fails)} seeds) → {state.value}")
    return Premise(statement, state, note)


def _sample(study: Study, label: str, group: list[Arm], quantity: str, updates: list[int] | None) -> Sample:
    if quantity == "final_loss":
        return loss_sample(label, group)
    values = [v for a in group if (v := run_quantity(quantity, study.rows.get(a.name, []), updates)) is not None]
    return Sample(label, tuple(values))


def arm_difference(study: Study, spec: dict[str, Any], claim: dict[str, Any],
                   explanation: dict[str, Any]) -> ExplanationVerdict:
    outcome = ClaimOutcome(claim["id"], missing="not measured: the sweep has no runs of these arms")
    region = above(claim["margin"]) if claim["side"] == "above" else below(claim["margin"])
    override = None
    for lr, warmup in sorted({(a.lr, a.warmup) for a in study.arms}):  # warm-up lengths are never pooled
        a, b = study.arm(claim["a"], lr, warmup), study.arm(claim["b"], lr, warmup)
        sa = _sample(study, arm_label(claim["a"], lr, warmup), a, claim["quantity"], claim.get("updates"))
        sb = _sample(study, arm_label(claim["b"], lr, warmup), b, claim["quantity"], claim.get("updates"))
        if not sa.n or not sb.n:
            continue
        premise = _premise(study, spec["premise"], lr) if claim["quantity"] == "final_loss" else None
        case = f"lr {lr:g}" + (f", {warmup} warm-up updates" if warmup else "")
        outcome.cases.append(Case(case, compare(QUANTITY_NAMES[claim["quantity"]], sa, sb, region), premise))
        never_trained = sb.n >= 2 and not any(not study.failed(r) for r in b)
        if premise is not None and premise.state is PremiseState.MET and never_trained:
            why = (f"at lr {lr:g} {sb.label} failed in every seed too (none ended more than {study.margin:g} bit "
                   "below the plateau), while the premise holds: it does not train where the other fails")
            override = (Verdict.DOES_NOT_HOLD, why)
    return ExplanationVerdict(explanation, claim, outcome, override)
