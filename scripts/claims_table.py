"""The table of all of paper.yaml's claims in README.md's Results and docs/results.md, generated from committed data.

    .venv/bin/python scripts/claims_table.py            # rewrite the table between both files' markers
    .venv/bin/python scripts/claims_table.py --check    # exit 1 when either file's table differs (what CI runs)

One row per claim and committed study that decides or checks it (a claim no study measures: one row, "no committed
study yet"). The verdicts are not read back from the reports' prose: each is decided again, from the same committed
raw data and through the same engine as the report (prelnx.report: load_arms and the claims' checks, verdict_text,
interval_text), and the generator refuses when the committed report's row for that claim is not the row the engine
writes now (the report is stale: `scripts/rebuild_reports.py` rebuilds it). Where the data comes from:
- a sweep study: every study of scripts/rebuild_reports.py's STUDIES whose raw data is committed
  (docs/results/<study>/runs/) - the paper's training claims (Figures 2a, 2b, 4) and BERT's (Figure 5a);
- a gradient study: a folder docs/results/<name>/ holding `prelnx grads`' grads.csv and grads_summary.json (Figure 3);
- a theory study: a folder docs/results/<name>/ holding `prelnx theory`'s theory_summary.json and
  theory_hidden.csv (Lemma 1).
tests/test_claims_table.py keeps both files equal to this script's output.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import posixpath
import sys
import tempfile
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("README.md", "docs/results.md")
BEGIN, END = "<!-- claims-table begin (scripts/claims_table.py) -->", "<!-- claims-table end -->"
NONE_YET = "no committed study yet"
MAX_CASES = 3  # cases shown per row (a claim over 12 layers has 13): the report lists every one


class Row(NamedTuple):
    claim: str  # paper.yaml's id
    source: str  # paper.yaml's `source` (section, figure)
    verdict: str
    interval: str
    seeds: str
    scale: str
    report: str  # the committed report (or raw data folder) it comes from, relative to the repository


def _rebuild_script() -> Any:
    """scripts/rebuild_reports.py, the one owner of the study table (STUDIES) and of reading its raw data."""
    spec = importlib.util.spec_from_file_location("rebuild_reports", Path(__file__).with_name("rebuild_reports.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _arm_seeds(sample: Any) -> str:
    """`3` or `3 (1 failed to train, 1 diverged)`: an arm's seeds, those without the quantity counted by why."""
    others = ((sample.failed - sample.diverged, sample.failure), (sample.diverged, "diverged"),
              (sample.missing, "no validation row"))  # fmt: skip
    why = [f"{k} {word}" for k, word in others if k]
    return f"{sample.n}" + (f" ({', '.join(why)})" if why else "")


def _seeds(outcome: Any, study_seeds: str) -> str:
    """Per case, each arm's seeds (`3 vs 3 (1 failed to train)`); a one-arm case: `10`; no case (a premise sweep):
    `study_seeds`, the seeds per arm of the study."""
    if not outcome.cases:
        return study_seeds
    parts = []
    for judged in outcome.judged()[:MAX_CASES]:
        c = judged.case.comparison
        parts.append(" vs ".join(_arm_seeds(s) for s in (c.a, c.b) if s is not None))
    return "; ".join(dict.fromkeys(parts)) or "-"


def _interval(outcome: Any) -> str:
    """Per case its estimate and 95 % interval as the report prints it; a premise sweep: its premises' states."""
    from prelnx.report.render import interval_text  # noqa: PLC0415 - --help needs no prelnx import

    judged = outcome.judged()
    if not judged:
        premises = [case.premise for case in outcome.cases if case.premise] + outcome.premises
        states = Counter(p.state.value for p in premises)
        return "; ".join(f"premise {state} at {n} of {len(premises)} arms" for state, n in states.items()) or "-"
    label = len(judged) > 1
    shown = [f"{j.case.label}: {interval_text(j.case.comparison)}" if label else interval_text(j.case.comparison)
             for j in judged[:MAX_CASES]]  # fmt: skip
    more = len(judged) - MAX_CASES
    return "<br>".join(shown + ([f"and {more} more cases (in the report)"] if more > 0 else []))


