"""Issue 47's "done when" on tiny real trainings (tests/conftest.py's TINY): a spec with arms: and a sequential
seeds: plan plans (--dry-run), runs look by look through `prelnx sweep` (the report's decider injected by the
command), settles one claim at the first look - Post-LN needs warm-up is not testable there, its premise (Post-LN
with warm-up at the largest lr trains) failing in every seed at lr 1e6 - and keeps one open - Pre-LN without
warm-up matches Post-LN with warm-up: at lr 1 every Pre-LN seed without warm-up fails to train beside a Post-LN
whose 10,000-update warm-up keeps its lr at most 0.01 in 100 updates (it trains, ~1.3 bits below the plateau, past the
1-bit margin), which Fisher's count decides only past 3 seeds a side - and adds the second look's seed only to the
arms an open claim reads. Every arm shares one context (20 epochs, BLEU off, validated at update 100 only), so the
engine compares them (issue 46: runs that differ in any other key never are). A second `prelnx sweep` trains nothing
and gives the same looks; `prelnx status` shows them.
The spec and its sweep are tests/conftest.py's `sequential_tiny_sweep`, which test_real_sweep_dead_arm.py reads too.
(A kill at any look: tests/sweep/test_looks.py, on records written by hand.)"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from prelnx.cli import app
from prelnx.sweep.looks import read_state

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_a_sequential_sweep_of_tiny_trainings(sequential_tiny_sweep, tmp_path):
    spec, sweep_dir, done = sequential_tiny_sweep  # the spec and its sweep: tests/conftest.py
    dry = runner.invoke(app, ["sweep", "-c", str(spec), "--out", str(tmp_path / "runs"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "2 looks at 2, 3 seeds per arm" in dry.output and "at most: 12 runs (4 arms x 3 seeds)" in dry.output
    assert "first look: 8 runs: pre_dead_seed-1," in dry.output and not (tmp_path / "runs").exists()

    assert done.exit_code in (0, 3), done.output  # 3: diverged runs (the one exit table)
    report = (sweep_dir / "report.md").read_text()  # the report says how each claim was decided, and at which look
    assert "## How each claim was decided" in report and "postln_adam_needs_warmup: decided at look 1 of 2" in report
    state = read_state(sweep_dir)
    assert state is not None and state.done
    needs = state.claims["postln_adam_needs_warmup"]
    assert (needs.state.value, needs.verdict, needs.look) == ("decided", "not testable at this scale", 0)
    # its arms: the two at lr 1e6 it compares (issue 46's per-lr cases: lr 1 has no Post-LN without warm-up, no case)
    assert set(needs.arms) == {"post_cold", "post_warm_big"}
    matches = state.claims["preln_without_warmup_matches"]
    assert (matches.state.value, matches.verdict, matches.look) == ("undecided at the last look", "inconclusive", 1)
    assert set(matches.arms) == {"pre_dead", "post_warm"}
    runs = [p["name"] for p in json.loads((sweep_dir / "sweep.json").read_text())["runs"]]
    seeds = {arm: sum(r.startswith(f"{arm}_seed-") for r in runs) for arm in ("pre_dead", "post_cold",
                                                                             "post_warm_big", "post_warm")}  # fmt: skip
    kept_open = {arm for claim in state.claims.values() if claim.look == 1 for arm in claim.arms}
    assert seeds == {arm: 3 if arm in kept_open else 2 for arm in seeds}
    assert seeds["post_cold"] == 2 and seeds["pre_dead"] == 3  # settled at look 1 / read by the open claim
    assert all((sweep_dir / run / "status.json").is_file() for run in runs)

    trained = {run: (sweep_dir / run / "metrics.jsonl").stat().st_mtime_ns for run in runs}
    again = runner.invoke(app, ["sweep", "-c", str(spec), "--out", str(sweep_dir)])
    assert "look 2 of 2" in again.output and read_state(sweep_dir) == state
    assert {run: (sweep_dir / run / "metrics.jsonl").stat().st_mtime_ns for run in runs} == trained  # none retrained
    status = runner.invoke(app, ["status", str(sweep_dir)])
    assert "look 2 of 2 (3 seeds per arm), ended" in status.output
    assert "claim postln_adam_needs_warmup: decided at look 1 (not testable at this scale; 4 runs)" in status.output
