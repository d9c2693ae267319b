"""`prelnx reproduce`: the scales' stage order, the paper plan with and without its data, resuming a reproduction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from prelnx.reproduce.plan import Plan, StagePlan, marker
from prelnx.reproduce.run import RUNNERS, run_stages
from prelnx.reproduce.scales import SCALES, Stage
from tests.helpers import logged


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_every_stage_comes_after_what_it_needs(scale):
    order = [stage.name for stage in SCALES[scale]]
    assert len(set(order)) == len(order)
    for index, stage in enumerate(SCALES[scale]):
        assert stage.kind in RUNNERS
        needed = [*stage.after, *stage.options.get("of", []), *([stage.options["pretrained"]] if "pretrained" in stage.options else [])]
        assert all(name in order[:index] for name in needed), (stage.name, needed)


def test_the_demo_runs_premises_before_their_arms_pretraining_before_finetuning_training_before_bleu():
    demo = {stage.name: stage for stage in SCALES["demo"]}
    order = list(demo)
    assert order.index("nmt_premise") < order.index("nmt") < order.index("nmt_test_bleu")
    assert demo["nmt"].after == ("nmt_premise",) and demo["nmt"].choose == "sgd_lr"
    assert order.index("bert_premise_d128") < order.index("bert") < order.index("finetune")
    assert set(demo["bert"].after) == {"bert_premise_d128", "bert_premise_d256"} and demo["finetune"].after == ("bert",)
    assert demo["nmt_test_bleu"].options["of"] == ["nmt"]
    # every figure of the paper has a stage
    figures = " ".join(stage.figure for stage in demo.values())
    for figure in ("Figures 2a, 2b, 4", "Figure 3", "Figure 5a", "Figures 5b/c", "Section 3.3", "Test BLEU"):
        assert figure in figures


def test_a_scale_reuses_shipped_configs():
    from prelnx.config.load import find_config

    for scale in SCALES:
        for stage in SCALES[scale]:
            for source in filter(None, (stage.source, *stage.sources)):
                assert find_config(source).is_file()


def _fake_iwslt14(root: Path) -> None:
    """Binarized IWSLT14 De-En of the right shape: a tiny synthetic task's files under fairseq's de/en names."""
    from prelnx.config.load import config_from_dict
    from prelnx.launch.prepare import ensure_data
    from tests.conftest import TINY

    made = ensure_data(config_from_dict(TINY, "tiny"))
    target = root / "data-bin" / "iwslt14.tokenized.de-en"
    target.mkdir(parents=True)
    for path in made.iterdir():
        if path.is_file() and (path.name.startswith("dict.") or ".src-tgt." in path.name):
            name = path.name.replace("src-tgt", "de-en").replace(".src.", ".de.").replace(".tgt.", ".en.")
            shutil.copyfile(path, target / name.replace("dict.src", "dict.de").replace("dict.tgt", "dict.en"))


def test_paper_dry_run_plans_with_iwslt14_and_refuses_without_it(tmp_path, monkeypatch):
    from prelnx.cli import app

    monkeypatch.chdir(tmp_path)
    missing = CliRunner().invoke(app, ["reproduce", "--scale", "paper", "--dry-run"])
    assert missing.exit_code == 2, missing.output
    assert "prelnx data prepare iwslt14" in missing.output and "nothing was created" in missing.output
    # the plan before the data: every stage with its runs and GPU-hours, the missing data marked where it is needed
    plan = missing.output.splitlines()
    for index, stage in enumerate(SCALES["paper"], 1):
        assert any(line.startswith(f"{index:2d}. {stage.name} ") for line in plan), (stage.name, missing.output)
    fig2 = next(i for i, line in enumerate(plan) if line.startswith(" 3. fig2 "))
    assert "GPU-h" in plan[fig2] and float(plan[fig2].split("~")[1].split()[0]) > 1  # its epoch assumed, said so
    assert "an epoch of iwslt14 assumed 160,239 pairs" in missing.output
    marked = [line for line in plan if line.strip().startswith("MISSING DATA:")]
    assert len(marked) == 3 and all("prelnx data prepare iwslt14" in line for line in marked)  # grads, fig2, fig4
    assert "total: ~" in missing.output and "the data of stage(s) grads, fig2, fig4 is missing" in missing.output
    assert not (tmp_path / "runs").exists()
    _fake_iwslt14(tmp_path)
    planned = CliRunner().invoke(app, ["reproduce", "--scale", "paper", "--dry-run", "--executor", "slurm"])
    assert planned.exit_code == 0, planned.output
    for stage in SCALES["paper"]:
        assert f" {stage.name} " in planned.output
    assert "GPU-h" in planned.output and "V100" in planned.output
    assert "would submit 8 jobs" in planned.output  # Figure 2's sweep: one Slurm job per run
    assert "not run: needs a pre-training corpus" in planned.output  # BERT: a corpus the user brings (its argv still parsed)
    assert "fairseq parsed the argv of all 14 planned trainings" in planned.output
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_cpu_scale_without_multi30k_names_the_script_that_prepares_it(tmp_path, monkeypatch):
    from prelnx.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["reproduce", "--scale", "cpu", "--dry-run"])
    assert result.exit_code == 2, result.output
    plan = result.output.splitlines()
    # refused for its data: estimated at once at the stated reference pace, without the probe's seconds of training
    assert plan[1].startswith("estimate: not measured here (the data is missing, so no probe ran): the demo model at "
                              "3,900 target tokens/s on one thread, the probe's pace on an AMD EPYC"), plan[1]  # fmt: skip
    premise = next(i for i, line in enumerate(plan) if line.startswith(" 4. nmt_premise "))
    marked = next(line for line in plan[premise:] if "MISSING DATA:" in line)
    assert "data.path: data-bin/multi30k-8k.de-en" in marked and "bash scripts/prepare_cpu_study.sh" in marked
    # its epochs' size is unknown until prepared: the stages budgeted in epochs and the total are lower bounds, said
    assert "total: at least ~" in result.output and "(the epochs of data not prepared here counted as one" in result.output
    assert "at least ~" in next(line for line in plan if line.startswith(" 5. nmt "))
    assert "at least" not in next(line for line in plan if line.startswith(" 1. theory "))
    assert "the data of stage(s) grads, grads_b2, nmt_premise, nmt, nmt_faster, nmt_sgd_long, nmt_short_g, nmt_short_h is missing" in result.output
    # every study of the protocol with its estimate; the sequential ones with their looks (E, F: their own seeds 9-16;
    # G: 17-34; H: 35-52)
    for index, stage in enumerate(SCALES["cpu"], 1):
        line = next(line for line in plan if line.startswith(f"{index:2d}. {stage.name} "))
        assert " ~" in line and (" min " in line or " h " in line or " s " in line), line
    looks = [line for line in plan if line.strip().startswith("looks (obrien-fleming spending")]
    assert len(looks) == 5 and all("seeds 9, 10, 11, 12, 13, 14, 15, 16 in this order" in line for line in looks[1:3])
    assert "6 seeds" in looks[3] and "17, 18, 19" in looks[3] and "33, 34 in this order" in looks[3]
    assert "6 seeds" in looks[4] and "35, 36, 37" in looks[4] and "51, 52 in this order" in looks[4]
    assert "if it chooses nothing, this stage and those after it are not run" in result.output  # D2's rule


@pytest.mark.slow  # the probe: a few real training steps of the demo's model, seconds
def test_a_plan_whose_data_is_here_measures_this_machines_pace(tmp_path, monkeypatch):
    from prelnx.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["reproduce", "--scale", "demo", "--dry-run"])
    assert result.exit_code == 0, result.output
    pace = result.output.splitlines()[1]
    assert pace.startswith("estimate: measured here: the demo model trains ") and " s probe of " in pace, pace
    assert float(pace.split(" trains ")[1].split()[0].replace(",", "")) > 0
    assert "total: ~" in result.output and not (tmp_path / "runs").exists()


def test_bad_scale_is_one_error(tmp_path):
    from prelnx.cli import app

    result = CliRunner().invoke(app, ["reproduce", "--scale", "huge", "--dry-run", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "'huge' is not one of 'demo', 'cpu', 'paper'" in result.output  # Scale's values
    empty = CliRunner().invoke(app, ["reproduce", "--scale", "demo", "--seeds", "", "--dry-run", "--out", str(tmp_path)])
    assert empty.exit_code == 2 and "error: --seeds: expected a count N" in empty.output, empty.output  # not the default


@pytest.mark.slow
def test_a_resumed_reproduction_skips_complete_stages_and_retrains_nothing(tmp_path, tiny_config_file):
    spec = tmp_path / "tiny_sweep.yaml"
    spec.write_text(yaml.safe_dump({"name": "tiny_sweep", "base": str(tiny_config_file()), "grid": {"train.seed": [1]}}))
    tiny = [Stage("theory", "theory", "Section 3.3", options={"d": 8, "layers": 2, "seeds": 1}),
            Stage("arms", "sweep", "Figure 2a", str(spec), after=("theory",))]  # fmt: skip
    out = tmp_path / "reproduction"

    def attempt() -> dict[str, str]:
        plans = [StagePlan(stage, runs=["seed-1"] if stage.kind == "sweep" else []) for stage in tiny]
        with logged(lines):
            return run_stages(Plan("demo", out, "local", 1, None, plans, "test"))

    lines: list[str] = []
    assert attempt() == {"theory": "complete", "arms": "complete"}
    # the sweep's progress lines end with the reproduction's, given to the sweep as a renderer of its typed progress
    assert any("sweep: 1/1 runs done" in line and "|| reproduce: 1/2 stages done, in arms | ETA" in line
               for line in lines), lines
    run = out / "arms" / json.loads((out / "arms" / "sweep.json").read_text())["runs"][0]["name"]
    assert json.loads((run / "status.json").read_text())["status"] == "finished"
    assert (out / "arms" / "report.md").is_file()  # the stage's report, written when it was done
    theory = json.loads((out / "theory" / "theory_summary.json").read_text())  # Lemma 1 decided, as `prelnx theory` does
    assert theory["verdicts"]["postln_hidden_norm_three_halves"]["verdict"].startswith("inconclusive (1 seed)"), theory
    from prelnx.cli import app

    status = CliRunner().invoke(app, ["status", str(out)])  # where the reproduction stands: its stages and runs
    assert status.exit_code == 0, status.output
    assert "stages: 2 complete (arms, theory)" in status.output and f"arms/{run.name}  finished" in status.output
    trained = (run / "metrics.jsonl").read_text(), (run / "status.json").stat().st_mtime

    lines.clear()
    assert attempt() == {"theory": "complete", "arms": "complete"}
    assert sum("complete in an earlier attempt, skipped" in line for line in lines) == 2

    marker(out, "arms").unlink()  # as if interrupted after its run finished, before the stage was marked
    lines.clear()
    assert attempt()["arms"] == "complete"
    assert ((run / "metrics.jsonl").read_text(), (run / "status.json").stat().st_mtime) == trained  # not retrained


def _premise_sweep(folder: Path, tiny_config_file, finals: dict[float, float | None]) -> None:
    """A finished SGD premise sweep as `prelnx sweep` leaves it: per lr a config, a status and a final validation
    (None: diverged). The target dictionary's 4 equally frequent words make the unigram plateau 2 bits."""
    from prelnx.config.load import config_to_dict, load_config
    from prelnx.records.metrics import write_metrics
    from prelnx.records.status import write_status

    data = folder.parent / "data"
    data.mkdir(exist_ok=True)
    (data / "dict.tgt.txt").write_text("".join(f"w{i} 10\n" for i in range(4)))
    runs = []
    for lr, final in finals.items():
        name = f"lr-{lr:g}"
        config, _ = load_config(tiny_config_file(), ["optimizer.name=sgd", f"optimizer.lr={lr}", "data.dataset=custom",
                                                      f"data.path={data}", "schedule.warmup_updates=5"])  # fmt: skip
        run = folder / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(yaml.safe_dump(config_to_dict(config)))
        write_status(run, "finished" if final is not None else "diverged", update=10)
        write_metrics(run, [{"epoch": 1, "num_updates": 10, "valid_loss": final if final is not None else float("nan"),
                             "valid_nll_loss": final if final is not None else float("nan")}])  # fmt: skip
        runs.append({"name": name, "overrides": {"optimizer.lr": lr}})
    (folder / "sweep.json").write_text(json.dumps({"name": folder.name, "runs": runs}))


