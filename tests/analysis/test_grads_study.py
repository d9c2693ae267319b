"""Direct unit tests of the gradient study's parts that need no model: options, parsing, statistics, the paper's numbers."""

from __future__ import annotations

import statistics
from importlib import resources
from pathlib import Path

import pytest
import yaml

import prelnx.analysis.grads as grads_package
from prelnx.analysis.grads.run import memory_per_worker
from prelnx.analysis.grads.study import QUICK, GradsError, GradStudy
from prelnx.analysis.grads.summary import LAYER_KEYS, report_lines, stats_by, summarize
from prelnx.commands.grads import parse_depths, parse_layouts
from prelnx.commands.options import parse_seeds
from prelnx.config.schema import Config
from prelnx.exits import Refusal
from prelnx.plan.model_sizes import model_sizes, preset_sizes

# ----------------------------------------------------------------------------------- GradStudy.from_options


def test_from_options_without_quick_takes_the_full_study():
    study = GradStudy.from_options(Config())
    assert study.layouts == ("post", "pre") and study.depths == (6, 8, 10, 12, 14)
    assert study.seeds == tuple(range(1, 11)) and study.batches == 1 and study.max_tokens is None
    assert study.tokens_per_batch() == Config().train.max_tokens
    assert (study.checkpoint, study.workers, study.threads) == (None, None, None)


def test_from_options_quick_takes_the_preset():
    study = GradStudy.from_options(Config(), quick=True)
    assert study.depths == QUICK["depths"] == (6, 10, 14)
    assert study.seeds == (1, 2, 3) and len(study.seeds) == QUICK["seeds"]
    assert study.max_tokens == QUICK["max_tokens"] == 1024 and study.batches == QUICK["batches"]
    assert study.layouts == ("post", "pre")


def test_from_options_explicit_options_win_over_quick():
    study = GradStudy.from_options(Config(), layouts=("pre",), depths=(2,), seeds=(5, 7), batches=3, max_tokens=256,
                                   checkpoint=Path("c.pt"), workers=2, threads=1, quick=True)  # fmt: skip
    assert (study.layouts, study.depths, study.seeds) == (("pre",), (2,), (5, 7))
    assert (study.batches, study.max_tokens, study.checkpoint, study.workers, study.threads) == (3, 256, Path("c.pt"), 2, 1)


def test_from_options_mixes_explicit_options_and_the_preset():
    study = GradStudy.from_options(Config(), depths=(4,), quick=True)
    assert study.depths == (4,) and study.seeds == (1, 2, 3) and study.max_tokens == 1024


# ----------------------------------------------------------------------------------------------- option parsing


def test_parse_seeds():
    assert parse_seeds("10") == tuple(range(1, 11))
    assert parse_seeds("3,7") == (3, 7) and parse_seeds(" 4 , 2 ") == (4, 2)
    for text, message in [("0", "need at least 1 seed"), ("3,3", "repeated seed"), ("x", "expected a count"), ("", "expected a count")]:
        with pytest.raises(Refusal, match=message):  # every command's --seeds: the one error type of bad input
            parse_seeds(text)


def test_parse_layouts():
    assert parse_layouts("post,pre") == ("post", "pre")
    assert parse_layouts("pre, post,pre") == ("pre", "post")  # order kept, repeats dropped
    assert parse_layouts("deepnorm") == ("deepnorm",)
    with pytest.raises(GradsError, match="--layouts: unknown layout middle"):
        parse_layouts("post,middle")
    with pytest.raises(GradsError, match="--layouts: unknown layout"):
        parse_layouts(",")


def test_parse_depths():
    assert parse_depths("6,8,6") == (6, 8)
    with pytest.raises(GradsError, match="--depths: every depth must be >= 1"):
        parse_depths("6,0")
    with pytest.raises(GradsError, match="--depths: expected layer counts"):
        parse_depths("6,x")


def test_checkpoint_option_is_the_one_grammar_of_evaluate_and_finetune(tmp_path):
    """--run-dir RUN_DIR --checkpoint best|last|FILE|PATH (tests/commands/test_grammar.py runs all three commands);
    the old RUN_DIR:best answers with the new spelling."""
    from prelnx.commands.grads import RUN_DIR_AS
    from prelnx.exits import Refusal
    from prelnx.records.checkpoints import parse_checkpoints

    (tmp_path / "checkpoints").mkdir()
    for name in ("checkpoint_best.pt", "checkpoint_last.pt", "checkpoint3.pt"):
        (tmp_path / "checkpoints" / name).write_bytes(b"")
    for value, name in (("best", "checkpoint_best.pt"), ("last", "checkpoint_last.pt"), ("checkpoint3.pt", "checkpoint3.pt")):
        (choice,) = parse_checkpoints([value], run_dir_as=RUN_DIR_AS)
        assert choice.files(tmp_path) == [tmp_path / "checkpoints" / name]
    (a_file,) = parse_checkpoints([f"{tmp_path}/checkpoints/checkpoint3.pt"], run_dir_as=RUN_DIR_AS)
    assert a_file.files(None) == [tmp_path / "checkpoints" / "checkpoint3.pt"]  # a path needs no run dir
    with pytest.raises(Refusal, match=rf"^--checkpoint {tmp_path}:last: renamed --run-dir {tmp_path} --checkpoint last "):
        parse_checkpoints([f"{tmp_path}:last"], run_dir_as=RUN_DIR_AS)


# ---------------------------------------------------------------------------------------- statistics, summary


