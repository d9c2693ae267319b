"""report.md of a whole reproduction, from its run dirs alone (prelnx/report's checks and tables, reused): every
claim of the paper with its verdict, one section per stage, the premise sweeps, the compute used, the machine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.eta import duration
from prelnx.finetune.summary import SUMMARY_MD
from prelnx.launch.environment import environment
from prelnx.machine import load_average
from prelnx.paper import paper_data
from prelnx.records.results import sweep_rows
from prelnx.report.arms import load_arms
from prelnx.report.claims import BERT_CHECKS, TRAINING_CHECKS
from prelnx.report.outcome import ClaimOutcome, check_claims
from prelnx.report.render import claims_table
from prelnx.report.stats import Verdict
from prelnx.report.theory_claims import (
    GRADIENT_CHECKS,
    check_theory,
    gradient_claims,
    load_gradient_summary,
    load_theory_summary,
    theory_claims,
)
from prelnx.reproduce.choose import read_choice, unchosen
from prelnx.reproduce.plan import read_marker
from prelnx.reproduce.scales import CLAIM_STAGES, SCALES, Stage
from prelnx.sweep.status import is_sweep_dir

TOY = {
    "demo": ("A smoke reproduction: every stage at toy size (minutes on 2 cores). Toy scale decides little: one seed "
             "per arm leaves every translation claim inconclusive by construction, and a premise that fails at this "
             "size makes its claim 'not testable here'. What it shows is that every stage of the paper runs, end to "
             "end, and what each verdict would rest on."),
    "cpu": ("The studies of docs/protocols/paper_cpu.md, in its order (docs/results/*.md hold committed runs of "
            "them); a study whose premise rule chooses nothing is not run, and its claim is not testable here."),
    "paper": "The paper's own configs, on GPUs.",
}  # fmt: skip


def _outcomes(out: Path, scale: str, family: str, claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The family's claims decided on its stages' runs; when its stage was not run because its premise stage's rule
    chose nothing (Stage.skip_unless_chosen): not testable at this scale, with the premise runs as the evidence."""
    for stage in SCALES[scale]:
        choice = read_choice(out / stage.name) if stage.name in CLAIM_STAGES[family] else None
        if stage.skip_unless_chosen and choice is not None and not choice.chosen:
            why = f"stage {stage.name} not run: the rule of {', '.join(stage.after)} chose nothing"
            evidence = f"the premise runs ({', '.join(stage.after)}): " + "; ".join(choice.evidence)
            return {c["id"]: ClaimOutcome(c["id"], missing=evidence, untestable=why) for c in claims}
    folders = [out / name for name in CLAIM_STAGES[family] if (out / name).is_dir()]
    if family == "gradients":
        if not folders or not (folders[0] / "grads_summary.json").is_file():
            return {c["id"]: ClaimOutcome(c["id"], missing="the gradient stage has not run") for c in claims}
        return check_claims(claims, GRADIENT_CHECKS, load_gradient_summary(folders[0]))
    arms = [arm for folder in folders if is_sweep_dir(folder) for arm in load_arms(folder)]
    if not arms:
        return {c["id"]: ClaimOutcome(c["id"], missing="its stage has not run (or not here)") for c in claims}
    checks = TRAINING_CHECKS if family == "training" else BERT_CHECKS
    task = "translation" if family == "training" else "masked_lm"
    return check_claims(claims, checks, [a for a in arms if a.task == task])


def _replication(folder: Path) -> list[str]:
    """A gradient stage the claims table does not read (study B2): the claims its own seeds decide, as a table."""
    if not (folder / "grads_summary.json").is_file() or not (folder / "grads.csv").is_file():
        return []
    claims = gradient_claims()
    outcomes = check_claims(claims, GRADIENT_CHECKS, load_gradient_summary(folder))
    measured = [c for c in claims if outcomes[c["id"]].verdict is not Verdict.NOT_MEASURED]
    return ["", f"This stage's own verdicts, on its seeds alone (a replication: it does not pool with stage "
            f"{CLAIM_STAGES['gradients'][0]}, whose verdicts the table of every claim shows):", "",
            *claims_table(measured, outcomes)]  # fmt: skip


def _theory_rows(out: Path) -> list[str]:
    """Lemma 1's claims decided from the theory stage's per-seed rows (prelnx.report.theory_claims, the rule
    `prelnx theory` prints), then LayerNorm's Jacobian: table rows under the claims table's header."""
    folder = out / "theory"
    if not (folder / "theory_summary.json").is_file() or not (folder / "theory_hidden.csv").is_file():
        return ["| The mean-field results (Lemmas 1-2, LayerNorm's Jacobian) | Section 3.3 | - | the theory stage has not run | - | not measured |"]
    s = load_theory_summary(folder)
    jacobian = 0.5 <= s["jacobian_ratio_min"] and s["jacobian_ratio_max"] <= 2.0
    return claims_table(theory_claims(), check_theory(s))[2:] + [
        f"| LayerNorm's Jacobian scales as sqrt(d)/‖x‖ | Section 3.3, Lemma 2 | {s['paper']['layernorm']} | ratio "
        f"{s['jacobian_ratio_min']:.3f} to {s['jacobian_ratio_max']:.3f} (band 0.5-2) | - | "
        f"{'**holds**' if jacobian else '**does not hold**'} |",
    ]  # fmt: skip


