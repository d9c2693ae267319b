"""`prelnx report`: a markdown report of a sweep (and optionally a gradient study) beside the paper's claims: the
claims with their verdicts (prelnx.report.claims and the modules it names; rendered by .render), the arms' means,
the per-seed results, the curves and, when present, fine-tunings and the gradient study."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.console import results
from prelnx.exits import Refusal
from prelnx.finetune.summary import SUMMARY_JSON, format_mean
from prelnx.paper import paper_data
from prelnx.plots.curves import plot
from prelnx.records.frozen_claims import changed_claims, current_claims, read_frozen
from prelnx.records.lock import held
from prelnx.records.outcome import RunStatus
from prelnx.records.results import SUMMARY_LOCK, read_index
from prelnx.report.arms import load_arms, trained_margin
from prelnx.report.claims import BERT_CHECKS, paper_outcomes
from prelnx.report.machines import machines_section
from prelnx.report.norm_claims import layernorm_arms, norm_section
from prelnx.report.outcome import ClaimOutcome, check_claims
from prelnx.report.placements import methods_sections
from prelnx.report.render import arms_table, claims_table, claims_text
from prelnx.report.sequential import how_decided
from prelnx.report.stats import POWER, Verdict
from prelnx.report.theory_claims import GRADIENT_CHECKS, load_gradient_summary
from prelnx.report.why_warmup_section import why_warmup_section
from prelnx.sweep.execute import summarize

log = logging.getLogger(__name__)


class ReportError(Refusal):
    """Bad input to `prelnx report` (not a sweep dir, no --grads folder): one error line, exit 2."""


# The claims' legend: every rule a verdict is decided by (prelnx.report.arms, .stats, .outcome).
CLAIMS_INTRO = [
    "Each claim as the paper states it and what this sweep measured. A run's outcome is computed once: **trained**",
    (f"(finished with its final valid nll at least {trained_margin():g} bit below the unigram plateau - "
    "`trained_margin_bits` in"),
    "prelnx/paper.yaml, used by every claim that states no margin of its own), **failed to train** (finished above",
    "that, or with a loss that is not finite), **diverged** (with its update), **no validation row** (finished",
    "without one: counted and shown, in no test). Without a unigram plateau (no dictionary, no readable binarized",
    "training set) no run can be judged and a claim that needs it is not testable. Every line names its metric,",
    "the update(s) read, each arm's seeds by outcome and the test used; no failed seed is ever given a loss.",
    "A comparison is decided in one way for every claim kind: the failure counts by Fisher's exact test, one-sided",
    "at 0.025 (the level a 95 % interval implies) - a run that failed is worse than any that trained, so a",
    "significant difference decides the claim - and otherwise the quality of the seeds that trained by Welch's t",
    "95 % interval (one-sample t for a single arm) against the claim's practical margin (paper.yaml), which needs",
    ">= 2 trained seeds in each arm. Holds: the interval lies on the claimed side of the margin; does not hold: on",
    "the other side; inconclusive: it straddles (with the trained seeds per arm that would decide it with",
    f"{100 * POWER:.0f} % power if the observed means and spreads were the truth, by simulation), an arm has < 2",
    "trained seeds and the failure counts are not significant, or the failure counts lean against the quality's",
    "verdict; not testable at this scale: a premise failed, no plateau, or no seed of either arm trained; not",
    "measured: the arms are missing. Resolution: a quantity read on a grain (updates to a target, validations K",
    "updates apart) is known to K only, so its interval is widened by K on each side, and an interval with no",
    "spread (every seed alike) is never a verdict. A claim tested at several lrs (or in two parts) holds when every",
    "case holds at 95 %: an intersection-union test, no correction. Does not hold means it fails at some lr, an",
    "existential conclusion: Holm's step-down over the claim's testable cases - their p-values of \"does not",
    "hold\" sorted, the i-th smallest times (k - i), the running maximum taken - and a case's \"does not hold\"",
    "stands when that adjusted p, printed beside it, is at most 0.05. Losses are fairseq's validation loss in bits",
    "per (masked) token; a run's valid nll is fairseq's `valid_nll_loss` where its criterion logs one (translation's",
    "label-smoothed cross-entropy), else its valid loss - the nll itself, in bits: the language-model and masked-LM",
    "criteria (cross_entropy, masked_lm) log no nll_loss. An arm is one config: every key that can change what is",
    "trained, except the seed (docs/verdicts.md has the table of the keys that cannot); a claim compares arms that",
    "differ only in its own factors (layout, warm-up and schedule, optimizer, lr), else it is not measured, naming",
    "the key. A seed counts for what its own curve did (a target reached, a loss at an update); its outcome class",
    "(trained, failed to train, diverged) is shown beside it, and for a quality comparison a failed seed's loss",
    "never enters Welch's t - it is counted by the exact test. A value that is not a finite number is no value,",
    "named, and keeps the claim from a verdict on the other seeds.",
]


def _gradient_section(grads_dir: Path, figures_dir: Path, report_dir: Path, claims: list[dict[str, Any]]) -> list[str]:
    summary = load_gradient_summary(grads_dir)
    lines = ["## Gradients at initialisation (Figure 3)", ""]
    for png in sorted(grads_dir.glob("*.png")):
        shutil.copy2(png, figures_dir / png.name)
        lines.append(f"![{png.stem}]({(figures_dir / png.name).relative_to(report_dir).as_posix()})")
    outcomes = check_claims(claims, GRADIENT_CHECKS, summary)
    lines += ["", "Each ratio is taken per seed; mean over seeds with a one-sample 95 % t interval, against the band",
              "stated in paper.yaml.", "", *claims_table(claims, outcomes), ""]  # fmt: skip
    return lines


def _frozen_lines(frozen: dict[str, Any], arms: list[Any]) -> list[str]:
    """What the record says: the claims are decided as frozen at the sweep's start, and each changed since."""
    changed = changed_claims(frozen, current_claims(a.layout for a in arms))
    lines = ["Every claim below is decided as `sweep.json` froze it when the sweep started (paper.yaml's, "
             "methods.yaml's", "and each layout file's, with their margins)"
             + (", and none has changed since." if not changed else
                ". Changed since, and not used here (a new sweep decides the new wording):"), ""]  # fmt: skip
    return lines + ([*(f"- changed: {line}" for line in changed), ""] if changed else [])


