"""Issue 46 (the verdict engine, round four), each finding on hand-made run dirs (tests/report/runs.py, no
training); each failed on the engine at 0999619 and passes now. Finding 3 (the prediction engine) is another
engineer's (tests/report/test_why_warmup*.py); a layout file's numbers checked and its claims frozen are
tests/report/test_frozen_claims.py, the committed run-dir formats tests/report/test_run_dir_formats.py. Plateau 8.30 bits (a uniform 316-word dictionary); runs.py writes
nll = loss - 0.3 unless given, so a seed trained when its final nll is <= 7.30 (paper.yaml's trained_margin_bits)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from prelnx.paper import methods_data, paper_data
from prelnx.report.arms import load_arms, seed_groups
from prelnx.report.claims import TRAINING_CHECKS
from prelnx.report.placements import check_placements
from prelnx.report.render import method_claims_table
from prelnx.report.stats import Verdict
from prelnx.report.theory_claims import check_theory, judge
from prelnx.report.warmup_free import check_methods
from tests.report.runs import Sweep, write_dictionary


def _sweep(tmp_path, name: str = "sweep") -> Sweep:
    write_dictionary(tmp_path / "data")
    return Sweep(tmp_path / name, tmp_path / "data")


def _reaching(at: int, length: int, final: float, every: int = 10) -> list[float]:
    """Validations `every` updates apart: 7.0 until `at`, where the curve first reaches 6.5 bits (6.45), then
    `final`."""
    return [7.0] * (at // every - 1) + [6.45] + [final] * (length - at // every)


def _method(sweep: Sweep, layout: str, claim: str):
    methods = check_methods(load_arms(sweep.save()), methods_data())
    (found,) = [m for m in methods if m.spec["layout"] == layout]
    return found, found.outcomes[claim]


def test_finding_1_a_seed_that_reached_the_target_reached_it_whatever_its_final_loss(tmp_path):
    """ReZero reaches 6.5 bits at update 60 (65) in 4/4 seeds, Post-LN with warm-up at 100 (105): ratio ~0.6, inside
    the claimed [0.51, 0.80]; ReZero then ends at 7.9 bits (nll 7.6, above the 7.30 trained threshold): "failed to
    train" is its class, a separate column; it still reached the target, so the claim holds (was: 0 reached it,
    failures 4/4 vs 0/4, Fisher p = 0.0143, does not hold)."""
    sweep = _sweep(tmp_path)
    for seed, (mine, post) in enumerate(((60, 100), (60, 100), (65, 105), (60, 100)), start=1):
        sweep.run("rezero", 0, _reaching(mine, 48, 7.9, 5), seed=seed, every=5)
        sweep.run("post", 80, _reaching(post, 48, 5.9, 5), seed=seed, every=5)
    method, outcome = _method(sweep, "rezero", "rezero_converges_faster")
    (case,) = outcome.cases
    a, b = case.comparison.a, case.comparison.b
    assert a.values == pytest.approx(tuple(math.log(u) for u in (60, 60, 65, 60))) and a.failed == 0
    assert b.measured == 4 and case.premise.state.value == "met"
    assert outcome.verdict is Verdict.HOLDS
    assert any("ReZero adam lr 0.001, no warm-up: 4 failed to train" in note for note in outcome.notes)
    table = "\n".join(method_claims_table([method]))
    assert "(4 seeds)" in table and "4 failed to train" in table  # the reading and the class, apart


def test_finding_1_a_seed_that_never_reached_the_target_did_not_whatever_its_class(tmp_path):
    """The converse: a trained seed whose curve never goes below the target did not reach it; a diverged seed that
    reached it before diverging did."""
    sweep = _sweep(tmp_path)
    sweep.run("rezero", 0, [7.0] * 24, seed=1)  # trained (nll 6.7), never at 6.5
    sweep.run("rezero", 0, _reaching(60, 8, 6.2), seed=2, status="diverged")  # reached it at 60, then diverged
    sweep.run("rezero", 0, _reaching(70, 24, 6.2), seed=3)
    for seed in (1, 2, 3):
        sweep.run("post", 80, _reaching(100, 24, 5.9), seed=seed)
    _, outcome = _method(sweep, "rezero", "rezero_converges_faster")
    a = outcome.cases[0].comparison.a
    assert a.values == pytest.approx((math.log(60), math.log(70))) and a.failed == 1 and a.diverged == 0


# Finding 2: an arm is one config (every key that can change what is trained, except the seed).

TRAINING = {claim["id"]: claim for claim in paper_data()["training"]}
DEEP = {"model.encoder_layers": 12, "model.decoder_layers": 12}


def test_finding_2_runs_that_differ_in_another_key_are_another_arm_never_pooled(tmp_path):
    """Adding Pre-LN 12-layer runs (a depth study) to a sweep leaves "Pre-LN matches Post-LN with warm-up" as it
    was (was: the 12-layer seeds pooled into Pre-LN's arm, 6 seeds, +0.60 [...] inconclusive)."""
    verdicts = []
    for depth in (False, True):
        sweep = _sweep(tmp_path, f"depth{depth}")
        sweep.seeds("pre", 0, [6.00, 6.05, 6.10])
        sweep.seeds("post", 120, [6.02, 6.04, 6.09])
        if depth:
            sweep.seeds("pre", 0, [7.20, 7.25, 7.30], extra=DEEP)
        arms = load_arms(sweep.save())
        outcome = TRAINING_CHECKS["preln_without_warmup_matches"](arms, TRAINING["preln_without_warmup_matches"])
        verdicts.append(outcome.verdict)
        assert [c.comparison.a.n for c in outcome.cases] == [3]  # 3 seeds, never 6
    assert verdicts == [Verdict.HOLDS, Verdict.HOLDS]


def test_finding_2_arms_that_differ_in_a_key_outside_the_claim_are_not_measured_naming_it(tmp_path):
    sweep = _sweep(tmp_path)
    sweep.seeds("pre", 0, [6.00, 6.05, 6.10], extra=DEEP)
    sweep.seeds("post", 120, [6.02, 6.04, 6.09])
    outcome = TRAINING_CHECKS["preln_without_warmup_matches"](load_arms(sweep.save()),
                                                              TRAINING["preln_without_warmup_matches"])  # fmt: skip
    assert outcome.verdict is Verdict.NOT_MEASURED and not outcome.cases
    assert "model.decoder_layers, model.encoder_layers" in outcome.missing


def test_finding_2_a_seed_number_counts_once_per_arm(tmp_path):
    """The same arm and seed twice (another run name, a key that cannot change training): one seed."""
    sweep = _sweep(tmp_path)
    sweep.seeds("pre", 0, [6.00, 6.05, 6.10])
    sweep.run("pre", 0, [9.0, 7.5, 6.0], seed=1, suffix="_again", extra={"train.threads": 2})
    sweep.seeds("post", 120, [6.02, 6.04, 6.09])
    arms = load_arms(sweep.save())
    assert len(seed_groups(arms)) == 2  # threads is not an arm key: one Pre-LN arm
    outcome = TRAINING_CHECKS["preln_without_warmup_matches"](arms, TRAINING["preln_without_warmup_matches"])
    assert outcome.cases[0].comparison.a.n == 3


def test_finding_2_failure_counts_compare_matched_arms_per_lr(tmp_path):
    """The reordered norm at lr 3e-3 only, Pre-LN at 3e-3 and 1e-2 (failing at 1e-2 only): at the one lr both ran
    neither failed - not testable (was: failures 0/8 vs 8/16 pooled over lrs, p = 0.0175, holds)."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dict.txt").write_text("".join(f"w{i} 10\n" for i in range(316)))
    sweep = Sweep(tmp_path / "lm", tmp_path / "data", task="language_model")
    for seed in range(1, 9):
        sweep.run("reorder", 0, [7.0, 6.2], seed=seed, lr=3e-3)
        sweep.run("pre", 0, [7.0, 6.2], seed=seed, lr=3e-3)
        sweep.run("pre", 0, [7.0], seed=seed, lr=1e-2, status="diverged")
    methods = check_placements(load_arms(sweep.save()), methods_data())
    (outcome,) = [m.outcomes["reorder_fewer_failures"] for m in methods if "reorder_fewer_failures" in m.outcomes]
    assert [c.label for c in outcome.cases] == ["no warm-up, lr 0.003"]
    assert outcome.verdict is Verdict.NOT_TESTABLE and outcome.cases[0].premise.state.value == "failed"


def test_finding_2_a_premise_is_read_at_the_lr_of_the_comparison_it_guards(tmp_path):
    """Post-LN needs warm-up at lr 5e-4 and 1e-3 (its warm-up arm trains there); one Post-LN-with-warm-up arm at
    lr 3e-3 that diverged leaves both cases as they were (was: the premise read at the sweep's largest lr, 3e-3,
    made both "not testable")."""
    verdicts = []
    for extra in (False, True):
        sweep = _sweep(tmp_path, f"premise{extra}")
        for lr in (5e-4, 1e-3):
            sweep.seeds("post", 0, [7.00, 7.05, 7.10], lr=lr)
            sweep.seeds("post", 120, [6.00, 6.05, 6.10], lr=lr)
        if extra:
            for seed in (1, 2, 3):
                sweep.run("post", 120, [7.0], seed=seed, lr=3e-3, status="diverged")
        outcome = TRAINING_CHECKS["postln_adam_needs_warmup"](load_arms(sweep.save()),
                                                               TRAINING["postln_adam_needs_warmup"])  # fmt: skip
        assert [c.premise.state.value for c in outcome.cases] == ["met", "met"]
        verdicts.append(outcome.verdict)
    assert verdicts == [Verdict.HOLDS, Verdict.HOLDS]


def test_finding_2_the_comparator_does_not_change_as_seeds_are_added(tmp_path):
    """Pre-LN's comparator is Post-LN with warm-up at Pre-LN's lr, whatever another Post-LN arm's seeds say (was:
    "the best Post-LN with warm-up" by mean, which moved to lr 5e-4 when a good seed was added there)."""
    labels = []
    for more in (False, True):
        sweep = _sweep(tmp_path, f"best{more}")
        sweep.seeds("pre", 0, [6.00, 6.05, 6.10])
        sweep.seeds("post", 120, [6.30, 6.35, 6.40])
        sweep.seeds("post", 120, [6.50, 6.55, 6.60] + ([5.0] if more else []), lr=5e-4)
        outcome = TRAINING_CHECKS["preln_without_warmup_matches"](load_arms(sweep.save()),
                                                                  TRAINING["preln_without_warmup_matches"])  # fmt: skip
        labels.append(outcome.cases[0].comparison.b.label)
    assert labels == ["Post-LN adam lr 0.001, 120 warm-up"] * 2


def test_finding_4_matches_a_comparator_needs_the_comparator_to_have_trained(tmp_path):
    """"Pre-LN matches Post-LN with warm-up" against a Post-LN with warm-up that diverged in 4/4 seeds: not
    testable (was: holds, failures 0/4 vs 4/4)."""
    sweep = _sweep(tmp_path)
    for seed, final in enumerate((6.00, 6.05, 6.10, 6.02), start=1):
        sweep.run("pre", 0, [9.0, 7.5, final], seed=seed)
        sweep.run("post", 120, [9.0], seed=seed, status="diverged")
    outcome = TRAINING_CHECKS["preln_without_warmup_matches"](load_arms(sweep.save()),
                                                              TRAINING["preln_without_warmup_matches"])  # fmt: skip
    assert outcome.cases[0].premise.state.value == "failed" and outcome.verdict is Verdict.NOT_TESTABLE


# Finding 5: any value can be inf, nan or missing: "no value" with its reason, never a crash.


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_finding_5_a_lemma_1_seed_with_no_number_is_no_value_never_a_crash(bad):
    """A Lemma 1 seed whose norm is inf (or nan) crashed `prelnx theory` (AttributeError: 'float' object has no
    attribute 'numerator'); it is now a seed with no value, named, and no verdict rests on the seeds left."""
    rows = [{"seed": seed, "layer": layer, "post": 1.5 + 0.01 * seed, "pre": 1.6 + 1.1 * layer + 0.01 * seed}
            for seed in range(1, 6) for layer in range(1, 5)]  # fmt: skip
    rows[0]["post"] = rows[0]["pre"] = bad
    outcomes = check_theory({"d": 512, "rows": rows})
    post = outcomes["postln_hidden_norm_three_halves"]
    (case,) = post.cases
    assert case.comparison.a.no_value == (str(bad),) and case.comparison.a.n == 5
    assert post.verdict is Verdict.INCONCLUSIVE and "1 of 5 seeds" in case.comparison.reason
    assert outcomes["preln_hidden_norm_grows_linearly"].verdict is Verdict.INCONCLUSIVE
    _, lines = judge({"d": 512, "rows": rows})
    assert any(f"no value ({bad})" in line for line in lines)


def test_a_theory_run_with_no_rows_leaves_every_lemma_1_claim_not_measured_saying_why():
    """check_theory's promise: every `theory` claim of paper.yaml, each not measured (never left out, never a crash
    on a seedless sample), and `prelnx theory` records and prints why."""
    ids = [claim["id"] for claim in paper_data()["theory"]]
    outcomes = check_theory({"d": 512, "rows": []})
    assert list(outcomes) == ids and len(ids) == 2
    assert all(o.verdict is Verdict.NOT_MEASURED and not o.cases for o in outcomes.values())
    verdicts, lines = judge({"d": 512, "rows": []})
    assert [verdicts[i]["verdict"] for i in ids] == ["not measured"] * 2
    assert sum("  the theory run has no rows" == line for line in lines) == 2


@pytest.mark.parametrize("task", ["language_model", "masked_lm"])
def test_finding_5_lm_and_masked_lm_runs_read_their_nll_from_the_loss_their_criterion_logs(tmp_path, task):
    """fairseq's cross_entropy and masked_lm criteria log no nll_loss: the row stores valid_nll_loss null, and runs
    1.4-2.1 bits below the plateau were "failed to train"; their valid loss is the nll in bits."""
    import json

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dict.txt").write_text("".join(f"w{i} 10\n" for i in range(316)))  # plateau 8.30 bits
    sweep = Sweep(tmp_path / "lm", tmp_path / "data", task=task)
    for seed, final in enumerate((6.2, 6.5, 6.9), start=1):
        extra = {"model.arch": "roberta_base", "eval.every_updates": 10} if task == "masked_lm" else None
        run = sweep.folder / sweep.run("pre", 0, [8.0, final], seed=seed, extra=extra)
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        (run / "metrics.jsonl").write_text("".join(json.dumps({**r, "valid_nll_loss": None}) + "\n" for r in rows))
    arms = load_arms(sweep.save())
    assert [a.outcome().state.value for a in arms] == ["trained"] * 3
    assert [a.outcome().final_nll for a in arms] == [6.2, 6.5, 6.9]


def test_finding_2_a_key_of_a_factor_set_apart_from_it_is_context_never_pooled(tmp_path):
    """optimizer.weight_decay varied within Adam (a weight-decay study) is not "the optimizer": the two Post-LN arms
    are other contexts, never one arm of 6 seeds; schedule keys set per warm-up length (warm-up 0: constant; 120:
    inverse_sqrt) stay the warm-up's."""
    sweep = _sweep(tmp_path)
    sweep.seeds("pre", 0, [6.00, 6.05, 6.10], extra={"schedule.decay": "constant"})
    sweep.seeds("post", 120, [6.02, 6.04, 6.09], extra={"schedule.decay": "inverse_sqrt"})
    sweep.seeds("post", 120, [7.2, 7.3, 7.25], extra={"schedule.decay": "inverse_sqrt", "optimizer.weight_decay": 0.1})
    arms = load_arms(sweep.save())
    outcome = TRAINING_CHECKS["preln_without_warmup_matches"](arms, TRAINING["preln_without_warmup_matches"])
    assert [c.comparison.b.n for c in outcome.cases] == [3] and outcome.verdict is Verdict.HOLDS
    assert {a.context_label for a in arms} == {"optimizer.weight_decay 0.0", "optimizer.weight_decay 0.1"}