def _sweep_scale(arms: list[Any]) -> str:
    """`synthetic, 6-6 layers, d 128, 408 updates`: the study's data (a prepared dataset: its folder's name) and
    model (its first run's config) and the most updates any of its runs made."""
    from prelnx.reproduce.estimate import model_sizes  # noqa: PLC0415

    config = arms[0].config  # read by load_arms
    sizes = model_sizes(config)
    layers = (f"{sizes['decoder_layers']} decoder" if config.task == "language_model" else
              f"{sizes['encoder_layers']}-{sizes['decoder_layers']}" if sizes["decoder_layers"] else
              str(sizes["encoder_layers"]))  # fmt: skip
    updates = max((int(a.results.get("update") or 0) for a in arms), default=0)
    data = config.data.dataset if config.data.dataset != "custom" else Path(config.data.path).name  # its folder
    return f"{data}, {layers} layers, d {sizes['embed_dim']}, {updates} updates"


def _checked(report: Path, rows: list[str], root: Path) -> None:
    """Refuse when the committed report does not print these claims' rows as the engine does now."""
    where = report.relative_to(root)
    if rows and not report.is_file():
        raise SystemExit(f"{where}: not committed beside its raw data; rebuild it: "
                         ".venv/bin/python scripts/rebuild_reports.py")  # fmt: skip
    if stale := [row for row in rows if row not in report.read_text().splitlines()]:
        raise SystemExit(f"{where}: its claims table differs from the engine's on its committed raw data "
                         f"({len(stale)} claim row(s)); rebuild it: .venv/bin/python scripts/rebuild_reports.py")


def _measured(outcome: Any) -> bool:
    """A verdict, or a premise sweep's checked premise (the claim itself "not measured", shown with why)."""
    from prelnx.report.stats import Verdict  # noqa: PLC0415

    return outcome.verdict is not Verdict.NOT_MEASURED or bool(outcome.premises)


def _rows(claims: list[dict[str, Any]], outcomes: dict[str, Any], scale: str, source: str,
          study_seeds: str = "-") -> list[Row]:  # fmt: skip
    from prelnx.report.render import verdict_text  # noqa: PLC0415

    return [Row(c["id"], c["source"], verdict_text(outcomes[c["id"]]), _interval(outcomes[c["id"]]),
                _seeds(outcomes[c["id"]], study_seeds), scale, source)
            for c in claims if c["id"] in outcomes and _measured(outcomes[c["id"]])]  # fmt: skip


def sweep_rows(root: Path = ROOT) -> list[Row]:
    """Every committed sweep study's training and BERT claims, decided from its raw data, checked against its report."""
    from prelnx.paper import paper_data  # noqa: PLC0415
    from prelnx.report.arms import load_arms, seed_groups  # noqa: PLC0415
    from prelnx.report.claims import BERT_CHECKS, TRAINING_CHECKS, training_arms  # noqa: PLC0415
    from prelnx.report.outcome import check_claims  # noqa: PLC0415
    from prelnx.report.render import claims_table  # noqa: PLC0415

    rebuild, claims, found = _rebuild_script(), paper_data(), []
    for study in rebuild.with_raw_data(root):
        report = root / rebuild.STUDIES[study].report
        with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(root):  # a user's layout: named from root
            folder = rebuild._unpacked(rebuild.raw_dir(study, root), Path(scratch) / study)
            arms = load_arms(folder)
            if not arms:
                continue
            scale = _sweep_scale(arms)
            per_arm = " or ".join(sorted({str(len(group)) for group in seed_groups(arms).values()}, key=int))
            bert = [a for a in arms if a.task == "masked_lm"]
            trained = training_arms(arms)
            for kind, checks, group in (("training", TRAINING_CHECKS, trained), ("bert", BERT_CHECKS, bert)):
                outcomes = check_claims(claims[kind], checks, group) if group else {}
                kept = _rows(claims[kind], outcomes, scale, report.relative_to(root).as_posix(), f"{per_arm} per arm")
                ids = {row.claim for row in kept}
                _checked(report, [claims_table([c], outcomes)[2] for c in claims[kind] if c["id"] in ids], root)
                found += kept
    return found


