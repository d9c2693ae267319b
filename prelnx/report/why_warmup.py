"""The explanations of warm-up decided on one sweep's runs (issues 31 and 38; configs/sweeps/why_warmup_strata.yaml).

Each explanation's prediction is a claim in prelnx/methods.yaml (`why_warmup`, read through prelnx.paper), with its
quantity, the updates it is read over, its arms, and its margin, written before the runs. A quantity is one number
per run, from its diagnostics.jsonl (prelnx.records.diagnostics; the plugin owns the rows' keys) or its final valid
loss:

- final_loss: the final valid loss (bits), a diverged seed at the sweep's failure loss (prelnx.report.arms);
- last_grad_log10: mean over the measured updates in `updates` of log10 grad_norm of the decoder's last FFN
  sublayer (`decoder.<last>.ffn`), the layer Xiong et al.'s Theorem 1 is about;
- lr_sharpness_max: the largest lr x lambda_c over `updates` (infinite where the loss rose at every step down);
- overshoot_share: the share of the sharpness measurements in `updates` with lr x lambda_c > 2 (issue 31's);
- update_ratio_log10: mean over `updates` of log10 of the median over groups of ||delta w|| / ||w||;
- attn_logit_max: the largest attention logit over `updates` and attention modules;
- early_lr: the mean lr over `updates`, the schedule alone (the predictive claims' baseline).

A run FAILED when it diverged or its final valid nll is not `trained_margin_bits` below the unigram plateau. This
module decides the `arm_difference` claims (arm a minus arm b over seeds, per lr: prelnx.report.stats) with their
premise (at that lr Post-LN with Adam fails without warm-up), and gives every run its stratum (`schedule_key`: the
whole lr schedule); prelnx.report.why_warmup_predict decides the `predicts_failure` claims. "X trains where Y fails"
with X never trained either (in >= 2 seeds: one seed is never a verdict), while the premise holds, does not hold:
the engine's rule that two dead arms decide nothing is for claims about how much better; this one is about training.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from prelnx.records.diagnostics import read_diagnostics
from prelnx.report.arms import Arm, describe_arm, final_nll, loss_sample, pick, plateau
from prelnx.report.outcome import Case, ClaimOutcome, Premise, PremiseState
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


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _in(row: Row, updates: list[int] | None) -> bool:
    return updates is None or updates[0] <= row["num_updates"] <= updates[1]


# Per-row reductions (also the figures' series): one value per measured update, None where not measured.
def last_ffn_grad(row: Row) -> float | None:
    norms = row.get("grad_norm") or {}
    layers = [int(g.split(".")[1]) for g in norms if g.startswith("decoder.") and g.endswith(".ffn")
              and g.split(".")[1].isdigit()]  # fmt: skip
    value = norms.get(f"decoder.{max(layers)}.ffn") if layers else None
    return float(value) if _finite(value) else None


def median_update_ratio(row: Row) -> float | None:
    values = [float(v) for v in (row.get("update_ratio") or {}).values() if _finite(v) and v > 0]
    return statistics.median(values) if values else None


def max_attention_logit(row: Row) -> float | None:
    values = [float(v) for v in (row.get("attn_logit_max") or {}).values() if _finite(v)]
    return max(values) if values else None


def lr_sharpness(row: Row) -> float | None:
    """lr x lambda_c; infinite where the loss rose at every step down (not a descent direction on the batch)."""
    if _finite(row.get("lambda_c")) and _finite(row.get("lr")):
        return float(row["lambda_c"]) * float(row["lr"])
    note = row.get("sharpness_note") or ""
    return math.inf if "rises at every step" in note else None


SERIES: dict[str, Callable[[Row], float | None]] = {
    "grad_norm (decoder's last FFN)": last_ffn_grad, "median update / weight": median_update_ratio,
    "largest attention logit": max_attention_logit, "lr x lambda_c": lr_sharpness,
}  # fmt: skip


def run_quantity(quantity: str, rows: list[Row], updates: list[int] | None) -> float | None:
    """One run's value of a diagnostics quantity over `updates` (None: not measured there)."""
    rows = [r for r in rows if _in(r, updates)]
    if quantity == "last_grad_log10":
        values = [math.log10(v) for r in rows if (v := last_ffn_grad(r)) and v > 0]
        return statistics.fmean(values) if values else None
    if quantity == "update_ratio_log10":
        values = [math.log10(v) for r in rows if (v := median_update_ratio(r))]
        return statistics.fmean(values) if values else None
    if quantity == "attn_logit_max":
        values = [v for r in rows if (v := max_attention_logit(r)) is not None]
        return max(values) if values else None
    if quantity == "lr_sharpness_max":
        values = [v for r in rows if (v := lr_sharpness(r)) is not None]
        return max(values) if values else None
    if quantity == "early_lr":
        values = [float(r["lr"]) for r in rows if _finite(r.get("lr"))]
        return statistics.fmean(values) if values else None
    if quantity == "overshoot_share":
        measured = [r for r in rows if r.get("sharpness_passes") is not None]
        if not measured:
            return None
        return sum((s := lr_sharpness(r)) is not None and s > 2 for r in measured) / len(measured)
    raise ValueError(f"unknown quantity {quantity!r} (valid: {', '.join(QUANTITY_NAMES)})")