def test_docs_verdicts_lists_exactly_the_keys_that_cannot_change_training():
    from prelnx.records.run_config import NOT_TRAINING_KEYS, NOT_TRAINING_PREFIXES

    text = (Path(__file__).resolve().parents[2] / "docs" / "verdicts.md").read_text()
    table = text.split("<!-- not-training-keys begin -->")[1].split("<!-- not-training-keys end -->")[0]
    listed = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert listed == set(NOT_TRAINING_KEYS) | {f"{prefix}*" for prefix in NOT_TRAINING_PREFIXES}


def test_finding_5_a_claim_read_at_an_update_it_does_not_name_must_survive_both_reads(tmp_path):
    """Pre-LN's loss at 60 % of Post-LN's 300 updates (update 180), validations every 100: read at 100 (the last
    before) it is 0.5 bit above Post-LN's final ("does not hold"), at 200 0.5 below ("holds"). The engine read
    update 100 alone and said "does not hold"; the named update lies between them: inconclusive, both reads named."""
    sweep = _sweep(tmp_path)
    for seed, d in enumerate((0.0, 0.02, -0.02), start=1):
        sweep.run("pre", 0, [6.5 + d, 5.5 + d, 5.0 + d], seed=seed, every=100)
        sweep.run("post", 120, [9.0, 7.0, 6.0 - d], seed=seed, every=100)
    outcome = TRAINING_CHECKS["preln_converges_faster"](load_arms(sweep.save()), TRAINING["preln_converges_faster"])
    (case,) = outcome.cases
    assert case.comparison.a.read == "update 100" and case.comparison.quality is Verdict.DOES_NOT_HOLD
    assert outcome.verdict is Verdict.INCONCLUSIVE
    assert "update 180 lies between validations: read at update 100 it does not hold, at update 200 it holds" in (
        case.comparison.reason)


def test_finding_2_layout_against_optimizer_compares_arms_at_one_lr_only(tmp_path):
    """Pre-LN RAdam at lr 1e-3, Pre-LN Adam and Post-LN Adam only at 5e-4: the arms differ in lr - not measured (was:
    compared anyway, falling back to the other lr)."""
    sweep = _sweep(tmp_path)
    sweep.seeds("pre", 0, [6.00, 6.05, 6.10], optimizer="radam")
    sweep.seeds("pre", 0, [6.00, 6.05, 6.10], lr=5e-4)
    sweep.seeds("post", 0, [7.40, 7.45, 7.50], lr=5e-4)
    spec = next(c for c in paper_data()["training"] if c["id"] == "layout_matters_more_than_optimizer")
    outcome = TRAINING_CHECKS["layout_matters_more_than_optimizer"](load_arms(sweep.save()), spec)
    assert outcome.verdict is Verdict.NOT_MEASURED and "at one lr" in outcome.missing
