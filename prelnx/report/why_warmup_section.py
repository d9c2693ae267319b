"""The report's "Why warm-up" section: the explanations' claims (prelnx.report.why_warmup) as a table with their
intervals and verdicts, the runs' outcomes, and one figure per diagnostics quantity (prelnx.plots.why_warmup).
Written only for a sweep whose runs recorded diagnostics (train.diagnostics); otherwise no section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prelnx.plots.why_warmup import INFINITE_AS, Curve, SeedSeries, why_warmup_figure
from prelnx.report.arms import Arm, final_nll, layout_names, seed_groups
from prelnx.report.render import _case_lines, _premise_lines, verdict_text
from prelnx.report.why_warmup import (
    OPTIMIZER_NAMES,
    SERIES,
    ExplanationVerdict,
    Study,
    check_explanations,
    has_diagnostics,  # fmt: skip
    load_study,
)

INTRO = [
    "Four explanations of why Post-LN needs warm-up, each with its prediction as a claim (prelnx/methods.yaml,",
    "`why_warmup`, written before the runs; docs/why_warmup.md). A run *failed* when it diverged or its final valid",
    "nll is not {margin:g} bit below the unigram plateau ({plateau}). Arm comparisons are over seeds (Welch's t, 95 %",
    "interval), the run-outcome comparisons over every run of the sweep grouped by whether it failed (there the",
    "\"seeds\" counted are runs). Verdicts as above; a claim about runs that fail cannot be decided when none (or too",
    "few) fail.",
]


def _verdict(v: ExplanationVerdict) -> str:
    if v.override is not None:
        return f"{v.override[0].value} ({v.override[1]})"
    return verdict_text(v.outcome)


def claims_table(verdicts: list[ExplanationVerdict]) -> list[str]:
    header = "| explanation | claim | measured: mean per arm or group, difference [95 % CI], claimed side | premise | verdict |"
    lines = [header, "|---|---|---|---|---|"]
    for v in verdicts:
        measured = "<br>".join(_case_lines(v.outcome)).replace("|", "/")
        premise = "<br>".join(_premise_lines(v.outcome)).replace("|", "/") or "-"
        who = f"{v.explanation['name']} ({v.explanation['cite']})"
        lines.append(f"| {who} | {v.claim['claim']} | {measured} | {premise} | **{_verdict(v)}** |")
    return lines


def claims_lines(verdicts: list[ExplanationVerdict]) -> list[str]:
    """The same as plain text for the terminal."""
    lines = []
    for v in verdicts:
        lines.append(f"{v.claim['claim']} ({v.explanation['cite']})")
        lines += [f"  {line}" for line in _case_lines(v.outcome)]
        lines.append(f"  verdict: {_verdict(v)}")
    return lines


def _panel(arm: Arm) -> str:
    return f"{layout_names().get(arm.layout, arm.layout)}, {OPTIMIZER_NAMES.get(arm.optimizer, arm.optimizer)}"


def curves(study: Study, series: str) -> list[Curve]:
    value = SERIES[series]
    found = []
    for group in seed_groups(study.arms).values():
        seeds = []
        for arm in group:
            rows = study.rows.get(arm.name) or []
            points = [(r["num_updates"], v) for r in rows if (v := value(r)) is not None]
            if points:
                seeds.append(SeedSeries(tuple(u for u, _ in points), tuple(v for _, v in points),
                                        study.failed(arm), arm.diverged))  # fmt: skip
        if seeds:
            found.append(Curve(_panel(group[0]), group[0].warmup > 0, tuple(seeds)))
    return found


def outcomes_table(study: Study) -> list[str]:
    lines = ["| arm | seeds | failed | final valid nll per seed |", "|---|---|---|---|"]
    for group in seed_groups(study.arms).values():
        done = [a for a in group if a.status in ("finished", "diverged")]
        finals = ", ".join("diverged" if a.diverged else f"{nll:.2f}" if (nll := final_nll(a)) is not None else "-"
                           for a in done)  # fmt: skip
        warmup = f"{group[0].warmup} warm-up" if group[0].warmup else "no warm-up"
        lines.append(f"| {_panel(group[0])}, lr {group[0].lr:g}, {warmup} | {len(done)} | "
                     f"{sum(study.failed(a) for a in done)} | {finals} |")  # fmt: skip
    return lines


def why_warmup_section(sweep_dir: Path, arms: list[Arm], figures_dir: Path, report_dir: Path,
                       echo: Any = None) -> list[str]:  # fmt: skip
    from prelnx.paper import explanations_data

    spec = explanations_data()
    study = load_study(sweep_dir, arms, float(spec["trained_margin_bits"]))
    if not has_diagnostics(study):
        return []
    verdicts = check_explanations(study, spec, layout_names())
    if echo is not None:
        for line in claims_lines(verdicts):
            echo(line)
    plateau = f"{study.plateau:.2f} bits" if study.plateau is not None else "unknown: the dictionary is not here"
    lines = ["## Why warm-up", "", *[line.format(margin=study.margin, plateau=plateau) for line in INTRO], "",
             *claims_table(verdicts), "", "### Runs by outcome", "", *outcomes_table(study), "",
             "### The quantities over training", "",
             f"lr x lambda_c is infinite where the loss rose at every step down the update; drawn at {INFINITE_AS:g}.", ""]  # fmt: skip
    for index, series in enumerate(SERIES):
        found = curves(study, series)
        if found:
            edge = 2.0 if series == "lr x lambda_c" else None
            path = why_warmup_figure(found, series, figures_dir / f"why_warmup_{index}.png", edge)
            lines += [f"![{series}]({path.relative_to(report_dir).as_posix()})", ""]
    return lines

