"""The rest of the BERT half: monolingual data preparation, fine-tuning with seeds, and the report's claim."""

from __future__ import annotations

import json
import math
import sys
import subprocess
from pathlib import Path

import pytest
import yaml

from prelnx.config.load import load_config
from prelnx.interval import mean_interval
from prelnx.report.claims import PAPER_FRACTION, fraction_of_updates, preln_fewer_updates
from prelnx.launch.local import train
from prelnx.plan.data import DataNotReady
from prelnx.records.metrics import read_metrics
from prelnx.report.arms import Arm
from prelnx.paper import paper_data
from prelnx.report.stats import Verdict

REPO = Path(__file__).resolve().parents[2]


def prelnx(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prelnx.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def english_lines(count: int) -> list[str]:
    subjects = ["the cat", "a dog", "my friend", "the teacher", "our neighbour"]
    verbs = ["sees", "likes", "follows", "calls", "helps"]
    objects = ["the bird", "a child", "the old man", "her brother", "the postman"]
    return [f"{subjects[i % 5]} {verbs[(i // 5) % 5]} {objects[(i // 25) % 5]} ." for i in range(count)]


@pytest.fixture(scope="module")
def masked_lm_sweep(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """A masked-LM sweep of a Post-LN and a Pre-LN arm, 40 updates each, run once for this module: its report is
    checked, and its Pre-LN run is the pre-training fine-tuned with seeds. (`prelnx sweep`, its output folder.)"""
    from tests.bert.conftest import TINY_MLM
    from tests.helpers import config_writer

    folder = tmp_path_factory.mktemp("mlm-sweep")
    base = config_writer(TINY_MLM, folder, "mlm.yaml")(name="base.yaml", train={"max_update": 40})
    spec = folder / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"name": "bert_tiny", "base": str(base), "grid": [
        {"model.layout": ["post"], "schedule.warmup_updates": [20], "optimizer.lr": [0.001]},
        {"model.layout": ["pre"], "schedule.warmup_updates": [0], "optimizer.lr": [0.003]}]}))  # fmt: skip
    out = folder / "sweep"
    return prelnx("sweep", "--config", str(spec), "--out", str(out), "--jobs", "2"), out


