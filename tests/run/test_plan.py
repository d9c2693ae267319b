"""Config -> fairseq-train argv: a pure function, checked against fairseq's own argument parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from prelnx.config.load import load_config
from prelnx.launch.inprocess import load_plugin
from prelnx.plan.launch import fairseq_argv
from prelnx.plugin_path import PLUGIN_DIR


def parse(argv: list[str]):
    from fairseq import options

    load_plugin()
    return options.parse_args_and_arch(options.get_training_parser(), argv)


@pytest.mark.parametrize("name", ["iwslt14/postln_warmup.yaml", "iwslt_preln.yaml", "iwslt14/postln_sgd_nowarmup.yaml",
                                  "iwslt14/preln_radam_nowarmup.yaml", "wmt14/preln_nowarmup_lr7e-4.yaml"])
def test_paper_configs_become_commands_fairseq_accepts(name):
    config, _ = load_config(name)
    args = parse(fairseq_argv(config, Path("data-bin/x"), Path("ckpt"), cuda=False))
    assert args.optimizer == config.optimizer.name
    assert args.lr == [config.optimizer.lr]
    assert args.lr_scheduler == "warmup_decay" and args.warmup_updates == config.schedule.warmup_updates
    assert args.decay == config.schedule.decay
    assert args.encoder_normalize_before == (config.model.layout == "pre")
    assert args.decoder_normalize_before == (config.model.layout == "pre")
    assert args.max_tokens == config.train.max_tokens and args.cpu
    assert args.user_dir == str(PLUGIN_DIR)
    assert args.eval_bleu and "lenpen" in args.eval_bleu_args


def test_iwslt_preln_command_details():
    config, _ = load_config("iwslt_preln.yaml")
    argv = fairseq_argv(config, Path("data"), Path("ckpt"), cuda=False)
    args = parse(argv)
    assert args.arch == "transformer_iwslt_de_en" and args.dropout == 0.1
    assert args.step_epochs == "8" and args.step_factor == 0.1
    assert eval(args.adam_betas) == (0.9, 0.98)
    assert args.criterion == "label_smoothed_cross_entropy" and args.label_smoothing == 0.1
    assert args.eval_tokenized_bleu and args.eval_bleu_remove_bpe == "@@ "
    assert '"beam": 5' in args.eval_bleu_args and '"lenpen": 1.2' in args.eval_bleu_args


def test_dimension_overrides_and_gpu_flags():
    from prelnx.plan.parallel import Parallel

    config, _ = load_config("iwslt_preln.yaml", ["model.embed_dim=256", "model.encoder_layers=8",
                                                  "train.precision=bf16", "train.processes=2"])  # fmt: skip
    argv = fairseq_argv(config, Path("data"), Path("ckpt"), cuda=True) + Parallel(2, 1, cuda=True).fairseq_argv()
    assert argv[argv.index("--encoder-embed-dim") + 1] == "256"
    assert argv[argv.index("--decoder-embed-dim") + 1] == "256"
    assert argv[argv.index("--encoder-layers") + 1] == "8"
    assert "--bf16" in argv and "--cpu" not in argv
    assert argv[argv.index("--distributed-world-size") + 1] == "2"


def test_tfixup_recipe_is_the_authors_shifted_decay_through_fairseqs_parser():
    """warmup_free/tfixup_iwslt14.yaml: inverse_sqrt_nowarmup --decay-period 4000, i.e. 5e-4 * sqrt(4000 / (4000 + t))
    from update 0, as the plugin's warmup_decay parses it from the plain fairseq-train argv."""
    import math

    from prelnx_fairseq_plugin.lr_scheduler.warmup_decay import warmup_decay_lr

    config, _ = load_config("warmup_free/tfixup_iwslt14.yaml")
    argv = fairseq_argv(config, Path("data"), Path("ckpt"), cuda=False)
    assert argv[argv.index("--decay-period") + 1] == "4000" and "--decay-start-update" not in argv
    args = parse(argv)
    assert (args.lr_scheduler, args.decay, args.warmup_updates, args.decay_period) == ("warmup_decay", "inverse_sqrt", 0, 4000)
    assert args.layout_scheme == "tfixup"
    for t in (0, 4000, 12000):
        assert warmup_decay_lr(args, t, 1) == pytest.approx(5e-4 * math.sqrt(4000 / (4000 + t)))


def test_rezero_postln_is_the_plugins_scheme_with_fairseqs_layernorm():
    config, _ = load_config("warmup_free/rezero_iwslt14.yaml", ["model.layout=rezero_postln"])
    args = parse(fairseq_argv(config, Path("data"), Path("ckpt"), cuda=False))
    assert (args.arch, args.layout_scheme, args.norm_type) == ("prelnx_transformer_iwslt_de_en", "rezero_postln", "layernorm")
    assert not args.encoder_normalize_before and not args.decoder_normalize_before  # a Post-LN scheme