def _finetune_section(sweep_dir: Path, rows: list[dict[str, Any]]) -> list[str]:
    """Figure 5b/c: the `prelnx finetune` summaries found under the sweep's runs (none: no section)."""
    lines = []
    for row in rows:
        for path in sorted((sweep_dir / row["run"] / "finetune").glob(f"*/{SUMMARY_JSON}")):
            for entry in json.loads(path.read_text()):
                accuracies = [s["accuracy"] for s in entry["seeds"].values() if s["accuracy"] is not None]
                lines.append(f"| {row['run']} | {path.parent.name} | {entry['pretrain_update']} | "
                             f"{', '.join(f'{a:.1f}' for a in accuracies) or '-'} | {format_mean(entry)} |")  # fmt: skip
    if not lines:
        return []
    return ["## Fine-tuning (Figure 5b/c style)", "",
            "Each pre-trained checkpoint fine-tuned with several seeds (`prelnx finetune`): best validation accuracy",
            "per seed, and their mean with a 95 % interval (Student's t).", "",
            "| pre-trained run | fine-tuning | pre-training update | accuracy per seed (%) | mean ± 95 % |",
            "|---|---|---|---|---|", *lines, ""]  # fmt: skip


def report_path(sweep_dir: Path, out: Path | None, name: str | None) -> Path:
    """`--out FOLDER --name NAME` -> FOLDER/NAME.md; the sweep dir's own report is report.md, elsewhere the
    file is named after the sweep (docs/results/demo.md)."""
    folder = out or sweep_dir
    stem = name or ("report" if folder.resolve() == sweep_dir.resolve() else sweep_dir.resolve().name)
    return folder / f"{stem}.md"


def check_report_inputs(sweep_dir: Path, grads_dir: Path | None) -> None:
    if not (sweep_dir / "sweep.json").is_file():
        raise ReportError(f"{sweep_dir}: not a sweep dir (no sweep.json); give the folder `prelnx sweep` wrote")
    if grads_dir is not None and not grads_dir.is_dir():
        raise ReportError(f"--grads {grads_dir}: no such folder")
    if grads_dir is not None:
        load_gradient_summary(grads_dir)  # a folder with no study: refused before anything is written, --dry-run too


