"""Round three's protocol (configs/sweeps/why_warmup_edge.yaml, issue 49) as committed: the cells, seeds, order and
intervention tier its header states are what the sweep expands to, the pilot is a pilot, and the report's cell of
a run is the key set the protocol names (no training; the configs expanded as `prelnx sweep --dry-run` does)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from prelnx.config.load import config_to_dict
from prelnx.records.run_config import arm_values
from prelnx.sweep.spec import expand, load_spec

SWEEPS = Path(__file__).resolve().parents[2] / "configs" / "sweeps"


def cell(point) -> tuple:
    o = point.overrides
    return (o["model.layout"], o["optimizer.lr"], o["schedule.warmup_updates"], o["optimizer.second_moment_init"],
            o["optimizer.bias_correction"])  # fmt: skip


def test_the_edge_study_expands_to_its_protocols_cells_seed_by_seed():
    points = expand(load_spec(SWEEPS / "why_warmup_edge.yaml"))
    assert len(points) == 96  # 64 in cells, 32 interventions, as the header estimates
    cells = Counter(cell(p) for p in points)
    assert len(cells) == 12 and set(cells.values()) == {8}
    post = {c for c in cells if c[0] == "post" and c[3] == "zero" and c[4]}
    assert post == {("post", lr, 0, "zero", True) for lr in (4e-4, 5e-4, 6e-4, 7e-4)} | {
        ("post", 1e-3, w, "zero", True) for w in (30, 60)}
    assert len({c for c in cells if c[0] == "pre"}) == 2  # at the lrs the pilot's amendment sets
    interventions = {c for c in cells if c[3] == "gradient" or not c[4]}
    assert interventions == {("post", lr, 0, init, bc) for lr in (6e-4, 7e-4) for init, bc in
                             (("gradient", True), ("zero", False))}  # fmt: skip
    # tiers 1-2 seed by seed (a cut leaves whole seeds), then the interventions seed by seed
    seeds = [p.overrides["train.seed"] for p in points]
    assert seeds[:64] == [s for s in range(1, 9) for _ in range(8)]
    assert seeds[64:] == [s for s in range(1, 9) for _ in range(4)]
    assert all(cell(p) not in interventions for p in points[:64])
    config = points[0].config
    assert config.train.max_epoch == 2 and config.train.diagnostics.every_updates == 5
    assert config.train.diagnostics.sharpness_every_updates == 10 and config.schedule.decay == "constant"


def test_a_cell_is_every_training_key_but_the_seed():
    points = expand(load_spec(SWEEPS / "why_warmup_edge.yaml"))
    factors = [arm_values(p.config) for p in points]  # the one table of keys that cannot change training
    assert "train.seed" not in factors[0] and "train.threads" not in factors[0] and "name" not in factors[0]
    assert not any(k.startswith(("eval.", "train.diagnostics.")) for k in factors[0])
    assert "optimizer.betas" in factors[0] and "model.dropout" in factors[0]
    assert len({tuple(sorted(f.items())) for f in factors}) == 12  # the 12 cells, every seed of one cell alike


def test_the_pilot_is_pre_ln_without_warm_up_at_five_lrs_and_two_seeds():
    points = expand(load_spec(SWEEPS / "why_warmup_edge_pilot.yaml"))
    assert len(points) == 10 and {p.config.model.layout for p in points} == {"pre"}
    assert {p.config.schedule.warmup_updates for p in points} == {0}
    assert sorted({p.config.optimizer.lr for p in points}) == [2e-3, 3e-3, 5e-3, 7e-3, 1e-2]
    assert "PILOT" in (SWEEPS / "why_warmup_edge_pilot.yaml").read_text()
