"""Rebuild every committed report from its committed raw data, with the current verdict engine.

    .venv/bin/python scripts/rebuild_reports.py                  # every study with committed raw data
    .venv/bin/python scripts/rebuild_reports.py --study demo     # one
    .venv/bin/python scripts/rebuild_reports.py --check          # rebuild in a temp folder; exit 1 if a report differs
    .venv/bin/python scripts/rebuild_reports.py --collect runs/demo --study demo   # keep a sweep's raw data
    .venv/bin/python scripts/rebuild_reports.py --collect runs/norm_variants_gradients --study norm_variants_gradients

Two kinds of study. A sweep study (STUDIES: study -> sweep config, report, title): its raw data is what its report
is computed from, copied out of the sweep's run dirs by `--collect` into docs/results/<study>/runs/: sweep.json, and
per done run the files of prelnx/records/raw_data.py (RUN_FILES: status, metrics, config, machine, diagnostics
gzip-compressed when over 1 MB, test BLEU), plus the target dictionary the unigram plateau is read from (data/,
prelnx/report/plateau.py reads the sweep's copy first) - so the same bytes come out on any machine. A gradient study
(GRADIENT_STUDIES: study -> report, title; its folders are prelnx/report/variant_gradients.py's VARIANTS, the
protocol's table): `--collect` copies each finished variant folder of `prelnx grads` outputs (RAW_FILES there:
grads.csv, hidden.csv, grads_summary.json, output.txt, machine.json; no figure3.png, the report draws no figure)
into docs/results/<study>/<variant>/, replacing that variant's folder and leaving the others; an unfinished one (no
grads_summary.json yet) is skipped and named. A study is rebuilt when its raw data exists; `--study` on one without
raw data is one error line. `--check` compares the markdown only (a sweep report's figures are redrawn into the
temp folder, not compared). Every committed report is one of these: the reports whose raw data was never kept were
withdrawn and are listed in docs/results/withdrawn.yaml with the config and command that re-run each
(tests/report/test_rebuild.py checks both).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path("docs/results")
MANIFEST = RESULTS / "withdrawn.yaml"


class Study(NamedTuple):
    config: str  # the sweep config that made it (what re-runs it)
    report: str  # the committed report, relative to the repository
    title: str


STUDIES = {
    "demo": Study("configs/sweeps/demo.yaml", "docs/results/demo.md", "prelnx report: the demo (scripts/demo.sh)"),
    "why_warmup": Study("configs/sweeps/why_warmup_strata.yaml", "docs/results/why_warmup.md",
                        "Why warm-up, decided by prediction (CPU, Multi30k De-En 8k, strata of one lr schedule)"),
    "warmup_free": Study("configs/sweeps/warmup_free_issue39.yaml", "docs/results/warmup_free_cpu.md",
                         "The warm-up-free benchmark at CPU scale (see docs/warmup_free.md)"),
    "placements_lm": Study("configs/sweeps/placements_lm.yaml", "docs/results/placements_lm.md",
                           "The norm placements on the language model, a sequential study of seeds 101-112 "
                           "(configs/sweeps/placements_lm.yaml, amendment 2)"),
    "cpu_multi30k_sgd_premise": Study(
        "configs/sweeps/cpu_multi30k_sgd_premise.yaml", "docs/results/cpu_multi30k_sgd_premise.md",
        "CPU-scale NMT study, stage 1: the SGD premise sweep (configs/sweeps/cpu_multi30k.yaml's protocol)"),
    "cpu_norm_variants": Study("configs/sweeps/cpu_norm_variants.yaml", "docs/results/cpu_norm_variants.md",
                               "Normalisation variants with and without warm-up, a sequential study of seeds 101-108 "
                               "(CPU demo scale, 4 epochs; configs/sweeps/cpu_norm_variants.yaml, amendment 3)"),
    "bert_cpu_premise_d128": Study(
        "configs/sweeps/bert_cpu_premise_d128.yaml", "docs/results/bert_cpu_premise_d128.md",
        "BERT CPU study, stage 1: the premise sweep at d 128 (configs/sweeps/bert_cpu.yaml's protocol)"),
    "cpu_multi30k_sgd_premise2": Study(
        "configs/sweeps/cpu_multi30k_sgd_premise2.yaml", "docs/results/cpu_multi30k_sgd_premise2.md",
        "The paper at CPU scale, study A0: Figure 2b's premise, stage 2 (docs/protocols/paper_cpu.md)"),
    "cpu_multi30k": Study("configs/sweeps/cpu_multi30k.yaml", "docs/results/cpu_multi30k.md",
                          "The paper at CPU scale, study A: Figures 2a, 2b and 4 on Multi30k De-En "
                          "(docs/protocols/paper_cpu.md)"),
    "cpu_multi30k_faster": Study(
        "configs/sweeps/cpu_multi30k_faster.yaml", "docs/results/cpu_multi30k_faster.md",
        "The paper at CPU scale, study E: Figure 4's 'converges faster' read on the validation grid "
        "(docs/protocols/paper_cpu.md)"),
    "cpu_multi30k_sgd_long": Study(
        "configs/sweeps/cpu_multi30k_sgd_long.yaml", "docs/results/cpu_multi30k_sgd_long.md",
        "The paper at CPU scale, study F: Figure 2b at 552 updates (docs/protocols/paper_cpu.md)"),
    "cpu_multi30k_short": Study(
        "configs/sweeps/cpu_multi30k_short.yaml", "docs/results/cpu_multi30k_short.md",
        "The paper at CPU scale, study A': study A's plan continued for Figure 2a's short warm-up "
        "(docs/protocols/paper_cpu.md)"),
    "cpu_multi30k_short_g": Study(
        "configs/sweeps/cpu_multi30k_short_g.yaml", "docs/results/cpu_multi30k_short_g.md",
        "The paper at CPU scale, study G: Figure 2a's short warm-up on fresh seeds 17-34 "
        "(docs/protocols/paper_cpu.md)"),
    "cpu_multi30k_short_h": Study(
        "configs/sweeps/cpu_multi30k_short_h.yaml", "docs/results/cpu_multi30k_short_h.md",
        "The paper at CPU scale, study H: Figure 2a's short warm-up at the paper's 1/8 ratio, seeds 35-52 "
        "(docs/protocols/paper_cpu.md)"),
    "bert_cpu_premise_d64": Study(
        "configs/sweeps/bert_cpu_premise_d64.yaml", "docs/results/bert_cpu_premise_d64.md",
        "The paper at CPU scale, study D3: Figure 5a's premise at 12 layers, d 64, 1000 updates "
        "(docs/protocols/paper_cpu.md)"),
    "why_warmup_edge_pilot": Study(
        "configs/sweeps/why_warmup_edge_pilot.yaml", "docs/results/why_warmup_edge_pilot.md",
        "Why warm-up, round three: the Pre-LN pilot (a pilot: it decides no claim; its rule picks the study's "
        "Pre-LN lrs, configs/sweeps/why_warmup_edge.yaml)"),
    "why_warmup_edge": Study(
        "configs/sweeps/why_warmup_edge.yaml", "docs/results/why_warmup_edge.md",
        "Why warm-up, round three: failures within one layout (configs/sweeps/why_warmup_edge.yaml's protocol)"),
    "gated_preln": Study("examples/gated_preln_sweep.yaml", "docs/results/gated_preln.md",
                         "Your own layout: Gated Pre-LN against Post-LN and Pre-LN, with and without warm-up "
                         "(the demo task; docs/your_layout.md)"),
}  # fmt: skip


class GradientStudy(NamedTuple):
    report: str  # the committed report, relative to the repository
    title: str


# Gradient studies: one folder of `prelnx grads` outputs per variant (prelnx/report/variant_gradients.py's VARIANTS),
# under docs/results/<study>/; their reports stay out of the paper's claims table (scripts/claims_table.py reads
# docs/results/<name>/ one level deep only).
GRADIENT_STUDIES = {
    "norm_variants_gradients": GradientStudy(
        "docs/results/norm_variants_gradients.md",
        "The normalisation variants' gradients at initialisation: Figure 3 per variant "
        "(docs/protocols/norm_variants.md)"),
}  # fmt: skip


def raw_dir(study: str, root: Path = ROOT) -> Path:
    """Where a study's raw data is committed: a sweep's docs/results/<study>/runs/, a gradient study's variant
    folders' parent docs/results/<study>/."""
    return root / RESULTS / study / ("" if study in GRADIENT_STUDIES else "runs")


