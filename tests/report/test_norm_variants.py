"""The normalisation variants (issue 48) in the verdict engine, decided from real run-dir files (no training): the
variants' runs are loaded, paper.yaml's claims stay within one (model.norm, model.qk_norm) context, only the claims
configs/sweeps/cpu_norm_variants.yaml's header names are decided on its grid, and each of methods.yaml's
`norm_variants` claims holds, does not hold or is not testable as its rule says (prelnx/report/norm_claims.py)."""

from __future__ import annotations

import pytest

from prelnx.paper import norm_variants_data, paper_data
from prelnx.report.arms import load_arms
from prelnx.report.claims import paper_outcomes
from prelnx.report.norm_claims import norm_claims
from prelnx.report.outcome import PremiseState
from prelnx.report.report import write_report
from prelnx.report.sequential import all_outcomes, decide_look
from prelnx.sequential import ClaimState, SeedPlan
from prelnx.report.stats import Verdict
from tests.report.runs import Sweep, write_dictionary

# the study's grid (configs/sweeps/cpu_norm_variants.yaml): (layout, norm, qk_norm)
GRID = [("post", "layernorm", False), ("pre", "layernorm", False), ("pre", "rmsnorm", False),
        ("deepnorm", "layernorm", False), ("pre", "dyt", False), ("post", "layernorm", True), ("pre", "rmsnorm", True)]
GOOD = [5.90, 6.00, 6.10]  # trained: valid nll 0.3 below these, far under the plateau (8.30 bits) minus 1 bit
WORSE = [7.20, 7.30, 7.40]  # trained (nll 6.9-7.1, under 7.30), 1.3 bits worse than GOOD
FAILED = [8.60, 8.70, 8.80]  # finished above the plateau minus 1 bit: failed to train


def _norm(norm: str, qk_norm: bool) -> dict[str, object]:
    return {"model.norm": norm, "model.qk_norm": qk_norm}


def variant_sweep(tmp_path, finals: dict[tuple[str, str, bool, int], list[float]] | None = None) -> Sweep:
    """Every arm of the grid at warm-up 0 and 200, 3 seeds; Post-LN (with or without QK-Norm) ends 1.3 bits worse
    without warm-up, DyT 1 bit worse than LayerNorm without it. `finals` replaces an arm's final losses."""
    write_dictionary(tmp_path / "data")  # the unigram plateau: 8.30 bits
    sweep = Sweep(tmp_path / "cpu_norm_variants", tmp_path / "data")
    for layout, norm, qk in GRID:
        for warmup in (0, 200):
            found = (finals or {}).get((layout, norm, qk, warmup))
            default = WORSE if layout == "post" and not warmup else \
                [f + 1.0 for f in GOOD] if norm == "dyt" and not warmup else GOOD  # fmt: skip
            sweep.seeds(layout, warmup, found or default, lr=2e-3, extra=_norm(norm, qk))
    return sweep


def test_the_variants_runs_are_loaded_with_their_norm_as_context(tmp_path):
    arms = load_arms(variant_sweep(tmp_path).save())
    assert len(arms) == 7 * 2 * 3  # every run, the variants' too
    assert {(a.layout, a.norm, a.qk_norm) for a in arms} == set(GRID)
    rms = next(a for a in arms if a.norm == "rmsnorm" and not a.qk_norm)
    assert dict(rms.context)["model.norm"] == '"rmsnorm"'
    assert rms.context_label == "model.norm rmsnorm, model.qk_norm false"


def test_paper_claims_are_decided_within_each_norm(tmp_path):
    arms = load_arms(variant_sweep(tmp_path).save())
    outcomes = paper_outcomes(arms, paper_data())[1]
    needs = outcomes["postln_adam_needs_warmup"]  # LayerNorm post/pre, and Post-LN + QK-Norm as its own context
    assert [c.label for c in needs.cases] == ["model.norm layernorm, model.qk_norm false: lr 0.002",
                                              "model.norm layernorm, model.qk_norm true: lr 0.002"]
    assert needs.verdict is Verdict.HOLDS
    for claim in ("preln_without_warmup_matches", "preln_converges_faster"):  # Pre-LN exists in 4 norms, Post-LN in 2
        cases = outcomes[claim].cases
        assert len(cases) == 1 and cases[0].label.startswith("model.norm layernorm, model.qk_norm false: ")
        assert cases[0].comparison.a.n == 3 and cases[0].comparison.b.n == 3  # LayerNorm's 3 seeds, none pooled
        assert "rmsnorm" not in cases[0].comparison.a.label and "dyt" not in cases[0].comparison.a.label


