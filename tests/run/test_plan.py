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