def with_raw_data(root: Path = ROOT) -> list[str]:
    """The studies of STUDIES (sweeps) whose raw data is committed."""
    return [name for name in STUDIES if (raw_dir(name, root) / "sweep.json").is_file()]


def with_gradient_data(root: Path = ROOT) -> list[str]:
    """The studies of GRADIENT_STUDIES with at least one variant folder committed."""
    from prelnx.report.variant_gradients import variant_folders  # noqa: PLC0415

    return [name for name in GRADIENT_STUDIES if variant_folders(raw_dir(name, root))]


def report_of(study: str) -> str:
    return (GRADIENT_STUDIES.get(study) or STUDIES[study]).report


def no_raw_data(study: str, root: Path = ROOT) -> str | None:
    """Why `study` cannot be rebuilt here (its raw data is not committed), or None."""
    if study in GRADIENT_STUDIES:
        if study in with_gradient_data(root):
            return None
        return (f"{study}: no raw data in {RESULTS / study}/ (no variant folder with grads.csv and "
                f"grads_summary.json); keep it first: --collect <folder of the variant folders> --study {study}")
    if (raw_dir(study, root) / "sweep.json").is_file():
        return None
    return (f"{study}: no raw data ({RESULTS / study / 'runs' / 'sweep.json'} is missing); keep it first: "
            f"--collect <its sweep dir> --study {study} (its config: {STUDIES[study].config})")