@dataclass
class Study:
    """The sweep's runs with their diagnostics rows, and what decides whether a run failed."""

    arms: list[Arm]
    rows: dict[str, list[Row]]
    margin: float  # trained_margin_bits
    schedules: dict[str, str] = field(default_factory=dict)  # run -> its whole lr schedule in words (its stratum)
    plateau: float | None = field(init=False)
    failure: float = field(init=False)

    def __post_init__(self) -> None:
        self.plateau = plateau(self.arms)

    def failed(self, arm: Arm) -> bool:
        nll = final_nll(arm)
        return nll is None or (self.plateau is not None and nll > self.plateau - self.margin)

    def arm(self, spec: dict[str, Any], lr: float) -> list[Arm]:
        runs = pick(self.arms, layout=spec["layout"], optimizer=spec["optimizer"], lr=lr)
        return [a for a in runs if (a.warmup > 0) == bool(spec["warmup"])]


def schedule_key(config: dict[str, Any]) -> str:
    """A run's whole lr schedule (peak lr, warm-up and its start lr, decay and its settings), in words: runs with the
    same key share a stratum (prelnx.report.why_warmup_predict)."""
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
    schedules = {}
    for arm in arms:
        try:
            schedules[arm.name] = schedule_key(yaml.safe_load((sweep_dir / arm.name / "config.yaml").read_text()))
        except (OSError, yaml.YAMLError, TypeError, ValueError):  # a run without its config has no stratum
            continue
    return Study(arms, {a.name: read_diagnostics(sweep_dir / a.name) for a in arms}, margin, schedules)


def has_diagnostics(study: Study) -> bool:
    return any(study.rows.values())


def arm_label(spec: dict[str, Any], lr: float, names: dict[str, str]) -> str:
    layout = names.get(spec["layout"], spec["layout"])
    warmup = "with warm-up" if spec["warmup"] else "no warm-up"
    return f"{layout} {OPTIMIZER_NAMES.get(spec['optimizer'], spec['optimizer'])} lr {lr:g}, {warmup}"


@dataclass(frozen=True)
class ExplanationVerdict:
    """One claim of one explanation: its outcome (cases with premises), its verdict and why, when the engine's
    verdict was not the one (too few runs in a group; the arm claimed to train never trained)."""

    explanation: dict[str, Any]
    claim: dict[str, Any]
    outcome: ClaimOutcome
    override: tuple[Verdict, str] | None = None

    @property
    def verdict(self) -> Verdict:
        return self.override[0] if self.override else self.outcome.verdict


