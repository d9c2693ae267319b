"""`prelnx reproduce --scale cpu` is docs/protocols/paper_cpu.md's studies (issue 48): their order and edges, B2's and
E's seeds, and D2's rule - on D1's committed raw data (no lr qualifies: D2 and the fine-tuning are not run, the claim
is not testable) and on a hand-made premise sweep where one does."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from prelnx.reproduce.plan import Plan, StagePlan, marker, stage_spec
from prelnx.reproduce.run import run_stages
from prelnx.reproduce.scales import SCALES
from tests.helpers import logged
from tests.report.runs import PLATEAU_WORDS, Sweep

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("rebuild_reports", ROOT / "scripts" / "rebuild_reports.py")
rebuild_reports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rebuild_reports)

PROTOCOL = [  # (stage, study, after): the protocol's studies in its order
    ("theory", "C", ()), ("grads", "B", ()), ("grads_b2", "B2", ()), ("nmt_premise", "A0", ()),
    ("nmt", "A", ("nmt_premise",)), ("nmt_faster", "E", ()), ("nmt_sgd_long", "F", ()),
    ("nmt_short_g", "G", ()), ("nmt_short_h", "H", ()), ("bert_premise_d128", "D1", ()),
    ("bert", "D2", ("bert_premise_d128",)), ("finetune", "D2's fine-tuning", ("bert",)),
]  # fmt: skip


def test_the_cpu_scale_is_the_protocols_studies_in_its_order():
    cpu = {stage.name: stage for stage in SCALES["cpu"]}
    assert [(name, stage.after) for name, stage in cpu.items()] == [(name, after) for name, _, after in PROTOCOL]
    assert "nmt_test_bleu" not in cpu and "bert_premise_d256" not in cpu  # no claim of the protocol reads them
    assert cpu["grads"].source == cpu["grads_b2"].source == "grads/figure3_multi30k.yaml"  # B2: the same config
    assert cpu["nmt"].choose == "sgd_lr" and cpu["bert"].choose == "bert_scale"
    assert [name for name, stage in cpu.items() if stage.skip_unless_chosen] == ["bert"]  # a field, not the scale
    assert not any(stage.skip_unless_chosen for scale in ("demo", "paper") for stage in SCALES[scale])


def test_b2_measures_pre_ln_alone_at_seeds_11_to_30_and_e_keeps_its_fresh_seeds(tmp_path):
    from prelnx.reproduce.plan import grad_study

    cpu = {stage.name: stage for stage in SCALES["cpu"]}
    b, b2 = grad_study(cpu["grads"])[1], grad_study(cpu["grads_b2"])[1]  # what `prelnx grads` is given
    assert (b.layouts, b.seeds, b.depths) == (("post", "pre"), tuple(range(1, 11)), (6, 8, 10, 12, 14))
    assert (b2.layouts, b2.seeds, b2.depths) == (("pre",), tuple(range(11, 31)), b.depths)
    for seeds in (None, (1, 2, 3)):  # --seeds sets study A's seeds; E's and F's are their protocol's, 9-16
        for stage in ("nmt_faster", "nmt_sgd_long"):
            plan = stage_spec(cpu[stage], seeds, tmp_path).plan
            assert plan is not None and plan.sequential and plan.looks == (4, 6, 8)
            assert plan.order == tuple(range(9, 17)), (stage, seeds)
        g = stage_spec(cpu["nmt_short_g"], seeds, tmp_path).plan  # G's protocol: fresh seeds 17-34, looks 6, 12, 18
        assert g is not None and g.looks == (6, 12, 18) and g.order == tuple(range(17, 35)), seeds
        h = stage_spec(cpu["nmt_short_h"], seeds, tmp_path).plan  # H's protocol: fresh seeds 35-52, looks 6, 12, 18
        assert h is not None and h.looks == (6, 12, 18) and h.order == tuple(range(35, 53)), seeds
    assert stage_spec(cpu["nmt"], (1, 2, 3), tmp_path).plan.order == (1, 2, 3)


def _cpu_bert_plan(out: Path, premise: Path) -> Plan:
    """D1 (its runs copied in from `premise`, its stage complete), D2 and the fine-tuning, as the cpu scale has them."""
    rebuild_reports._unpacked(premise, out / "bert_premise_d128")  # the run files as `prelnx sweep` wrote them
    marker(out, "bert_premise_d128").parent.mkdir(parents=True)
    marker(out, "bert_premise_d128").write_text(json.dumps({"stage": "bert_premise_d128", "seconds": 1.0}))
    cpu = {stage.name: stage for stage in SCALES["cpu"]}
    d1 = StagePlan(cpu["bert_premise_d128"], spec=stage_spec(cpu["bert_premise_d128"], None, out))
    return Plan("cpu", out, "local", 2, None, [d1, StagePlan(cpu["bert"]), StagePlan(cpu["finetune"])], "test")


def test_d2_is_not_run_on_d1s_committed_runs_and_its_claim_is_not_testable(tmp_path):
    """D1 as committed: Pre-LN without warm-up ended 7.64 and 7.81 bits, neither 1 bit below the plateau."""
    from prelnx.reproduce.summary import write_summary

    out = tmp_path / "reproduce-cpu"
    with logged() as lines:
        outcome = run_stages(_cpu_bert_plan(out, rebuild_reports.raw_dir("bert_cpu_premise_d128")))
    assert outcome == {"bert_premise_d128": "complete", "bert": "not run", "finetune": "not run"}, lines
    assert any("stage 2/3 bert: not run (no lr of any premise sweep qualifies: stage 2 is not run" in line
               for line in lines), lines  # fmt: skip
    assert any("finetune: not run (stage bert is not run)" in line for line in lines), lines
    assert not (out / "bert" / "sweep.json").exists() and not marker(out, "bert").exists()  # nothing trained
    choice = json.loads((out / "bert" / "choice.json").read_text())
    assert len(choice["evidence"]) == 5 and choice["grids"] is None
    assert "layout-pre_warmup-0_lr-0.01: finished, final valid nll 7.81" in " ".join(choice["evidence"])
    report = write_summary(out, "cpu").read_text()
    row = next(line for line in report.splitlines() if "Pre-LN BERT without warm-up" in line)
    assert "**not testable at this scale (stage bert not run: the rule of bert_premise_d128 chose nothing)**" in row
    assert "the premise runs (bert_premise_d128): bert_premise_d128/layout-post_warmup-40_lr-0.001: finished" in row
    assert "| bert | sweep | not run |" in report and "| finetune | finetune | not run |" in report
    # a later attempt reads the choice it made, and runs nothing either
    assert run_stages(_cpu_bert_plan(tmp_path / "again", out / "bert_premise_d128"))["bert"] == "not run"


def _qualifying_premise(folder: Path, pre_final: float = 6.0) -> Path:
    """A masked-LM premise sweep where lr 1e-2 qualifies: Pre-LN trains there (6.0 bits, plateau 8.30) and Post-LN
    with warm-up ends 1.5 bits above its best lr (7.9 vs 6.4); at 3e-3 Pre-LN stays at the plateau."""
    data = folder.parent / "data"
    data.mkdir(parents=True)
    (data / "dict.txt").write_text("".join(f"w{i} 10\n" for i in range(PLATEAU_WORDS)))
    sweep = Sweep(folder, data, task="masked_lm")
    extra = {"model.arch": "roberta_base", "eval.every_updates": 10, "model.embed_dim": 128}
    for layout, warmup, lr, final in (("post", 40, 1e-3, 6.4), ("post", 40, 3e-3, 6.6), ("post", 40, 1e-2, 7.9),
                                      ("pre", 0, 3e-3, 8.2), ("pre", 0, 1e-2, pre_final)):  # fmt: skip
        sweep.run(layout, warmup, [8.3, final], lr=lr, extra=extra, nll=[8.3, final])
    return sweep.save()


def test_d2_runs_when_an_lr_of_d1_qualifies(tmp_path):
    from prelnx.reproduce.choose import bert_scale, unchosen
    from prelnx.reproduce.run import _choose

    premise = _qualifying_premise(tmp_path / "made" / "premise")
    choice = bert_scale([premise], [{"model.embed_dim": 128}], run_anyway=False)
    assert choice.chosen and choice.outcome == "premise: lr 0.01 (d 128)", choice
    assert [(g["model.layout"], g["optimizer.lr"]) for g in choice.grids] == [(["post"], [1e-3]), (["pre"], [1e-2]),
                                                                             (["post"], [1e-2])]  # fmt: skip
    plan = _cpu_bert_plan(tmp_path / "reproduce-cpu", premise)
    assert _choose(plan.stages[1], plan) == "" and unchosen(plan.out / "bert") == ""  # it would train
    made = json.loads((plan.out / "bert" / "choice.json").read_text())
    assert made["outcome"] == "bert_premise_d128: lr 0.01 (d 128)"


def test_pre_ln_less_than_the_trained_margin_below_the_plateau_does_not_qualify(tmp_path):
    """(ii) is paper.yaml's trained_margin_bits (1 bit below the plateau), not the premise's 0.5-bit margin."""
    from prelnx.reproduce.choose import bert_scale

    premise = _qualifying_premise(tmp_path / "premise", pre_final=7.5)  # 0.8 bits below the 8.30-bit plateau
    choice = bert_scale([premise], [{"model.embed_dim": 128}], run_anyway=False)
    assert not choice.chosen and choice.outcome.startswith("no lr of any premise sweep qualifies: stage 2 is not run")


def test_b2s_section_shows_the_verdicts_of_its_own_seeds_and_the_claims_table_reads_b(tmp_path):
    """Study B2's committed output (20 Pre-LN seeds) as the grads_b2 stage's: its section decides the Pre-LN claim
    from it alone; the table of every claim reads stage grads (not run here), so B2 never pools with B."""
    import shutil

    from prelnx.reproduce.summary import write_summary

    shutil.copytree(ROOT / "docs" / "results" / "grads_figure3_multi30k_pre_b2", tmp_path / "grads_b2")
    report = write_summary(tmp_path, "cpu").read_text()
    table, _, sections = report.partition("## Per figure")
    row = next(line for line in table.splitlines() if "last-layer W2 gradient norm shrinks" in line)
    assert row.endswith("| the gradient stage has not run | - | not measured |"), row
    b2 = sections.split("### Figure 3c replicated (study B2) (stage `grads_b2`)")[1].split("###")[0]
    assert "it does not pool with stage grads" in b2
    falls = next(line for line in b2.splitlines() if "last-layer W2 gradient norm shrinks" in line)
    assert "0.42 [95 % CI 0.39, 0.45]" in falls and "0.65 [95 % CI 0.60, 0.69]" in falls  # as docs/results.md
    assert falls.endswith("**does not hold** |"), falls
    assert "Post-LN's last-layer" not in b2  # B2 measured Pre-LN only: the Post-LN claims are not its to show
    assert re.search(r"^- load average when the report was written: \d+\.\d\d \d+\.\d\d \d+\.\d\d$", report, re.M)


def test_the_plans_columns_align_for_the_longest_stage_and_figure(tmp_path):
    """`reproduce --scale cpu --dry-run`: study H's figure (56 characters) and 'at least ~4 min' pushed the cost
    and the kind out of their columns; every row's columns now start where the others' do."""
    from prelnx.reproduce.plan import plan_lines

    stages = [StagePlan(stage, seconds=40.0 * 60 ** (index % 3)) for index, stage in enumerate(SCALES["cpu"])]
    stages[3].done = True
    rows = [line for line in plan_lines(Plan("cpu", tmp_path, "local", 2, None, stages, "test"))
            if re.match(r"^ ?\d+\. ", line)]  # fmt: skip
    assert len(rows) == len(SCALES["cpu"])
    for sp in stages:  # the figure, the cost's end and the kind start at one column in every row
        assert {row.index(f" {sp.stage.figure}") for row in rows if f" {sp.stage.name} " in row} == {
            rows[0].index(f" {stages[0].stage.figure}")}
    assert len({row.index("   " + row.split("   ")[-1]) for row in rows}) == 1, "\n".join(rows)