def _unpacked(raw: Path, into: Path) -> Path:
    """A copy of the raw data with every *.gz decompressed (the report reads the run files as `prelnx sweep` wrote)."""
    shutil.copytree(raw, into)
    for packed in into.rglob("*.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    return into


def rebuild(study: str, root: Path = ROOT, out: Path | None = None) -> Path:
    """Write the study's report (to `out`, by default its committed path) from its committed raw data; the report
    names its raw data folder as the committed report sees it, so a rebuild elsewhere has the same bytes."""
    if study in GRADIENT_STUDIES:
        from prelnx.report.variant_gradients import write_report as write_gradients  # noqa: PLC0415

        gradient = GRADIENT_STUDIES[study]
        return write_gradients(raw_dir(study, root), out or root / gradient.report, gradient.title, f"{study}/")
    from prelnx.report.report import write_report  # noqa: PLC0415 - the script's --help needs no prelnx import

    spec = STUDIES[study]
    out = out or root / spec.report
    label = f"{study}/runs"  # the raw data as docs/results/<report>.md sees it
    with tempfile.TemporaryDirectory() as scratch:
        sweep_dir = _unpacked(raw_dir(study, root), Path(scratch) / study)
        with contextlib.chdir(root):  # a user's layout file is named relative to the repository (collect's --strip)
            return write_report(sweep_dir, out, title=spec.title, sweep_label=label)


def collect(sweep_dir: Path, study: str, root: Path = ROOT, strip: str | None = None) -> Path:
    """Copy the files a report is computed from out of a sweep folder into docs/results/<study>/runs/. `strip`: a
    folder the sweep ran in that held a copy of this repository (e.g. a `git archive` of the commit it ran), taken
    off every path in sweep.json and config.yaml, so that a user's layout file (examples/...) is named relative to
    the repository and the report finds it on any machine."""

    def portable(text: str) -> str:
        return text.replace(strip.rstrip("/") + "/", "") if strip else text

    from prelnx.exits import Refusal  # noqa: PLC0415

    if not (sweep_dir / "sweep.json").is_file():
        raise Refusal(f"--collect {sweep_dir}: not a sweep dir (no sweep.json); give the folder `prelnx sweep` wrote")

    from prelnx.records.raw_data import keep_run  # noqa: PLC0415
    from prelnx.report.arms import load_arms  # noqa: PLC0415
    from prelnx.report.plateau import dictionary_name  # noqa: PLC0415
    from prelnx.sweep.looks import LOOKS_FILE  # noqa: PLC0415

    dest = raw_dir(study, root)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / "sweep.json").write_text(portable((sweep_dir / "sweep.json").read_text()))
    if (sweep_dir / LOOKS_FILE).is_file():  # a sequential plan: the look that decided each claim (the report says)
        (dest / LOOKS_FILE).write_text(portable((sweep_dir / LOOKS_FILE).read_text()))
    for point in json.loads((sweep_dir / "sweep.json").read_text())["runs"]:  # done runs only: others re-run
        keep_run(sweep_dir / point["name"], dest / point["name"], portable)
    from prelnx.plan.data import data_dir  # noqa: PLC0415

    for arm in load_arms(dest)[:1]:  # the dictionary the plateau came from (one dataset per study)
        folder = data_dir(arm.config)
        name = dictionary_name(arm.config)
        for source in (sweep_dir / "data" / name, folder / name if folder is not None else None):
            if source is not None and source.is_file():  # the sweep's copy first, as the plateau reads it
                (dest / "data").mkdir(exist_ok=True)
                shutil.copyfile(source, dest / "data" / name)
                break
    return dest


