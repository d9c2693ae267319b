"""Figure 3 per normalisation variant (docs/protocols/norm_variants.md, "The gradients"; issue 48): paper.yaml's
gradient claims decided on each variant's folder of `prelnx grads` outputs by prelnx.report.theory_claims'
GRADIENT_CHECKS, unchanged, its Post-LN and Pre-LN read as the paper's; DeepNorm shown, never decided. Built from the
folders alone (READ decides; machine.json names the CPU; no figure: grads.csv redraws it). The folders sit one level
below docs/results/, where scripts/claims_table.py does not look: these stay out of the paper's claims table."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.exits import Refusal
from prelnx.layouts import display_name
from prelnx.records.machine_record import read_machines
from prelnx.report.outcome import ClaimOutcome, check_claims
from prelnx.report.render import claims_table
from prelnx.report.stats import Sample, Verdict, t_interval
from prelnx.report.theory_claims import (GRADIENT_CHECKS, depth_ratio, gradient_claims, layer_ratio,
                                         load_gradient_summary)


@dataclass(frozen=True)
class Variant:
    folder: str  # its folder of the study (docs/results/norm_variants_gradients/<folder>/)
    name: str
    setting: str  # what `prelnx grads` was given besides the protocol's command


# The protocol's table (docs/protocols/norm_variants.md, "The gradients"), in its order.
VARIANTS = (
    Variant("layernorm", "LayerNorm", "nothing: the paper's LayerNorm"),
    Variant("rmsnorm", "RMSNorm", "`--set model.norm=rmsnorm`"),
    Variant("dyt", "DyT", "`--set model.norm=dyt`"),
    Variant("qknorm", "QK-Norm", "`--set model.qk_norm=true` (LayerNorm)"),
)
COMMAND = "prelnx grads --config demo/preln_nowarmup.yaml --seeds 10 --depths 6,8,10,12,14 --jobs 1 --threads 1"
DECIDED = ("post", "pre")  # the layouts the claims read; any other is shown, not decided
READ = ("grads.csv", "grads_summary.json")  # what the verdicts are computed from: a folder without them is no data
RAW_FILES = (*READ, "hidden.csv", "output.txt", "machine.json")  # what scripts/rebuild_reports.py --collect keeps
NOT_RECORDED = "not recorded (no machine.json)"
SHORT = {"postln_last_layer_flat_in_depth": "Post-LN flat in depth",
         "preln_last_layer_falls_with_depth": "Pre-LN falls with depth",
         "postln_grows_with_layer": "Post-LN grows with the layer, Pre-LN flat"}  # fmt: skip
# The protocol's "What each outcome would mean", as it was committed before any run.
MEANING = ("A variant whose Post-LN keeps \"flat in depth\" and \"grows with the layer\" and whose Pre-LN keeps "
           "\"falls with depth\" leaves the paper's explanation of warm-up (large gradients near Post-LN's output at "
           "initialisation) in place; one that loses them changes that explanation for that variant.")  # fmt: skip


@dataclass(frozen=True)
class VariantResult:
    variant: Variant
    summary: dict[str, Any] | None  # None: no folder yet
    outcomes: dict[str, ClaimOutcome]
    cpu: str


def variant_folders(raw: Path) -> dict[str, Path]:
    """The protocol's variant folders found under `raw` (only those holding READ); another folder is bad input."""
    known = {v.folder for v in VARIANTS}
    strays = sorted(p.name for p in raw.iterdir() if p.is_dir() and p.name not in known) if raw.is_dir() else []
    if strays:
        raise Refusal(f"{raw}: {', '.join(strays)}: not a variant folder of docs/protocols/norm_variants.md "
                      f"(valid: {', '.join(sorted(known))})")  # fmt: skip
    return {v.folder: raw / v.folder for v in VARIANTS if all((raw / v.folder / name).is_file() for name in READ)}


def decide(raw: Path) -> list[VariantResult]:
    """Each variant's three claims from its folder (one with none: not measured, no data yet)."""
    found, results = variant_folders(raw), []
    for variant in VARIANTS:
        folder = found.get(variant.folder)
        if folder is None:
            results.append(VariantResult(variant, None, {}, NOT_RECORDED))
            continue
        summary = load_gradient_summary(folder)
        cpu = "; ".join(f"{m.kind}, {m.cores} cores, {m.time}" for m in read_machines(folder)) or NOT_RECORDED
        results.append(VariantResult(variant, summary, check_claims(gradient_claims(), GRADIENT_CHECKS, summary), cpu))
    return results


def reading(result: VariantResult) -> str:
    """The protocol's meaning of the variant's three verdicts."""
    if result.summary is None:
        return "no raw data yet"
    verdicts = {key: result.outcomes[key].verdict for key in SHORT}
    lost = [SHORT[key] for key, v in verdicts.items() if v is Verdict.DOES_NOT_HOLD]
    if lost:
        return f"loses {', '.join(lost)}: changes the paper's explanation of warm-up for this variant"
    if all(v is Verdict.HOLDS for v in verdicts.values()):
        return "keeps Figure 3's picture: the paper's explanation of warm-up stays in place"
    return "not settled: " + ", ".join(f"{SHORT[k]} {v.value}" for k, v in verdicts.items() if v is not Verdict.HOLDS)


def _span(values: list[int]) -> str:
    return f"{values[0]}-{values[-1]}" if values == list(range(values[0], values[-1] + 1)) and len(values) > 2 \
        else ", ".join(map(str, values))  # fmt: skip


