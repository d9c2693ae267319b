"""The gradient study on real tiny fairseq models: the paper's Figure 3 effects, the CSV, the CLI, checkpoints.

Thresholds come from measuring seeds 1-6 at these dimensions (d 64, FFN 128, 4 heads, depths 2 and 6, 512-token
batches), then leaving a wide margin; the runs are seeded, so the numbers do not change between runs:
- last decoder layer / first decoder layer, depth 6 (mean over seeds 1-4): Post-LN W2 2.26, W1 2.66; Pre-LN W2 0.69,
  W1 0.78. Per seed, Post-LN's W2 ratio was 1.31-3.76 and Pre-LN's 0.56-0.77.
- last-layer W2, depth 6 / depth 2: Post-LN 1.05-1.23 per seed (mean 1.15), Pre-LN 0.55-0.79 (mean 0.64).
- a Post-LN checkpoint after 30 Adam updates: last-layer W2 gradient about 0.24 of its value at initialisation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import typer
import yaml
from typer.testing import CliRunner

from prelnx.analysis.grads.measure import Worker
from prelnx.analysis.grads.study import ModelSpec, model_variant
from prelnx.analysis.grads.summary import CSV_COLUMNS, read_grads_csv
from prelnx.cli import build_app
from prelnx.config.load import load_config
from prelnx.launch.inprocess import build_task_and_model
from tests.conftest import TINY

pytestmark = pytest.mark.slow

# conftest's tiny synthetic task, with a model just wide enough for the layouts' effects to stand out of seed noise.
SMALL = {
    **{key: TINY[key] for key in ("data", "optimizer", "schedule")},
    "model": {**TINY["model"], "embed_dim": 64, "ffn_dim": 128, "attention_heads": 4},
    "train": {key: TINY["train"][key] for key in ("max_tokens", "max_epoch", "threads", "num_workers")},
}
DEPTHS = (2, 6)
SEEDS = (1, 2, 3, 4)
TOKENS = 512


def cli() -> typer.Typer:
    return build_app("grads")  # the command as `prelnx grads` runs it: its console prints the progress


runner = CliRunner()


@pytest.fixture(scope="module")
def small_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grads-config") / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


@pytest.fixture(scope="module")
def study(small_config: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One study through the command line: post and pre, depths 2 and 6, seeds 1-4."""
    out = tmp_path_factory.mktemp("grads-out")
    result = runner.invoke(cli(), ["grads", "--config", str(small_config), "--out", str(out), "--depths", "2,6",
                                   "--seeds", "4", "--max-tokens", str(TOKENS)])  # fmt: skip
    assert result.exit_code == 0, result.output
    return {"out": out, "output": result.output, "rows": read_grads_csv(out / "grads.csv"),
            "summary": json.loads((out / "grads_summary.json").read_text())}  # fmt: skip


def test_csv_has_every_row(study):
    header = (study["out"] / "grads.csv").read_text().splitlines()[0]
    assert header == ",".join(CSV_COLUMNS)
    keys = {(r["layout"], r["depth"], r["seed"], r["side"], r["layer"], r["weight"]) for r in study["rows"]}
    expected = {
        (layout, depth, seed, side, layer, weight)
        for layout in ("post", "pre") for depth in DEPTHS for seed in SEEDS for side in ("encoder", "decoder")
        for layer in range(1, depth + 1) for weight in ("W1", "W2")
    }  # fmt: skip
    assert keys == expected and len(study["rows"]) == len(expected)
    assert all(r["grad_norm"] > 0 for r in study["rows"])
    assert (study["out"] / "figure3.png").stat().st_size > 10_000
    # A progress line per model, then the closing table with the paper's numbers and the timing.
    assert study["output"].count("last-layer W2 grad") == 2 * len(DEPTHS) * len(SEEDS)
    assert "paper: about 1.6" in study["output"] and "cost ratio" in study["output"]


def test_summary_is_mean_and_std_over_seeds(study):
    entry = next(e for e in study["summary"]["per_layer"]
                 if (e["layout"], e["depth"], e["side"], e["layer"], e["weight"]) == ("pre", 6, "decoder", 6, "W2"))  # fmt: skip
    values = [r["grad_norm"] for r in study["rows"]
              if (r["layout"], r["depth"], r["side"], r["layer"], r["weight"]) == ("pre", 6, "decoder", 6, "W2")]  # fmt: skip
    assert entry["n"] == len(SEEDS) and entry["mean"] == pytest.approx(sum(values) / len(values), rel=1e-5)
    assert entry["std"] == pytest.approx(torch.tensor(values).std().item(), rel=1e-4)
    assert study["summary"]["last_layer_w2"]["pre"]["6"]["mean"] == pytest.approx(entry["mean"])
    timing = study["summary"]["timing"]
    assert timing["models"] == 2 * len(DEPTHS) * len(SEEDS) and timing["fwdbwd_sum_s"] > 0