def collect_gradients(study_dir: Path, study: str, root: Path = ROOT) -> tuple[list[Path], list[str]]:
    """Copy each finished variant folder of `study_dir` (the folder `prelnx grads` wrote the variants into) into
    docs/results/<study>/<variant>/, replacing that variant's; returns the folders kept and, per variant not kept,
    why (not there, or not finished: no grads_summary.json yet). No finished variant at all is bad input."""
    from prelnx.exits import Refusal  # noqa: PLC0415
    from prelnx.report.variant_gradients import RAW_FILES, READ, VARIANTS  # noqa: PLC0415

    if not study_dir.is_dir():
        raise Refusal(f"--collect {study_dir}: no such folder (give the folder holding the variant folders "
                      f"{', '.join(v.folder for v in VARIANTS)})")  # fmt: skip
    kept, skipped = [], []
    for variant in VARIANTS:
        source, dest = study_dir / variant.folder, raw_dir(study, root) / variant.folder
        if missing := [name for name in READ if not (source / name).is_file()]:
            why = "no such folder" if not source.is_dir() else f"not finished (no {', '.join(missing)})"
            skipped.append(f"{variant.folder}: {why}; not collected")
            continue
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in RAW_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, dest / name)
        kept.append(dest)
    if not kept:
        raise Refusal(f"--collect {study_dir}: no finished variant folder ({'; '.join(skipped)})")
    return kept, skipped


def check(studies: list[str], root: Path = ROOT) -> list[str]:
    """Rebuild each study's report into a temp folder; the committed reports that differ (or are not committed)."""
    differ = []
    with tempfile.TemporaryDirectory() as scratch:
        for study in studies:
            committed = root / report_of(study)
            rebuilt = rebuild(study, root, Path(scratch) / study / committed.name)
            if not committed.is_file():
                differ.append(f"{committed.relative_to(root)}: not committed (its raw data is)")
            elif rebuilt.read_bytes() != committed.read_bytes():
                differ.append(f"{committed.relative_to(root)}: differs from its rebuild")
    return differ


def keep_in_progress(sweep_dir: Path, study: str, root: Path = ROOT) -> Path:
    """A study whose look is not complete yet: its done runs' files into docs/results/<study>/in_progress/ (no
    report: an interim look publishes no verdict, docs/sequential.md), so that the next session, on any machine,
    resumes it with `prelnx sweep --config <its config> --raw-data docs/results/<study>/in_progress`."""
    from prelnx.records.raw_data import keep_run  # noqa: PLC0415

    dest = root / RESULTS / study / "in_progress"
    for point in json.loads((sweep_dir / "sweep.json").read_text())["runs"]:
        keep_run(sweep_dir / point["name"], dest / point["name"])
    return dest


def withdrawn(root: Path = ROOT) -> list[dict[str, str]]:
    """docs/results/withdrawn.yaml: the reports withdrawn because their raw data was never kept, each with its config
    and the command that re-runs it."""
    return yaml.safe_load((root / MANIFEST).read_text())["reports"]


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", choices=sorted({*STUDIES, *GRADIENT_STUDIES}), help="only this study")
    parser.add_argument("--collect", type=Path, metavar="DIR", help="keep this sweep's raw data (a gradient study: "
                        "the folder holding its variant folders) for --study")
    parser.add_argument("--check", action="store_true", help="rebuild into a temp folder and exit 1 when a committed "
                        "report differs from its rebuild (writes nothing)")
    parser.add_argument("--in-progress", action="store_true", help="with --collect: the study's look is not complete: "
                        "keep its done runs in docs/results/<study>/in_progress/ (resumable, no report)")
    parser.add_argument("--strip", metavar="FOLDER", help="with --collect: the repository copy the sweep ran in, "
                        "taken off its paths (a user's layout file then named relative to the repository)")
    args = parser.parse_args(argv)
    from prelnx.exits import Refusal  # noqa: PLC0415 - bad input's one error line

    if args.collect and not args.study:
        parser.error("--collect needs --study")
    if args.in_progress and args.study in GRADIENT_STUDIES:
        parser.error("--in-progress is for a sweep study (a gradient study keeps each finished variant folder)")
    if args.collect and args.check:
        parser.error("--check writes nothing: run --collect first, then --check")
    try:
        if args.collect and args.study in GRADIENT_STUDIES:
            kept, skipped = collect_gradients(args.collect, args.study, root)
            print("\n".join([*(f"raw data: {p}" for p in kept), *skipped]))
        elif args.collect and args.in_progress:
            print(f"in progress (no report): {keep_in_progress(args.collect, args.study, root)}")
            return 0
        elif args.collect:
            print(f"raw data: {collect(args.collect, args.study, root, strip=args.strip)}")
        if args.study and (why := no_raw_data(args.study, root)):
            print(f"error: {why}", file=sys.stderr)
            return 2
        studies = [args.study] if args.study else with_raw_data(root) + with_gradient_data(root)
        if args.check:
            differ = check(studies, root)
            print("\n".join(differ or [f"{len(studies)} report(s) equal to their rebuild"]))
            return 1 if differ else 0
        for study in studies:
            print(f"{study}: {rebuild(study, root).relative_to(root)}")
    except Refusal as error:  # bad input: one line, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0

if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from prelnx import console  # fairseq's import-time INFO lines stay off, as under the CLI

    console.configure()
    sys.exit(main())