def _test_bleu(out: Path, stage: Stage) -> list[str]:
    """The evaluate stage: each run's test BLEU, read from the sweeps it evaluated."""
    rows = [(name, row) for name in stage.options["of"] if is_sweep_dir(out / name) for row in sweep_rows(out / name)]
    if not any(row.get("test_bleu_tokenized") is not None for _, row in rows):
        return []
    lines = ["| stage | run | status | test BLEU (tokenized) | SacreBLEU |", "|---|---|---|---|---|"]
    for name, row in rows:
        bleu, sacre = row.get("test_bleu_tokenized"), row.get("test_sacrebleu")
        lines.append(f"| {name} | {row['run']} | {row['status']} | {'-' if bleu is None else f'{bleu:.2f}'} | "
                     f"{'-' if sacre is None else f'{sacre:.2f}'} |")  # fmt: skip
    return lines


def _finetunings(out: Path, stage: Stage, report: Path) -> list[str]:
    """The finetune stage: each fine-tuning summary under the pre-trained runs (prelnx finetune writes them there)."""
    found = sorted((out / stage.options["pretrained"]).glob(f"*/finetune/*/{SUMMARY_MD}"))
    return [f"- [{os.path.relpath(path, report.parent)}]({os.path.relpath(path, report.parent)})" for path in found]


def _stage_section(out: Path, stage: Stage, report: Path) -> list[str]:
    folder = out / stage.name
    lines = [f"### {stage.figure} (stage `{stage.name}`)", ""]
    if stage.kind in ("evaluate", "finetune"):
        found = _test_bleu(out, stage) if stage.kind == "evaluate" else _finetunings(out, stage, report)
        return lines + (found or ["Not run."]) + [""]
    if not folder.is_dir():
        return lines + ["Not run.", ""]
    rel = lambda p: os.path.relpath(p, report.parent)
    for name in ("report.md", SUMMARY_MD):
        if (folder / name).is_file():
            lines.append(f"The stage's own report: [{rel(folder / name)}]({rel(folder / name)}).")
    for png in sorted(folder.glob("*.png")) + sorted((folder / "report_figures").glob("loss.png")):
        lines.append(f"![{png.stem}]({rel(png)})")
    if stage.kind == "grads" and stage.name not in CLAIM_STAGES["gradients"]:
        lines += _replication(folder)
    if (folder / "summary.md").is_file():
        lines += ["", (folder / "summary.md").read_text().strip()]
    if (choice := read_choice(folder)) is not None:
        lines += ["", f"Chosen from {', '.join(stage.after)} by the committed rule: {choice.rule}.",
                  f"**Choice: {choice.outcome}**", "", *[f"- {line}" for line in choice.evidence]]  # fmt: skip
    return lines + [""]


def write_summary(out: Path, scale: str) -> Path:
    """Write out/report.md from the run dirs under `out`; returns its path."""
    report = out / "report.md"
    claims = paper_data()
    families = ("training", "gradients", "bert")
    outcomes = {k: v for family in families for k, v in _outcomes(out, scale, family, claims[family]).items()}
    every = [claim for family in families for claim in claims[family]]
    lines = [f"# Xiong et al. 2020 reproduced at scale `{scale}`", "",
             f"Made by `prelnx reproduce --scale {scale}` in this folder; every number below is read from the run "
             "dirs under it (run the command again to regenerate this report: complete stages are not retrained).",
             "", TOY[scale], "", "## Every claim of the paper", "",
             "Each claim of prelnx/paper.yaml (translation, gradients, BERT) and the theory checks, with the figure "
             "it is stated in, what was measured (difference and 95 % interval over seeds, or why there is none) "
             "and the verdict (prelnx report's rules: see any stage's report for the method).", ""]  # fmt: skip
    lines += claims_table(every, outcomes) + _theory_rows(out) + ["", "## Per figure", ""]
    premises = [s for s in SCALES[scale] if "premise" in s.name]
    for stage in SCALES[scale]:
        if stage not in premises:
            lines += _stage_section(out, stage, report)
    lines += ["## Premise sweeps", "", "Run before the arms they choose; each rule is committed in the sweep's YAML "
              "header and applied by code (prelnx/reproduce/choose.py).", ""]  # fmt: skip
    for stage in premises:
        lines += _stage_section(out, stage, report)
    plan_file = out / "plan.txt"
    said = [line for line in plan_file.read_text().splitlines() if line.startswith(("estimate:", "load average"))] \
        if plan_file.is_file() else []  # fmt: skip
    lines += ["## Compute used per stage", "", "Wall time of the attempt that completed each stage, against the plan's "
              "estimate (" + ("; ".join(said) or "no plan.txt") + ").", "",
              "| stage | kind | wall time | estimated before | runs |", "|---|---|---|---|---|"]  # fmt: skip
    not_run: set[str] = set()  # a rule that chose nothing, and every stage after such a stage (run.py's outcome)
    for stage in SCALES[scale]:
        done = read_marker(out, stage.name)
        if done is None and (unchosen(out / stage.name) if stage.skip_unless_chosen else not_run & set(stage.after)):
            not_run.add(stage.name)
            lines.append(f"| {stage.name} | {stage.kind} | not run | - | - |")
        elif done is None:
            lines.append(f"| {stage.name} | {stage.kind} | not complete | - | - |")
        else:
            lines.append(f"| {stage.name} | {stage.kind} | {duration(done['seconds'])} | "
                         f"{duration(done['estimated_seconds']) if done.get('estimated_seconds') else '-'} | {done.get('runs') or '-'} |")  # fmt: skip
    lines += ["", "## Versions and machine", "", *(f"- {what}: {value}" for what, value in environment()),
              f"- load average when the report was written: {load_average()}", ""]  # `prelnx env`'s lines, the load
    write_text_atomic(report, "\n".join(lines) + "\n")
    return report