@pytest.mark.slow
def test_text_is_prepared_with_bpe_and_a_masked_lm_trains_on_it(tmp_path, mlm_config_file):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("\n".join(english_lines(150)) + "\n\n")  # a blank line is dropped
    (corpus / "b.txt").write_text("\n".join(english_lines(125)[::-1]) + "\n")
    out = tmp_path / "bin"
    done = prelnx("data", "prepare", "text", "--source", str(corpus), "--valid-lines", "25", "--bpe-merges", "40",
                  "--out", str(out), "--jobs", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("dict.txt", "train.bin", "train.idx", "valid.bin", "valid.idx", "code", "manifest.json"):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["lines"]["train"]["txt"] == 250 and manifest["lines"]["valid"]["txt"] == 25
    assert "@@" in (out / "text" / "train.txt").read_text() or manifest["bpe"]["merges"] == 40

    too_short, _ = load_config(mlm_config_file(data={"dataset": "custom", "path": str(out), "tokens_per_sample": 8}))
    with pytest.raises(DataNotReady, match="does not fit in a sample of data.tokens_per_sample 8"):
        train(too_short, run_dir=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    config, _ = load_config(mlm_config_file(data={"dataset": "custom", "path": str(out)}, train={"max_update": 10}))
    result = train(config, run_dir=tmp_path / "run")
    assert result.status == "finished", (tmp_path / "run" / "train.log").read_text()[-2000:]
    assert [row["num_updates"] for row in read_metrics(tmp_path / "run")] == [10]


def test_text_preparation_errors_name_the_input(tmp_path):
    missing = prelnx("data", "prepare", "text", "--source", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 2 and "nope.txt: no such file or folder" in missing.stderr
    short = tmp_path / "short.txt"
    short.write_text("one line\nanother\n")
    few = prelnx("data", "prepare", "text", "--source", str(short), "--out", str(tmp_path / "o"))
    assert few.returncode == 2 and "2 non-blank line(s)" in few.stderr and "--valid-lines" in few.stderr
    assert "Traceback" not in missing.stderr + few.stderr and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_finetuning_with_seeds_writes_accuracies_and_an_interval(tmp_path, masked_lm_sweep):
    done, sweep_out = masked_lm_sweep
    pre = [run for run in sweep_out.iterdir() if (run / "config.yaml").is_file()
           and load_config(run / "config.yaml")[0].model.layout == "pre"]  # fmt: skip
    assert len(pre) == 1, done.stdout[-2000:] + done.stderr[-2000:]
    pretrained = pre[0]  # the sweep's Pre-LN run: 40 updates
    assert json.loads((pretrained / "status.json").read_text())["status"] == "finished"
    finetune = tmp_path / "ft.yaml"
    finetune.write_text(yaml.safe_dump({
        "task": "sentence_prediction", "data": {"dataset": "synthetic"}, "model": {"arch": "roberta_base"},
        "optimizer": {"lr": 1e-3}, "train": {"max_tokens": 256, "max_update": 8, "threads": 1, "log_interval": 4,
                                             "num_workers": 0, "keep_last_epochs": 0}}))  # fmt: skip
    out = tmp_path / "ft"
    done = prelnx("finetune", "--config", str(finetune), "--pretrained", str(pretrained), "--seeds", "2", "--out", str(out))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((out / "finetune_summary.json").read_text())
    assert len(summary) == 1 and summary[0]["pretrain_update"] == 40
    accuracies = [seed["accuracy"] for seed in summary[0]["seeds"].values()]
    assert len(accuracies) == 2 and all(0.0 <= a <= 100.0 for a in accuracies)
    assert summary[0]["mean_accuracy"] == pytest.approx(sum(accuracies) / 2)
    assert summary[0]["interval95"] is not None and summary[0]["interval95"] >= 0
    run = out / "update-40" / "seed-1"
    command = (run / "command.txt").read_text()
    assert "--task sentence_prediction" in command and "--finetune-from-model" in command
    assert "--arch roberta_prenorm" in command and "--encoder-layers 2" in command  # the pre-trained model's shape
    snapshot = out / "update-40" / "pretrained.pt"  # the weights the folder's name says, whatever pre-training does next
    assert f"--finetune-from-model {snapshot.resolve()}" in command and snapshot.is_file()
    assert "mean" in (out / "finetune_summary.md").read_text()

    refused = prelnx("finetune", "--config", str(finetune), "--pretrained", str(tmp_path / "nothing"))
    assert refused.returncode == 2 and "not a run dir" in refused.stderr


def test_mean_interval_uses_students_t():
    mean, half = mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)  # t(0.975, 2) x sd 1 / sqrt(3)
    assert mean_interval([5.0]) == (5.0, None) and mean_interval([]) == (None, None)


def _arm(layout: str, warmup: int, losses: list[float], lr: float = 1e-3, seed: int = 1, status: str = "finished") -> Arm:
    rows = [{"epoch": 1, "num_updates": 100 * (i + 1), "valid_loss": loss} for i, loss in enumerate(losses)]
    return Arm(name=layout, layout=layout, optimizer="adam", warmup=warmup, lr=lr, seed=seed,
               results={"status": status}, rows=rows, task="masked_lm", plateau=9.0)  # fmt: skip


SPEC = paper_data()["bert"][0]


def test_fraction_of_updates_to_reach_postln_final_loss():
    post = _arm("post", 100, [7.0, 6.0, 5.0, 4.0, 3.5])  # final 3.5 after 500 updates
    pre = _arm("pre", 0, [6.5, 5.0, 3.4, 3.0, 2.8])  # at or below 3.5 first at update 300
    fraction, target, post_updates, pre_updates = fraction_of_updates([pre], [post])
    assert (fraction, target, post_updates, pre_updates) == (0.6, 3.5, 500, 300)
    never = fraction_of_updates([_arm("pre", 0, [7.0, 6.0])], [post])
    assert never[0] is None
    assert round(PAPER_FRACTION, 2) == 0.71


def test_the_claim_is_a_case_per_preln_learning_rate_with_its_premise():
    posts = [_arm("post", 100, [7.0, 6.0, 5.0, 4.0, final], seed=s) for s, final in ((1, 3.5), (2, 3.6), (3, 3.4))]
    unstable = [_arm("post", 100, [7.0, 9.0], lr=3e-3, seed=s, status="diverged") for s in (1, 2)]  # the premise
    fast = [_arm("pre", 0, [6.5, 5.0, 2.9 + s / 20, 2.8, 2.7], lr=3e-3, seed=s) for s in (1, 2, 3)]
    same_lr = [_arm("pre", 0, [6.5, 5.0, 3.0 + s / 20, 3.0, 2.8], lr=1e-3, seed=s) for s in (1, 2, 3)]
    outcome = preln_fewer_updates([*posts, *unstable, *fast, *same_lr], SPEC)
    by_lr = {case.label: case for case in outcome.cases}
    # at 3e-3 Post-LN diverged (premise met) and Pre-LN is below Post-LN's final loss at 71 % of its updates
    assert by_lr["Pre-LN lr 0.003"].premise.state.value == "met" and by_lr["Pre-LN lr 0.003"].verdict is Verdict.HOLDS
    # at Post-LN's own lr the paper's premise cannot hold: not testable there
    assert by_lr["Pre-LN lr 0.001"].verdict is Verdict.NOT_TESTABLE
    assert outcome.verdict is Verdict.HOLDS and any("fraction **0.60**" in note for note in outcome.notes)
    no_premise = preln_fewer_updates([*posts, *fast], SPEC)  # no Post-LN at 3e-3: the premise is not checked
    assert no_premise.cases[0].premise.state.value == "not checked"
    stuck = [_arm("pre", 0, [7.5, 7.5, 7.4, 7.4, 7.3 + s / 50], lr=3e-3, seed=s) for s in (1, 2, 3)]
    assert preln_fewer_updates([*posts, *stuck], SPEC).verdict is Verdict.INCONCLUSIVE  # a negative needs the premise
    assert preln_fewer_updates([*posts, *unstable, *stuck], SPEC).verdict is Verdict.DOES_NOT_HOLD
    translation = Arm(name="t", layout="pre", optimizer="adam", warmup=0, lr=1e-3, seed=1,
                      results={"status": "finished"}, rows=fast[0].rows)  # fmt: skip
    assert preln_fewer_updates([*posts, translation], SPEC).verdict is Verdict.NOT_MEASURED  # only masked-LM runs


@pytest.mark.slow
def test_a_masked_lm_sweep_reports_the_fraction_beside_the_papers(masked_lm_sweep):
    done, out = masked_lm_sweep
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "/80 updates" in done.stdout  # the sweep's progress counts updates for update-grain runs
    report = (out / "report.md").read_text()
    assert "Figure 5a" in report and "bert_preln_fewer_updates" not in report
    assert "(paper 0.71)" in report or "Pre-LN never reached Post-LN's final valid loss" in report
    assert "8.45 BLEU" not in report  # the translation claims are not listed for a masked-LM sweep
    assert (out / "report_figures" / "loss.png").is_file()


def test_the_report_lists_the_finetuning_summaries_of_the_sweeps_runs(tmp_path):
    from prelnx.report.report import _finetune_section

    summary = tmp_path / "pre" / "finetune" / "ft" / "finetune_summary.json"
    summary.parent.mkdir(parents=True)
    summary.write_text(json.dumps([{"checkpoint": "c.pt", "pretrain_update": 300, "mean_accuracy": 81.0,
                                    "interval95": 2.5, "seeds": {"1": {"status": "finished", "accuracy": 80.0},
                                                                 "2": {"status": "failed", "accuracy": None}}}]))  # fmt: skip
    lines = _finetune_section(tmp_path, [{"run": "pre"}, {"run": "post"}])
    assert "| pre | ft | 300 | 80.0 | 81.0 ± 2.5 |" in lines
    assert _finetune_section(tmp_path, [{"run": "post"}]) == []  # no fine-tuning: no section


def test_finetuning_refuses_pairs_whose_dictionary_is_not_the_pretrainings(tmp_path):
    from prelnx.config.schema import Config, DataConfig
    from prelnx.finetune.plan import FinetunePlanError, check_dictionaries

    synthetic = Config(task="sentence_prediction", data=DataConfig(dataset="synthetic"))
    custom = Config(task="masked_lm", data=DataConfig(dataset="custom", path=str(tmp_path / "text")))
    with pytest.raises(FinetunePlanError, match="pre-trained on other data"):
        check_dictionaries(synthetic, custom)
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "dict.txt").write_text("a 5\nb 3\n")
    (tmp_path / "pairs" / "input0").mkdir(parents=True)
    (tmp_path / "pairs" / "input0" / "dict.txt").write_text("a 5\nc 3\n")
    pairs = Config(task="sentence_prediction", data=DataConfig(dataset="custom", path=str(tmp_path / "pairs")))
    with pytest.raises(FinetunePlanError, match="differs from the pre-training dictionary"):
        check_dictionaries(pairs, custom)