def _premise(study: Study, spec: dict[str, Any], lr: float, names: dict[str, str]) -> Premise:
    """At this lr, the premise's arm (Post-LN Adam, no warm-up) fails: "X trains where it fails" needs it to."""
    statement = ("At this lr Post-LN with Adam fails without warm-up (its final valid nll not more than "
                 f"{study.margin:g} bit below the unigram plateau).")  # fmt: skip
    fails = study.arm(spec["fails"], lr)
    if not fails or study.plateau is None:
        why = "no unigram plateau (dictionary not here)" if study.plateau is None else "the sweep lacks this arm"
        return Premise(statement, PremiseState.UNCHECKED, why)
    region = above(-study.margin)
    values = tuple(nll - study.plateau if (nll := final_nll(a)) is not None else 0.0 for a in fails)
    c = compare("final valid nll minus the plateau", Sample(describe_arm(fails[0]), values), None, region)
    state = (PremiseState.MET if region[0] < c.estimate < region[1] else PremiseState.FAILED) if c.one_seed \
        else {Verdict.HOLDS: PremiseState.MET, Verdict.DOES_NOT_HOLD: PremiseState.FAILED}.get(c.verdict, PremiseState.UNSETTLED)  # fmt: skip
    interval = "" if c.one_seed else f" [95 % CI {c.low:+.2f}, {c.high:+.2f}]"
    note = (f"{arm_label(spec['fails'], lr, names)} fails: final nll minus the plateau ({study.plateau:.2f}) "
            f"{c.estimate:+.2f}{interval} ({len(fails)} seeds) → {state.value}")
    return Premise(statement, state, note)


def _sample(study: Study, label: str, group: list[Arm], quantity: str, updates: list[int] | None) -> Sample:
    if quantity == "final_loss":
        return loss_sample(label, group)
    values = [v for a in group if (v := run_quantity(quantity, study.rows.get(a.name, []), updates)) is not None]
    return Sample(label, tuple(values))


def arm_difference(study: Study, spec: dict[str, Any], claim: dict[str, Any], names: dict[str, str],
                   explanation: dict[str, Any]) -> ExplanationVerdict:  # fmt: skip
    outcome = ClaimOutcome(claim["id"], missing="not measured: the sweep has no runs of these arms")
    region = above(claim["margin"]) if claim["side"] == "above" else below(claim["margin"])
    override = None
    for lr in sorted({a.lr for a in study.arms}):
        a, b = study.arm(claim["a"], lr), study.arm(claim["b"], lr)
        sa = _sample(study, arm_label(claim["a"], lr, names), a, claim["quantity"], claim.get("updates"))
        sb = _sample(study, arm_label(claim["b"], lr, names), b, claim["quantity"], claim.get("updates"))
        if not sa.n or not sb.n:
            continue
        premise = _premise(study, spec["premise"], lr, names) if claim["quantity"] == "final_loss" else None
        outcome.cases.append(Case(f"lr {lr:g}", compare(QUANTITY_NAMES[claim["quantity"]], sa, sb, region), premise))
        never_trained = sb.n >= 2 and not any(not study.failed(r) for r in b)
        if premise is not None and premise.state is PremiseState.MET and never_trained:
            why = (f"at lr {lr:g} {sb.label} failed in every seed too (none ended more than {study.margin:g} bit "
                   "below the plateau), while the premise holds: it does not train where the other fails")
            override = (Verdict.DOES_NOT_HOLD, why)
    return ExplanationVerdict(explanation, claim, outcome, override)


def check_explanations(study: Study, spec: dict[str, Any], names: dict[str, str]) -> list[ExplanationVerdict]:
    """Every arm claim of every explanation in methods.yaml's why_warmup, decided on the study's runs (the
    predictive claims: prelnx.report.why_warmup_predict)."""
    verdicts = []
    for explanation in spec["explanations"]:
        for claim in explanation["claims"]:
            if claim["kind"] == "arm_difference":
                verdicts.append(arm_difference(study, spec, claim, names, explanation))
            elif claim["kind"] != "predicts_failure":  # decided by prelnx.report.why_warmup_predict
                raise ValueError(f"methods.yaml why_warmup claim {claim['id']}: unknown kind {claim['kind']!r} "
                                 "(valid: arm_difference, predicts_failure)")  # fmt: skip
    return verdicts
