"""A reproduction's claims table when a stage's rule chose nothing (prelnx.reproduce.summary, docs/reproduce.md's "D2's
rule"): only a stage marked `Stage.skip_unless_chosen` (the cpu scale's `bert`) is then not run, its claims "not
testable at this scale" with the premise runs as the evidence; a stage not marked (the demo's `bert`, which keeps
running the committed grid as a smoke test; `nmt`, whose SGD lr stays the committed one) has its claims decided on
its own runs as if no rule had run. The runs are real run-dir files (tests/report/runs.py), the choices made by
choose.py's own rules; nothing is trained."""

from __future__ import annotations

from pathlib import Path

from prelnx.reproduce.choose import bert_scale, sgd_lr
from prelnx.reproduce.scales import SCALES
from prelnx.reproduce.summary import write_summary
from tests.report.runs import PLATEAU_WORDS, Sweep, write_dictionary

BERT_ROW = "Pre-LN BERT without warm-up"
NOT_RUN = "not testable at this scale (stage"  # the words of a stage not run because its rule chose nothing


def _masked_lm(folder: Path, pre_final: float) -> Path:
    """Two seeds per arm: Post-LN with warm-up at lr 1e-3 (6.4 bits) and at 1e-2 (7.9), Pre-LN without at 1e-2."""
    data = folder.parent / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "dict.txt").write_text("".join(f"w{i} 10\n" for i in range(PLATEAU_WORDS)))  # plateau 8.30 bits
    sweep = Sweep(folder, data, task="masked_lm")
    extra = {"model.arch": "roberta_base", "eval.every_updates": 10, "model.embed_dim": 128}
    for layout, warmup, lr, final in (("post", 40, 1e-3, 6.4), ("post", 40, 1e-2, 7.9), ("pre", 0, 1e-2, pre_final)):
        for seed in (1, 2):
            loss = final + 0.05 * seed
            sweep.run(layout, warmup, [8.3, loss], lr=lr, seed=seed, extra=extra, nll=[8.3, loss])
    return sweep.save()


def _table(out: Path, scale: str) -> str:
    return write_summary(out, scale).read_text().partition("## Per figure")[0]


def _row(table: str) -> str:
    return next(line for line in table.splitlines() if BERT_ROW in line)


def test_a_rule_that_chose_nothing_at_a_stage_not_marked_changes_no_verdict(tmp_path):
    """The demo's D1 qualifies no lr (its Pre-LN stays at the plateau): bert_scale's outcome says stage 2 runs the
    committed grid, and the claim is decided on those runs, exactly as before the choice was made."""
    assert not next(s for s in SCALES["demo"] if s.name == "bert").skip_unless_chosen
    out = tmp_path / "reproduce-demo"
    premise = _masked_lm(out / "bert_premise_d128", pre_final=8.2)
    _masked_lm(out / "bert", pre_final=6.0)  # the committed grid's runs: here Pre-LN trains
    before = _table(out, "demo")
    choice = bert_scale([premise], [{"model.embed_dim": 128}], run_anyway=True)
    assert not choice.chosen and "stage 2 runs the committed grid" in choice.outcome, choice
    choice.save(out / "bert")
    after = _table(out, "demo")
    assert after == before
    assert NOT_RUN not in after and "Pre-LN lr 0.01: valid loss (bits)" in _row(after)  # read from the bert runs


def test_the_sgd_lr_rule_choosing_nothing_leaves_the_translation_claims_to_their_stage(tmp_path):
    """The cpu scale's `nmt` (not marked): no SGD premise run finished, so the committed lr stays; the translation
    claims read stage nmt (not run here: not measured), never "not testable" for the rule's sake."""
    assert not next(s for s in SCALES["cpu"] if s.name == "nmt").skip_unless_chosen
    out = tmp_path / "reproduce-cpu"
    write_dictionary(tmp_path / "data")
    premise = Sweep(out / "nmt_premise", tmp_path / "data")
    premise.run("post", 0, [], optimizer="sgd", lr=0.1, status="diverged")
    premise.save()
    before = _table(out, "cpu")
    choice = sgd_lr([out / "nmt_premise"])
    assert not choice.chosen and choice.outcome == "no premise run finished: the committed lr stays", choice
    (out / "nmt").mkdir()
    choice.save(out / "nmt")
    after = _table(out, "cpu")
    assert after == before
    assert NOT_RUN not in after and "its stage has not run (or not here)" in after


def test_a_marked_stage_whose_rule_chose_nothing_makes_its_claim_not_testable_with_the_premise_runs(tmp_path):
    """The cpu scale's `bert` (marked): the same D1, no lr qualifies, stage 2 is not run - the claim is not testable
    at this scale, the premise runs its evidence (the mirror of the demo's case above)."""
    assert next(s for s in SCALES["cpu"] if s.name == "bert").skip_unless_chosen
    out = tmp_path / "reproduce-cpu"
    premise = _masked_lm(out / "bert_premise_d128", pre_final=8.2)
    choice = bert_scale([premise], [{"model.embed_dim": 128}], run_anyway=False)
    assert not choice.chosen
    (out / "bert").mkdir()
    choice.save(out / "bert")
    row = _row(_table(out, "cpu"))
    assert "**not testable at this scale (stage bert not run: the rule of bert_premise_d128 chose nothing)**" in row
    assert "the premise runs (bert_premise_d128): bert_premise_d128/post_adam_w40_lr0.001_s1" in row, row
    last = "bert_premise_d128/pre_adam_w0_lr0.01_s2_archroberta_base_every_updates10_embed_dim128"
    assert f"{last}: finished, final valid nll 8.30, plateau 8.30" in row, row
