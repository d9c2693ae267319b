"""The README's demo table and docs/results/demo.md from ONE demo run, so that the two cannot drift (issue 21.7).

    .venv/bin/python scripts/demo_results.py runs/demo      # after `bash scripts/demo.sh`

Writes docs/results/demo.md (`prelnx report`, with its figures), docs/results/demo_summary.csv (the sweep's
summary.csv, as written by `prelnx sweep`), and the table between the README's `demo-table` markers, rendered from
that csv. tests/test_readme_demo.py checks that the README's table is the csv's rendering, so neither can be edited
alone. The numbers are this machine's: fp32 CPU results differ between machines of one kind (README, Results).
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ROOT / "docs" / "results" / "demo_summary.csv"
README = ROOT / "README.md"
BEGIN, END = "<!-- demo-table begin (scripts/demo_results.py) -->", "<!-- demo-table end -->"

# The demo sweep's three arms (configs/sweeps/demo.yaml), named as its run dirs are.
ARMS = {
    "layout-post_warmup-0": "Post-LN, no warm-up",
    "layout-post_warmup-200": "Post-LN, 200 warm-up updates + inverse-sqrt from update 200",
    "layout-pre_warmup-0": "Pre-LN, no warm-up",
}


def _number(text: str, digits: int) -> str:
    return f"{float(text):.{digits}f}" if text not in ("", None) else "-"


def render(summary: Path = SUMMARY) -> str:
    """The README's table from a demo sweep's summary.csv: one row per arm, in the sweep's order."""
    rows = {row["run"]: row for row in csv.DictReader(summary.open(newline=""))}
    missing = [name for name in ARMS if name not in rows]
    if missing:
        raise SystemExit(f"{summary}: not a demo sweep's summary (no run {', '.join(missing)})")
    # No wall time: a run's time says nothing without its machine and load (the README gives the idle demo's time
    # with its CPU; summary.csv keeps each run's).
    lines = ["| arm | status | final valid loss | best valid loss | best valid BLEU | updates |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, label in ARMS.items():
        row = rows[name]
        lines.append(f"| {label} | {row['status']} | {_number(row['final_valid_loss'], 3)} | "
                     f"{_number(row['best_valid_loss'], 3)} | {_number(row['best_valid_bleu'], 2)} | "
                     f"{row['update'] or '-'} |")  # fmt: skip
    return "\n".join(lines)


def readme_block(text: str) -> str:
    """The README's current table (between the markers)."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{README}: the demo-table markers are missing")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(sweep_dir: Path) -> None:
    summary = sweep_dir / "summary.csv"
    if not summary.is_file():
        raise SystemExit(f"{summary}: no such file; run `bash scripts/demo.sh` first (it writes runs/demo)")
    shutil.copyfile(summary, SUMMARY)
    table = render(SUMMARY)
    text = README.read_text()
    readme_block(text)
    head, rest = text.split(BEGIN, 1)
    README.write_text(f"{head}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}")
    prelnx = Path(sys.executable).with_name("prelnx")
    subprocess.run([str(prelnx), "report", str(sweep_dir), "--out", str(ROOT / "docs" / "results"), "--name", "demo",
                    "--title", "prelnx report: the demo (scripts/demo.sh)"], check=True)  # fmt: skip
    print(f"wrote {SUMMARY.relative_to(ROOT)}, the README's demo table and docs/results/demo.md")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: scripts/demo_results.py SWEEP_DIR   (e.g. runs/demo)")
    from prelnx import console  # fairseq's import-time INFO lines stay off, as under the CLI

    console.configure()
    main(Path(sys.argv[1]))