def _norm(layout: str, depth: int, seed: int, side: str, layer: int, weight: str) -> float:
    """Post-LN grows with the layer, Pre-LN is flat and falls with depth; seeds add a little spread."""
    base = 0.1 * layer if layout == "post" else 1.0 / depth
    return base * (1 + 0.01 * seed) * (2 if weight == "W2" else 1) * (1.5 if side == "decoder" else 1)


def _rows(depths=(2, 6), seeds=(1, 2, 3)) -> list[dict]:
    return [
        {"layout": layout, "depth": depth, "seed": seed, "side": side, "layer": layer, "weight": weight,
         "grad_norm": _norm(layout, depth, seed, side, layer, weight)}
        for layout in ("post", "pre") for depth in depths for seed in seeds for side in ("encoder", "decoder")
        for layer in range(1, depth + 1) for weight in ("W1", "W2")
    ]  # fmt: skip


def test_per_layer_stats_is_mean_and_sample_std_over_seeds():
    stats = stats_by(_rows(), LAYER_KEYS, "grad_norm")
    values = [_norm("post", 6, seed, "decoder", 6, "W2") for seed in (1, 2, 3)]
    entry = stats[("post", 6, "decoder", 6, "W2")]
    assert entry["n"] == 3 and entry["mean"] == pytest.approx(statistics.fmean(values))
    assert entry["std"] == pytest.approx(statistics.stdev(values))
    assert len(stats) == 2 * (2 + 6) * 2 * 2  # layouts x layers of both depths x sides x weights
    single = stats_by(_rows(depths=(2,), seeds=(4,)), LAYER_KEYS, "grad_norm")
    assert all(v["std"] == 0.0 and v["n"] == 1 for v in single.values())


def test_summarize_hand_made_rows():
    summary = summarize(_rows(), [])
    assert summary["layouts"] == ["post", "pre"] and summary["depths"] == [2, 6] and summary["seeds"] == [1, 2, 3]
    assert summary["growth_depth"] == 6  # the paper's depth when measured
    mean = statistics.fmean
    assert summary["last_layer_w2"]["pre"]["6"]["mean"] == pytest.approx(mean(_norm("pre", 6, s, "decoder", 6, "W2") for s in (1, 2, 3)))
    assert summary["last_layer_w2_falls_with_depth"]["pre"] == pytest.approx(2 / 6)
    assert summary["last_layer_w2_falls_with_depth"]["post"] == pytest.approx(6 / 2)
    assert summary["growth_last_over_first_layer"]["post"]["decoder"]["W2"] == pytest.approx(6.0)
    assert summary["growth_last_over_first_layer"]["pre"]["encoder"]["W1"] == pytest.approx(1.0)
    assert "checkpoint" not in summary
    with_checkpoint = summarize(_rows(), [r for r in _rows(depths=(2,)) if r["layout"] == "post"])
    assert {(e["depth"], e["layout"]) for e in with_checkpoint["checkpoint"]} == {(2, "post")}
    assert summarize(_rows(depths=(2, 4)), [])["growth_depth"] == 2  # without 6: the shallowest


# ------------------------------------------------------------------------------------ the paper's Figure 3


def test_the_figure3_numbers_come_from_paper_yaml():
    paper = yaml.safe_load(resources.files("prelnx").joinpath("paper.yaml").read_text())
    assert summarize(_rows(), [])["paper"] == paper["figure3"]
    summary = summarize(_rows(), [])
    summary["timing"] = {"wall_s": 1.0, "fwdbwd_sum_s": 1.0, "models": 1, "workers": 1, "threads_per_worker": 1,
                         "cost_ratio": 1.0, "build_sum_s": 0.0, "data_sum_s": 0.0}  # fmt: skip
    lines = "\n".join(report_lines(summary))
    assert f"(paper: {paper['figure3']['last_layer_w2']['post']})" in lines
    assert f"(paper: {paper['figure3']['per_layer']['pre']})" in lines
    # ... and nowhere in the study's code.
    package = Path(grads_package.__file__).parent
    for source in package.glob("*.py"):
        assert paper["figure3"]["last_layer_w2"]["post"] not in source.read_text(), source


# ----------------------------------------------------------------------------------------- memory planning


def test_preset_sizes_come_from_fairseq_architectures():
    """plan/model_sizes.py: the one reader of a preset's sizes (the memory plan here, the reproduction's estimate)."""
    dims = lambda arch: (lambda s: (s["embed_dim"], s["ffn_dim"]))(preset_sizes(arch))  # noqa: E731
    assert dims("transformer_iwslt_de_en") == (512, 1024) and preset_sizes("transformer")["encoder_layers"] == 6
    assert dims("transformer") == (512, 2048) and dims("transformer_wmt_en_de") == (512, 2048)
    assert dims("transformer_vaswani_wmt_en_de_big") == (1024, 4096) and dims("roberta_base") == (768, 3072)
    assert preset_sizes("no_such_arch") is None and preset_sizes("transformer_lm") is None  # no encoder sizes
    config = Config()
    config.model.arch, config.model.embed_dim = "no_such_arch", 256
    assert model_sizes(config) == {"encoder_layers": 6, "decoder_layers": 6, "embed_dim": 256, "ffn_dim": 2048}


def test_memory_per_worker_uses_the_config_dims_over_the_preset():
    config = Config()
    config.model.embed_dim, config.model.ffn_dim = 512, 1024
    small = memory_per_worker(config, 14, 4096)
    assert small == pytest.approx(0.8e9 + 80.0 * 4096 * 512 * 2 * 14 * 3 / 3)  # the calibrated Figure-3 model
    config.model.embed_dim, config.model.ffn_dim = 1024, 4096
    assert memory_per_worker(config, 14, 4096) > small