def analysis_rows(root: Path = ROOT) -> list[Row]:
    """Figure 3 from committed `prelnx grads` outputs, Lemma 1 from committed `prelnx theory` outputs."""
    from prelnx.paper import paper_data  # noqa: PLC0415
    from prelnx.report.outcome import check_claims  # noqa: PLC0415
    from prelnx.report.theory_claims import (  # noqa: PLC0415
        GRADIENT_CHECKS,
        check_theory,
        load_gradient_summary,
        load_theory_summary,
    )

    claims, found = paper_data(), []
    for folder in sorted(p for p in (root / "docs" / "results").iterdir() if p.is_dir()):
        where = folder.relative_to(root).as_posix() + "/"
        if (folder / "grads.csv").is_file() and (folder / "grads_summary.json").is_file():
            summary = load_gradient_summary(folder)
            outcomes = check_claims(claims["gradients"], GRADIENT_CHECKS, summary)
            depths = summary["depths"]
            scale = f"{summary['settings']['config']}, depths {depths[0]}-{depths[-1]}"
            found += _rows(claims["gradients"], outcomes, scale, where)
        if (folder / "theory_summary.json").is_file() and (folder / "theory_hidden.csv").is_file():
            summary = load_theory_summary(folder)
            layers = len({r["layer"] for r in summary["rows"]})
            found += _rows(claims["theory"], check_theory(summary), f"d {summary['d']}, {layers} layers", where)
    return found


def rows(root: Path = ROOT) -> list[Row]:
    """Every committed study's rows (computed once; render() lays them out per file)."""
    return sweep_rows(root) + analysis_rows(root)


def render(found: list[Row], target: str = "README.md") -> str:
    """The markdown table for `target` (links relative to it): paper.yaml's claims in its order, each with its
    studies' rows or "no committed study yet"."""
    from prelnx.paper import paper_data  # noqa: PLC0415

    by_claim: dict[str, list[Row]] = {}
    for row in found:
        by_claim.setdefault(row.claim, []).append(row)
    lines = ["| claim (paper.yaml) | figure | verdict | estimate [95 % CI] | seeds per arm | scale | from |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    data, folder = paper_data(), PurePosixPath(target).parent
    for kind in ("training", "gradients", "theory", "bert"):
        for claim in data[kind]:
            for row in by_claim.get(claim["id"]) or [Row(claim["id"], claim["source"], NONE_YET, "-", "-", "-", "-")]:
                link = "-" if row.report == "-" else f"[{row.report}]({posixpath.relpath(row.report, folder)})"
                lines.append(f"| `{row.claim}` | {row.source} | {_cell(row.verdict)} | {_cell(row.interval)} | "
                             f"{row.seeds} | {row.scale} | {link} |")  # fmt: skip
    return "\n".join(lines)


def block(text: str, name: str) -> str:
    """The table currently between a file's markers."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{name}: the claims-table markers are missing ({BEGIN} ... {END})")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file's table differs")
    args = parser.parse_args(argv)
    found, differs = rows(), []
    for target in TARGETS:
        path = ROOT / target
        text, wanted = path.read_text(), render(found, target)
        if block(text, target) == wanted:
            continue
        differs.append(target)
        if not args.check:
            head, rest = text.split(BEGIN, 1)
            path.write_text(f"{head}{BEGIN}\n{wanted}\n{END}{rest.split(END, 1)[1]}")
    verb = "differs" if args.check else "rewritten"
    print("\n".join(f"{target}: {verb}" for target in differs) or "both tables are the generator's output")
    return 1 if args.check and differs else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from prelnx import console  # fairseq's import-time INFO lines stay off, as under the CLI

    console.configure()
    sys.exit(main())