def write_report(sweep_dir: Path, out: Path, grads_dir: Path | None = None, title: str | None = None,
                 say_claims: bool = False, sweep_label: str | None = None) -> Path:  # fmt: skip
    """Write `out` (markdown) and its PNGs into `<out stem>_figures/` beside it; `say_claims`: log the claims as lines.
    `sweep_label`: the sweep's folder as named (default: relative to the report, the same bytes anywhere)."""
    check_report_inputs(sweep_dir, grads_dir)
    frozen = read_frozen(sweep_dir)  # the claims as the sweep started (None: a sweep older than the record)
    claims = paper_data() if frozen is None else {**paper_data(), **frozen["paper"]}
    report_dir = out.parent
    figures_dir = report_dir / f"{out.stem}_figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    rows, summary_md = summarize(sweep_dir)
    arms = load_arms(sweep_dir)
    configs = {arm.name: arm.config for arm in arms if arm.config is not None}  # each run's, read once (load_arms)
    plot(sweep_dir, figures_dir, configs, ("png",))  # the report embeds PNGs; the sweep dir's own plots have SVGs too
    translation = [a for a in arms if a.task == "translation"]
    lm = [a for a in arms if a.task == "language_model"]  # the paper's training claims on a decoder-only LM
    bert_only = bool(arms) and not translation and not lm  # a masked-LM sweep: the translation claims do not apply
    claim_list, outcomes = paper_outcomes(arms, claims)
    unusable = [row for row in rows if not RunStatus.of(row).done]
    if unusable:  # "no runs for these arms" would hide that the runs exist but did not train
        listed = "; ".join(f"{r['run']} {r['status']}" for r in unusable[:3]) + ("; ..." if len(unusable) > 3 else "")
        for claim_id, outcome in outcomes.items():
            if outcome.verdict is Verdict.NOT_MEASURED:
                outcomes[claim_id] = ClaimOutcome(claim_id, missing=f"not measured: {len(unusable)} run(s) did not "
                                                  f"finish ({listed}); see 'Runs that did not finish'")  # fmt: skip
    if say_claims:
        for line in claims_text(claim_list, outcomes):
            results.info(line)

    # the sweep by its name (sweep.json's, which a committed copy of its runs keeps) and its folder relative to the
    # report: a committed report names no path of the machine that made it
    name = read_index(sweep_dir)["name"] or sweep_dir.resolve().name
    where = sweep_label or os.path.relpath(sweep_dir.resolve(), out.resolve().parent)
    lines = [f"# {title or 'prelnx report: ' + name}", ""]
    lines += [f"Sweep {name} (folder `{where}`, relative to this report): {len(rows)} runs; statuses: "
              + ", ".join(f"{s} {sum(r['status'] == s for r in rows)}" for s in sorted({r['status'] for r in rows})), ""]  # fmt: skip
    lines += ["## The paper's claims at this scale", "", *CLAIMS_INTRO, ""]
    if frozen is not None:
        lines += _frozen_lines(frozen, arms)
    lines += claims_table(claim_list, outcomes) + [""]
    if not bert_only and any(a.task == "masked_lm" for a in arms):
        lines += claims_table(claims["bert"], check_claims(claims["bert"], BERT_CHECKS, arms)) + [""]
    lines += methods_sections(translation, lm, figures_dir, report_dir, frozen)  # issues 24 and 32's claims
    lines += norm_section(arms, say_claims)  # issue 48's claims: a sweep with variant arms only
    # runs with diagnostics only (a variant study: its LayerNorm runs, as every claim of methods.yaml)
    lines += why_warmup_section(sweep_dir, layernorm_arms(translation), figures_dir, report_dir, say_claims)
    lines += ["## Results", "", "Per arm, its seeds by outcome and the mean ± sample sd over its trained seeds:", ""]
    lines += arms_table(arms) + ["", "Per seed:", ""]
    lines += [summary_md.strip(), ""]
    if unusable:
        lines += ["## Runs that did not finish", "", "| run | status | reason |", "|---|---|---|"]
        lines += [f"| {r['run']} | {r['status']} | {str(r.get('reason') or '-').replace('|', '/')} |" for r in unusable]
        lines.append("")
    decided = how_decided(sweep_dir)  # a sequential sweep (looks.json): the look that decided each claim
    lines += ["## How each claim was decided", "", *decided, ""] if decided else []
    lines += machines_section(sweep_dir)  # the CPU kinds its seeds trained on (machine.json), each kind's mean
    lines += ["## Curves (Figure 5a style: validation loss per update)" if bert_only else
              "## Curves (validation loss per update)" if lm else "## Curves (Figures 2 and 4 style)", ""]  # fmt: skip
    for name in ("loss", "bleu", "lr", "heatmap"):
        if (figures_dir / f"{name}.png").is_file():
            lines.append(f"![{name}]({(figures_dir / f'{name}.png').relative_to(report_dir).as_posix()})")
    lines.append("")
    lines += _finetune_section(sweep_dir, rows)
    if grads_dir is not None:
        lines += _gradient_section(grads_dir, figures_dir, report_dir, claims["gradients"])
    write_text_atomic(out, "\n".join(lines) + "\n")
    return out


# TensorBoard's custom-scalars page (the runs' layout: Figures 2 and 4), unsmoothed: 8 epochs need no smoothing.
TENSORBOARD_URL = "http://localhost:6006/#custom_scalars&_smoothingWeight=0"


def report_after_sweep(sweep_dir: Path) -> Path | None:
    """Every `prelnx sweep` ends with its report and its curves' command; a failing report is only a warning."""
    try:
        with held(sweep_dir / SUMMARY_LOCK):
            report = write_report(sweep_dir, sweep_dir / "report.md")
    except Exception as error:  # noqa: BLE001 - the runs are done; a report that fails must not hide them
        log.warning(f"the report could not be written ({type(error).__name__}: {error}); "
                    f"try `prelnx report {sweep_dir}`")  # fmt: skip
        return None
    log.info(f"report: {report} (claims, results, curves in {report.parent / (report.stem + '_figures')})")
    log.info(f"curves: tensorboard --logdir {sweep_dir}   then open {TENSORBOARD_URL}")
    log.info('        (every run on one chart; untick "Ignore outliers in chart scaling" once: TensorBoard remembers it)')
    return report
