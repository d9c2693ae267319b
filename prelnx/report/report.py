"""`prelnx report`: a markdown report of a sweep (and optionally a gradient study) beside the paper's claims."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable


from prelnx.atomic import write_text_atomic
from prelnx.plots.curves import plot
from prelnx.report.bert_claims import BERT_CHECKS
from prelnx.report.claims import TRAINING_CHECKS, Verdict, load_arms
from prelnx.sweep.summary import summarize


class ReportError(ValueError):
    pass


def paper_claims() -> dict[str, Any]:
    """The paper's claims and numbers (prelnx/report/paper.yaml)."""
    from prelnx.report.paper import paper_data

    return paper_data()


def _claims_table(claims: list[dict[str, Any]], verdicts: dict[str, Verdict]) -> list[str]:
    lines = ["| claim | source | paper | this run | verdict |", "|---|---|---|---|---|"]
    for claim in claims:
        verdict = verdicts.get(claim["id"], Verdict("-", "not measured"))
        mark = verdict.holds if verdict.holds == "not measured" else f"**{verdict.holds}**"
        lines.append(f"| {claim['claim']} | {claim['source']} | {claim['paper']} | {verdict.measured} | {mark} |")
    return lines


def _gradient_section(grads_dir: Path, figures_dir: Path, report_dir: Path, claims: list[dict[str, Any]]) -> list[str]:
    from prelnx.report.gradient_claims import GRADIENT_CHECKS, load_gradient_summary

    summary = load_gradient_summary(grads_dir)
    lines = ["## Gradients at initialisation (Figure 3)", ""]
    for png in sorted(grads_dir.glob("*.png")):
        shutil.copy2(png, figures_dir / png.name)
        lines.append(f"![{png.stem}]({(figures_dir / png.name).relative_to(report_dir).as_posix()})")
    verdicts = {claim_id: check(summary) for claim_id, check in GRADIENT_CHECKS.items()}
    lines += ["", *_claims_table(claims, verdicts), ""]
    return lines


def _finetune_section(sweep_dir: Path, rows: list[dict[str, Any]]) -> list[str]:
    """Figure 5b/c: the `prelnx finetune` summaries found under the sweep's runs (none: no section)."""
    import json

    from prelnx.finetune.summary import format_mean

    lines = []
    for row in rows:
        for path in sorted((sweep_dir / row["run"] / "finetune").glob("*/finetune_summary.json")):
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
    file is named after the sweep (docs/results/cpu_multi30k.md)."""
    folder = out or sweep_dir
    stem = name or ("report" if folder.resolve() == sweep_dir.resolve() else sweep_dir.resolve().name)
    return folder / f"{stem}.md"


def check_report_inputs(sweep_dir: Path, grads_dir: Path | None) -> None:
    if not (sweep_dir / "sweep.json").is_file():
        raise ReportError(f"{sweep_dir}: not a sweep dir (no sweep.json); give the folder `prelnx sweep` wrote")
    if grads_dir is not None and not grads_dir.is_dir():
        raise ReportError(f"--grads {grads_dir}: no such folder")


def write_report(sweep_dir: Path, out: Path, grads_dir: Path | None = None, title: str | None = None) -> Path:
    """Write `out` (markdown) and its PNG figures into `<out stem>_figures/` next to it."""
    check_report_inputs(sweep_dir, grads_dir)
    claims = paper_claims()
    report_dir = out.parent
    figures_dir = report_dir / f"{out.stem}_figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    rows = summarize(sweep_dir)
    for figure in plot(sweep_dir, figures_dir):
        if figure.suffix != ".png":
            figure.unlink()  # the report embeds PNGs; the SVGs stay in the sweep dir's own plots
    arms = load_arms(sweep_dir)
    translation = [a for a in arms if a.task == "translation"]
    bert_only = bool(arms) and not translation  # a masked-LM sweep: the translation claims do not apply
    checks, claim_list = (BERT_CHECKS, claims["bert"]) if bert_only else (TRAINING_CHECKS, claims["training"])
    verdicts = {claim_id: check(arms if bert_only else translation) for claim_id, check in checks.items()}
    unusable = [row for row in rows if row["status"] not in ("finished", "diverged")]
    if unusable:  # "no runs for these arms" would hide that the runs exist but did not train
        listed = "; ".join(f"{r['run']} {r['status']}" for r in unusable[:3]) + ("; ..." if len(unusable) > 3 else "")
        for claim_id, verdict in verdicts.items():
            if verdict.holds == "not measured":
                verdicts[claim_id] = Verdict(f"not measured: {len(unusable)} run(s) did not finish ({listed}); "
                                             f"see 'Runs that did not finish'", "not measured")  # fmt: skip

    lines = [f"# {title or 'prelnx report: ' + sweep_dir.name}", ""]
    lines += [f"Sweep `{sweep_dir}`: {len(rows)} runs; statuses: "
              + ", ".join(f"{s} {sum(r['status'] == s for r in rows)}" for s in sorted({r['status'] for r in rows})), ""]  # fmt: skip
    lines += ["## The paper's claims at this scale", "",
              "Each claim as the paper states it, what this sweep measured, and whether it holds here. Losses are",
              "fairseq's validation loss in bits per (masked) token, lower is better; " + (
                  "the fraction compares updates to reach a loss, with no margin." if bert_only else
                  "'holds' needs a difference of more than 0.5 bits where it compares losses."), ""]  # fmt: skip
    lines += _claims_table(claim_list, verdicts) + [""]
    if not bert_only and any(a.task == "masked_lm" for a in arms):
        lines += _claims_table(claims["bert"], {key: check(arms) for key, check in BERT_CHECKS.items()}) + [""]
    lines += ["## Results", "", (sweep_dir / "summary.md").read_text().strip(), ""]
    if unusable:
        lines += ["## Runs that did not finish", "", "| run | status | reason |", "|---|---|---|"]
        lines += [f"| {r['run']} | {r['status']} | {str(r.get('reason') or '-').replace('|', '/')} |" for r in unusable]
        lines.append("")
    lines += ["## Curves (Figure 5a style: validation loss per update)" if bert_only else
              "## Curves (Figures 2 and 4 style)", ""]  # fmt: skip
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


def report_after_sweep(sweep_dir: Path, echo: Callable[[str], None]) -> Path | None:
    """Every `prelnx sweep` ends with its report (claims, results, curves) and the command that shows its curves;
    a report that fails is a warning (the runs are done), not an error."""
    from prelnx.records.lock import held
    from prelnx.records.results import SUMMARY_LOCK

    try:
        with held(sweep_dir / SUMMARY_LOCK):
            report = write_report(sweep_dir, sweep_dir / "report.md")
    except Exception as error:  # noqa: BLE001 - the runs are done; a report that fails must not hide them
        echo(f"warning: the report could not be written ({type(error).__name__}: {error}); "
             f"try `prelnx report {sweep_dir}`")  # fmt: skip
        return None
    echo(f"report: {report} (claims, results, curves in {report.parent / (report.stem + '_figures')})")
    echo(f"curves: tensorboard --logdir {sweep_dir}   then open {TENSORBOARD_URL}")
    echo('        (every run on one chart; untick "Ignore outliers in chart scaling" once: TensorBoard remembers it)')
    return report