def test_post_ln_gradients_grow_toward_the_output_and_pre_ln_ones_do_not(study):
    growth = study["summary"]["growth_last_over_first_layer"]  # decoder layer 6 / layer 1, depth 6
    assert study["summary"]["growth_depth"] == 6
    for weight in ("W1", "W2"):
        post, pre = growth["post"]["decoder"][weight], growth["pre"]["decoder"][weight]
        assert post > 1.5, (weight, post)  # measured 2.26 (W2), 2.66 (W1)
        assert pre < 1.0, (weight, pre)  # measured 0.69, 0.78
        assert post > 2 * pre


def test_pre_ln_last_layer_gradient_falls_with_depth_and_post_ln_does_not(study):
    def last_w2(layout: str, depth: int, seed: int) -> float:
        return next(r["grad_norm"] for r in study["rows"]
                    if (r["layout"], r["depth"], r["seed"], r["side"], r["layer"], r["weight"]) == (layout, depth, seed, "decoder", depth, "W2"))  # fmt: skip

    falls = study["summary"]["last_layer_w2_falls_with_depth"]  # mean at depth 6 / mean at depth 2
    assert falls["pre"] < 0.8  # measured 0.64
    assert falls["post"] > 0.9  # measured 1.15
    for seed in SEEDS:
        pre = last_w2("pre", 6, seed) / last_w2("pre", 2, seed)
        post = last_w2("post", 6, seed) / last_w2("post", 2, seed)
        assert pre < post, (seed, pre, post)


def test_a_row_is_what_a_plain_fairseq_training_step_computes(study, small_config):
    """Independently: build with build_task_and_model (the training path), take the seed's first batch from the task's
    own iterator, run the criterion, backpropagate the summed loss and divide by sample_size as fairseq's trainer does."""
    seed, layout, depth = 3, "post", 2
    config, _ = load_config(small_config)
    cfg, task, model = build_task_and_model(model_variant(config, layout, depth, seed))
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("train")
    batches = task.get_batch_iterator(
        dataset=task.dataset("train"), max_tokens=TOKENS, max_positions=(1024, 1024), ignore_invalid_inputs=True,
        required_batch_size_multiple=cfg.dataset.required_batch_size_multiple, seed=seed, disable_iterator_cache=True,
    ).next_epoch_itr(shuffle=True)  # fmt: skip
    sample = next(iter(batches))
    model.train()
    torch.manual_seed(seed * 1000)  # the study's dropout seed for the first batch
    loss, sample_size, _ = criterion(model, sample)
    loss.backward()
    for row in study["rows"]:
        if (row["layout"], row["depth"], row["seed"]) == (layout, depth, seed):
            stack = model.encoder.layers if row["side"] == "encoder" else model.decoder.layers
            fc = getattr(stack[row["layer"] - 1], {"W1": "fc1", "W2": "fc2"}[row["weight"]])
            assert row["grad_norm"] == pytest.approx(fc.weight.grad.norm().item() / sample_size, rel=1e-4), row


def test_every_model_of_a_seed_sees_the_same_batches(small_config):
    config, _ = load_config(small_config)
    first, second = Worker(config, 2, TOKENS), Worker(config, 2, TOKENS)
    post_model, pre_model = first.model(ModelSpec("post", 2, 1)), second.model(ModelSpec("pre", 6, 1))
    post = first.seed_batches(1, first.fairseq_cfg("post", 2, 1), post_model)
    pre = second.seed_batches(1, second.fairseq_cfg("pre", 6, 1), pre_model)
    assert len(post) == 2 and all(torch.equal(a["target"], b["target"]) for a, b in zip(post, pre))
    assert all(torch.equal(a["net_input"]["src_tokens"], b["net_input"]["src_tokens"]) for a, b in zip(post, pre))
    other = second.seed_batches(2, second.fairseq_cfg("pre", 6, 2), pre_model)
    assert not all(torch.equal(a["target"], b["target"]) for a, b in zip(post, other))
    # Post-LN and Pre-LN of a seed and depth also start from the same weights (their LayerNorms aside).
    a = post_model.state_dict()
    b = second.model(ModelSpec("pre", 2, 1)).state_dict()
    assert all(torch.equal(a[key], b[key]) for key in a if "fc" in key or "attn" in key)