def _summary_table(results: list[VariantResult]) -> list[str]:
    lines = ["| variant | set | seeds | depths | " + " | ".join(SHORT.values()) + " | what it means |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        if r.summary is None:
            cells = ["-", "-", *("not measured" for _ in SHORT)]
        else:
            cells = [_span(r.summary["seeds"]), ", ".join(map(str, r.summary["depths"])),
                     *(f"**{r.outcomes[key].verdict.value}**" for key in SHORT)]  # fmt: skip
        lines.append(f"| {r.variant.name} | {r.variant.setting} | {' | '.join(cells)} | {reading(r)} |")
    return lines


def _shown(sample: Sample) -> str:
    """A ratio described, not decided: mean and 95 % t interval over the seeds with a finite value."""
    values = tuple(v for v in sample.values if math.isfinite(v))
    if len(values) < 2:
        return f"{values[0]:.2f} (1 seed, no interval)" if values else "no seed with a value"
    mean, low, high = t_interval(Sample(sample.label, values))
    dropped = f"; {sample.n - len(values)} seed(s) with no value" if len(values) < sample.n else ""
    return f"{mean:.2f} [95 % CI {low:.2f}, {high:.2f}] ({len(values)} seeds{dropped})"


def _last_layer_table(summary: dict[str, Any]) -> list[str]:
    """grads_summary.json's last-layer decoder W2 gradient norm per layout and depth (Figure 3c/d)."""
    depths = [str(d) for d in summary["depths"]]
    lines = ["| layout | " + " | ".join(f"{d} layers" for d in depths) + " |", "|---" * (len(depths) + 1) + "|"]
    for layout, by_depth in summary["last_layer_w2"].items():
        cells = " | ".join(f"{by_depth[d]['mean']:.3f} ± {by_depth[d]['std']:.3f}" for d in depths)
        lines.append(f"| {display_name(layout)} | {cells} |")
    return lines


def variant_section(result: VariantResult, label: str) -> list[str]:
    variant, summary = result.variant, result.summary
    lines = [f"## {variant.name} (`{label}{variant.folder}/`)", ""]
    if summary is None:
        return lines + [f"Not measured yet: no {label}{variant.folder}/ with {' and '.join(READ)}.", ""]
    layouts = ", ".join(display_name(layout) for layout in summary["layouts"])
    lines += [f"Set: {variant.setting}. Layouts: {layouts}; seeds {_span(summary['seeds'])}; depths "
              f"{', '.join(map(str, summary['depths']))} (layer ratios read at depth {summary['growth_depth']}); "
              f"{summary['settings']['max_tokens']} tokens per batch, {summary['settings']['batches']} batch(es) "
              f"per model. CPU: {result.cpu}.", "",
              "Last-layer decoder W2 gradient norm, mean ± sd over seeds:", "", *_last_layer_table(summary), "",
              f"The claims, with {variant.name}'s Post-LN and Pre-LN as the paper's:", "",
              *claims_table([{**c, "claim": f"**{variant.name}**: {c['claim']}"} for c in gradient_claims()],
                            result.outcomes), ""]  # fmt: skip
    for layout in (layout for layout in summary["layouts"] if layout not in DECIDED):
        name = display_name(layout)
        lines += [f"{name} (a Post-LN placement, measured beside them): shown, not decided - no claim is made for it.",
                  "", f"- {depth_ratio(summary, layout).label}: {_shown(depth_ratio(summary, layout))}",
                  f"- {layer_ratio(summary, layout).label}: {_shown(layer_ratio(summary, layout))}", ""]  # fmt: skip
    return lines


def write_report(raw: Path, out: Path, title: str, label: str) -> Path:
    """The report's markdown into `out`; `label`: the variant folders' parent, as named relative to the report."""
    results = decide(raw)
    lines = [f"# {title}", "",
             "Protocol: [docs/protocols/norm_variants.md](../protocols/norm_variants.md), \"The gradients\" and its "
             "amendment, committed before any run. Each variant: `" + COMMAND + "` with the variant's setting, into "
             f"its own folder of `{label}` (grads.csv, hidden.csv, grads_summary.json, the command's output.txt and "
             "machine.json, the CPU it ran on, written when the folder started). This report is rebuilt from those "
             "folders alone by `scripts/rebuild_reports.py --study norm_variants_gradients`.", "",
             "Decided by paper.yaml's gradient claims, unchanged, through the code that decides them for the paper "
             "(prelnx/report/theory_claims.py), each read for the variant's own Post-LN and Pre-LN: \"does the "
             "paper's Figure 3 picture survive the variant?\". Per seed a ratio of decoder W2 gradient norms at "
             "initialisation (no training, so nothing fails); the mean over seeds with a one-sample 95 % t interval "
             "against paper.yaml's band: holds inside it, does not hold outside, inconclusive when it straddles. "
             "These are not the paper's claims on its own models (study B decides those, "
             "docs/protocols/paper_cpu.md): this report is not part of the paper's claims table. DeepNorm is "
             "measured beside LayerNorm's Post-LN and Pre-LN and shown, not decided.", "",
             "## The verdicts per variant", "", *_summary_table(results), "",
             f"What each outcome means (the protocol): {MEANING}", ""]  # fmt: skip
    for result in results:
        lines += variant_section(result, label)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, "\n".join(lines).rstrip("\n") + "\n")
    return out

