"""The report's claim checks on hand-made run dirs (no training): verdicts follow the numbers."""

from __future__ import annotations

import json
from pathlib import Path

from prelnx.report.claims import load_arms, postln_adam_needs_warmup, preln_without_warmup_matches


def make_run(sweep: Path, name: str, layout: str, warmup: int, losses: list[float], status: str = "finished") -> dict:
    run = sweep / name
    run.mkdir(parents=True)
    config = {"model": {"layout": layout}, "optimizer": {"name": "adam", "lr": 0.002},
              "schedule": {"warmup_updates": warmup}, "train": {"seed": 1}}  # fmt: skip
    (run / "config.yaml").write_text(json.dumps(config))
    rows = [{"epoch": e + 1, "num_updates": 10 * (e + 1), "valid_loss": v, "valid_bleu": 10 - v} for e, v in enumerate(losses)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "status.json").write_text(json.dumps({"status": status, "update": rows[-1]["num_updates"]}))
    return {"name": name, "overrides": {}}


def test_verdicts_follow_the_measured_losses(tmp_path):
    runs = [make_run(tmp_path, "post0", "post", 0, [7.0, 7.0]), make_run(tmp_path, "post200", "post", 200, [6.0, 4.0]),
            make_run(tmp_path, "pre0", "pre", 0, [5.0, 3.5])]  # fmt: skip
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "t", "runs": runs}))
    arms = load_arms(tmp_path)
    assert postln_adam_needs_warmup(arms).holds == "holds"  # 7.0 vs 4.0: more than the 0.5-bit margin
    assert preln_without_warmup_matches(arms).holds == "holds"


def test_a_difference_inside_the_margin_does_not_hold(tmp_path):
    runs = [make_run(tmp_path, "post0", "post", 0, [4.3]), make_run(tmp_path, "post200", "post", 200, [4.0])]
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "t", "runs": runs}))
    assert postln_adam_needs_warmup(load_arms(tmp_path)).holds == "does not hold"