def test_only_the_protocols_claims_are_decided_on_its_grid(tmp_path):
    outcomes = all_outcomes(load_arms(variant_sweep(tmp_path).save()))  # what the sequential looks decide
    decided = {cid for cid, o in outcomes.items() if o.verdict is not Verdict.NOT_MEASURED}
    assert decided == {"postln_adam_needs_warmup", "preln_without_warmup_matches", "preln_converges_faster",
                       "deepnorm#deepnorm_matches_postln", "rmsnorm_matches_layernorm", "dyt_matches_layernorm",
                       "qk_norm_fewer_failures"}
    assert "pre#preln_no_warmup" not in outcomes and "pre#preln_matches_postln" not in outcomes
    deepnorm = outcomes["deepnorm#deepnorm_matches_postln"].cases[0].comparison
    assert deepnorm.a.n == deepnorm.b.n == 3  # DeepNorm against Post-LN + LayerNorm only, QK-Norm's never pooled


def test_the_sequential_looks_decide_the_variants_claims_on_their_arms(tmp_path):
    sweep = variant_sweep(tmp_path)
    groups: dict[str, list[str]] = {}
    for point in sweep.points:  # an arm: the run's name without its seed
        groups.setdefault(point["name"].replace(f"_s{point['overrides']['train.seed']}", ""), []).append(point["name"])
    claims = {c.claim: c for c in decide_look(sweep.save(), {k: tuple(v) for k, v in groups.items()}, SeedPlan((3, 6)), 0)}
    rms = claims["rmsnorm_matches_layernorm"]
    assert sorted(rms.arms) == sorted(k for k in groups if k.startswith("pre_") and "_normrmsnorm_qk_normFalse" in k
                                      or k.startswith("pre_") and "_normlayernorm_qk_normFalse" in k)
    assert rms.runs == 12 and rms.state is ClaimState.OPEN  # 3 seeds: the interval is not yet inside at look 1's level
    qk_pairs = ("post_adam_w{}_lr0.002_normlayernorm_qk_norm{}", "pre_adam_w{}_lr0.002_normrmsnorm_qk_norm{}")
    assert sorted(claims["qk_norm_fewer_failures"].arms) == sorted(pair.format(w, qk) for pair in qk_pairs
                                                                   for w in (0, 200) for qk in (False, True))


def test_norm_claims_only_on_a_sweep_with_variants(tmp_path):
    sweep = Sweep(tmp_path / "plain", tmp_path / "data")
    write_dictionary(tmp_path / "data")
    sweep.seeds("post", 0, FAILED, lr=2e-3)
    sweep.seeds("pre", 0, GOOD, lr=2e-3)
    sweep.seeds("deepnorm", 0, GOOD, lr=2e-3)  # a later method: methods.yaml's claims are read
    arms = load_arms(sweep.save())
    assert norm_claims(arms) == ([], {})
    assert "pre#preln_no_warmup" in all_outcomes(arms)  # a LayerNorm sweep keeps every methods.yaml claim


def test_rmsnorm_holds_and_dyt_does_not_hold_per_warmup_arm(tmp_path):
    outcomes = norm_claims(load_arms(variant_sweep(tmp_path).save()))[1]
    rms = outcomes["rmsnorm_matches_layernorm"]
    assert [c.label for c in rms.cases] == ["Pre-LN + RMSNorm vs Pre-LN + LayerNorm, no warm-up, adam lr 0.002",
                                            "Pre-LN + RMSNorm vs Pre-LN + LayerNorm, 200 warm-up, adam lr 0.002"]
    assert rms.verdict is Verdict.HOLDS
    assert all(c.premise.state is PremiseState.MET for c in rms.cases)
    for case in rms.cases:  # against Pre-LN + LayerNorm, never Post-LN
        assert case.comparison.b.label.startswith("Pre-LN adam lr 0.002")
        assert "model.norm layernorm, model.qk_norm false" in case.comparison.b.label
    dyt = outcomes["dyt_matches_layernorm"]
    assert [j.verdict for j in dyt.judged()] == [Verdict.DOES_NOT_HOLD, Verdict.HOLDS]
    assert dyt.verdict is Verdict.DOES_NOT_HOLD
    assert dyt.cases[0].comparison.estimate == pytest.approx(1.0)
    assert norm_variants_data()["claims"][0]["margin_bits"] == paper_data()["training"][3]["margin_bits"]


def test_a_variant_is_compared_within_its_other_context_keys_only(tmp_path):
    write_dictionary(tmp_path / "data")
    sweep = Sweep(tmp_path / "depths", tmp_path / "data")
    for layers, shift in ((6, 0.0), (3, 1.0)):  # at 3 layers RMSNorm ends 1 bit worse; LayerNorm at 6 only
        depth = {"model.encoder_layers": layers}
        sweep.seeds("pre", 0, [f + shift for f in GOOD], lr=2e-3, extra={**_norm("rmsnorm", False), **depth})
        if layers == 6:
            sweep.seeds("pre", 0, GOOD, lr=2e-3, extra={**_norm("layernorm", False), **depth})
    rms = norm_claims(load_arms(sweep.save()))[1]["rmsnorm_matches_layernorm"]
    assert [c.label for c in rms.cases] == ["model.encoder_layers 6: Pre-LN + RMSNorm vs Pre-LN + LayerNorm, no "
                                            "warm-up, adam lr 0.002"]  # 3 layers: no LayerNorm arm of its own
    assert rms.verdict is Verdict.HOLDS and rms.cases[0].family == "model.encoder_layers 6"