@pytest.fixture(scope="module")
def checkpoint(small_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real fairseq checkpoint: the Post-LN model after 30 Adam updates at lr 3e-3 without warm-up."""
    from fairseq.trainer import Trainer

    folder = tmp_path_factory.mktemp("checkpoint")
    config, _ = load_config(small_config)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cfg, task, model = build_task_and_model(config, save_dir=folder)
        trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
        task.load_dataset("train")
        epochs = task.get_batch_iterator(task.dataset("train"), max_tokens=TOKENS, max_positions=(1024, 1024),
                                         ignore_invalid_inputs=True, seed=1)  # fmt: skip
        updates = 0
        while updates < 30:
            for sample in epochs.next_epoch_itr(shuffle=True):
                trainer.train_step([sample])
                updates += 1
        trainer.consolidate_optimizer()
        trainer.save_checkpoint(str(folder / "checkpoint_last.pt"), {})
    finally:
        torch.set_num_threads(threads)
    return folder / "checkpoint_last.pt"


def test_checkpoint_is_measured_on_the_same_batches_and_its_gradients_are_smaller(small_config, checkpoint, tmp_path):
    result = runner.invoke(cli(), ["grads", "--config", str(small_config), "--out", str(tmp_path), "--layouts", "post",
                                   "--depths", "2", "--seeds", "2", "--max-tokens", str(TOKENS),
                                   "--checkpoint", str(checkpoint)])  # fmt: skip
    assert result.exit_code == 0, result.output
    trained = read_grads_csv(tmp_path / "grads_checkpoint.csv")
    assert {(r["layout"], r["depth"], r["seed"]) for r in trained} == {("post", 2, 1), ("post", 2, 2)}
    assert len(trained) == 2 * 2 * 2 * 2  # seeds x sides x layers x weights
    summary = json.loads((tmp_path / "grads_summary.json").read_text())
    after = next(e["mean"] for e in summary["checkpoint"] if (e["side"], e["layer"], e["weight"]) == ("decoder", 2, "W2"))
    before = summary["last_layer_w2"]["post"]["2"]["mean"]
    assert after < 0.5 * before, (after, before)  # measured about 0.24x


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--layouts", "post,middle"], "--layouts: unknown layout middle"),
        (["--depths", "6,0"], "--depths: every depth must be >= 1"),
        (["--seeds", "0"], "--seeds: need at least 1 seed"),
        (["--depths", "", "--dry-run"], "--depths: every depth must be >= 1"),  # empty: was the default study
        (["--seeds", "", "--dry-run"], "--seeds: expected a count N"),
        (["--batches", "0"], "--batches: must be >= 1"),
        (["--checkpoint", "no/such/checkpoint.pt"], "--checkpoint no/such/checkpoint.pt: no such file"),
        (["--checkpoint", "runs/x:best"], "--checkpoint runs/x:best: renamed --run-dir runs/x --checkpoint best"),
        (["--checkpoint", "best"], "--checkpoint best: a checkpoint of a run dir; give the run dir (--run-dir RUN_DIR)"),
        (["--set", "model.layout=middle"], "--set model.layout=middle: model.layout: expected one of"),
        (["--max-tokens", "5", "--depths", "1", "--seeds", "1"], "--max-tokens 5: smaller than a training sentence (Sentences lengths"),
    ],
)
def test_bad_input_is_one_error_with_exit_code_2(small_config, tmp_path, arguments, message):
    result = runner.invoke(cli(), ["grads", "--config", str(small_config), "--out", str(tmp_path / "out"), *arguments])
    assert result.exit_code == 2, result.output
    assert "error: " in result.output and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_file_that_is_no_checkpoint_is_a_clear_error(small_config, tmp_path):
    bogus = tmp_path / "bogus.pt"
    bogus.write_text("not a checkpoint")
    result = runner.invoke(cli(), ["grads", "--config", str(small_config), "--out", str(tmp_path / "out"),
                                   "--checkpoint", str(bogus)])  # fmt: skip
    assert result.exit_code == 2 and f"{bogus}: damaged or not a checkpoint" in result.output
    assert "Traceback" not in result.output


def test_quick_preset_and_explicit_options(small_config, tmp_path):
    result = runner.invoke(cli(), ["grads", "--config", str(small_config), "--out", str(tmp_path), "--quick",
                                   "--depths", "2", "--seeds", "1", "--jobs", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "grads_summary.json").read_text())["settings"]
    assert settings["max_tokens"] == 1024 and settings["batches"] == 1  # from --quick
    assert {r["depth"] for r in read_grads_csv(tmp_path / "grads.csv")} == {2}  # the explicit --depths wins