def test_sgd_lr_is_chosen_by_the_committed_rule(tmp_path, tiny_config_file):
    from prelnx.config.load import find_config
    from prelnx.reproduce.choose import sgd_lr
    from prelnx.sweep.spec import resolve_spec

    # plateau 2 bits, premise margin 1 bit: lr 0.3 (0.9) and 0.5 (0.7) meet it, the lower final loss wins
    _premise_sweep(tmp_path / "a", tiny_config_file, {0.3: 0.9, 0.5: 0.7, 1.0: None})
    choice = sgd_lr([tmp_path / "a"])
    assert choice.sgd_lr == 0.5 and "meets the premise" in choice.outcome and len(choice.evidence) == 3
    # none meets it: the lowest final loss, said so
    _premise_sweep(tmp_path / "b", tiny_config_file, {0.3: 1.5, 0.5: 1.8, 1.0: None})
    choice = sgd_lr([tmp_path / "b"])
    assert choice.sgd_lr == 0.3 and "no lr meets the premise" in choice.outcome
    # applied to the arms sweep: its SGD grids take the lr, the Adam grids are untouched
    spec = choice.apply(resolve_spec(find_config("sweeps/cpu_multi30k.yaml"), [], [], None))
    arms = spec.arms  # study A's named arms (docs/protocols/paper_cpu.md): only the SGD arms' lr changes
    assert [a["optimizer.lr"] for a in arms.values() if a["optimizer.name"] == "sgd"] == [0.3, 0.3]
    assert [a["optimizer.lr"] for a in arms.values() if a["optimizer.name"] != "sgd"] == [5.0e-4] * 3 + [1.0e-3] * 5