def test_a_variant_is_not_testable_where_layernorm_failed_a_seed(tmp_path):
    finals = {("pre", "layernorm", False, 0): [5.9, 6.0, 8.7]}  # LayerNorm failed one seed without warm-up
    outcomes = norm_claims(load_arms(variant_sweep(tmp_path, finals).save()))[1]
    rms = outcomes["rmsnorm_matches_layernorm"]
    assert rms.cases[0].premise.state is PremiseState.FAILED and "1 failed to train" in rms.cases[0].premise.note
    assert [j.verdict for j in rms.judged()] == [Verdict.NOT_TESTABLE, Verdict.HOLDS]
    assert rms.verdict is Verdict.HOLDS  # the testable case decides; the other is shown as not testable


def _qk_sweep(tmp_path, without: int, with_qk: int, seeds: int) -> Sweep:
    """Post-LN without warm-up, `seeds` seeds without and with QK-Norm, `without`/`with_qk` of them diverged."""
    write_dictionary(tmp_path / "data")
    sweep = Sweep(tmp_path / "qk", tmp_path / "data")
    for qk, failed in ((False, without), (True, with_qk)):
        for seed in range(1, seeds + 1):
            if seed <= failed:
                sweep.run("post", 0, [9.0], seed=seed, lr=2e-3, status="diverged", extra=_norm("layernorm", qk))
            else:
                sweep.run("post", 0, [9.0, 7.0, 6.0], seed=seed, lr=2e-3, extra=_norm("layernorm", qk))
    return sweep


@pytest.mark.parametrize(("without", "with_qk", "seeds", "verdict"), [
    (4, 0, 4, Verdict.HOLDS),  # 0/4 vs 4/4: one-sided p = 1/70
    (1, 5, 5, Verdict.DOES_NOT_HOLD),  # QK-Norm fails more: 5/5 vs 1/5, p = 5/210
    (0, 2, 4, Verdict.NOT_TESTABLE),  # the arm without QK-Norm never fails: nothing to fail less than
    (2, 1, 4, Verdict.INCONCLUSIVE),
])  # fmt: skip
def test_qk_norm_fewer_failures_by_fishers_exact_test(tmp_path, without, with_qk, seeds, verdict):
    outcome = norm_claims(load_arms(_qk_sweep(tmp_path, without, with_qk, seeds).save()))[1]["qk_norm_fewer_failures"]
    assert [c.label for c in outcome.cases] == ["Post-LN + LayerNorm with and without QK-Norm, no warm-up, adam lr "
                                                "0.002"]
    assert outcome.verdict is verdict
    premise = outcome.cases[0].premise
    assert premise.state is (PremiseState.FAILED if not without else PremiseState.MET)
    said = f"Post-LN + LayerNorm failed {without}/{seeds}; Post-LN + LayerNorm + QK-Norm {with_qk}/{seeds}"
    assert said in premise.note


def test_qk_norm_pairs_on_the_studys_grid(tmp_path):
    outcome = norm_claims(load_arms(variant_sweep(tmp_path).save()))[1]["qk_norm_fewer_failures"]
    assert [c.label for c in outcome.cases] == [
        "Post-LN + LayerNorm with and without QK-Norm, no warm-up, adam lr 0.002",
        "Post-LN + LayerNorm with and without QK-Norm, 200 warm-up, adam lr 0.002",
        "Pre-LN + RMSNorm with and without QK-Norm, no warm-up, adam lr 0.002",
        "Pre-LN + RMSNorm with and without QK-Norm, 200 warm-up, adam lr 0.002"]  # fmt: skip
    # no arm without QK-Norm fails a seed: nothing to fail less than
    assert [j.verdict for j in outcome.judged()] == [Verdict.NOT_TESTABLE] * 4
    assert [c.premise.state for c in outcome.cases] == [PremiseState.FAILED] * 4


@pytest.mark.slow  # draws the figures
def test_the_report_has_the_variants_section_beside_their_set_ups(tmp_path):
    text = write_report(variant_sweep(tmp_path).save(), tmp_path / "out" / "cpu_norm_variants.md").read_text()
    section = text.split("## The normalisation variants' claims")[1].split("\n## ")[0]
    for claim in norm_variants_data()["claims"]:
        assert f"*Their set-up: {claim['setting']}.*" in section
    assert section.count("**does not hold**") == 1 and section.count("**holds**") == 1  # DyT; RMSNorm
    assert "Preln_no_warmup" not in text and "Pre-LN's warm-up stage can be safely removed." not in text
