"""The fairseq arguments of a translation run: task, model (fairseq's transformer, or the plugin's subclass for
the normalisation variants) and criterion, with BLEU validation."""

from __future__ import annotations

import json
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import dropout_argv, model_argv, task_argv
from prelnx.plan.data import languages


def translation_argv(config: Config, data: Path) -> list[str]:
    m, t, b = config.model, config.train, config.eval.bleu
    source, target = languages(config)
    argv = task_argv(data, "translation", "--source-lang", source, "--target-lang", target)
    argv += model_argv(config, f"prelnx_{m.arch}", ("encoder", "decoder")) + dropout_argv(config)
    if m.share_all_embeddings:
        argv.append("--share-all-embeddings")
    elif m.share_decoder_input_output_embed:
        argv.append("--share-decoder-input-output-embed")
    argv += ["--criterion", "label_smoothed_cross_entropy", "--label-smoothing", str(t.label_smoothing)]
    if b.enabled:
        generation = {"beam": b.beam, "lenpen": b.lenpen, "max_len_a": b.max_len_a, "max_len_b": b.max_len_b}
        argv += ["--eval-bleu", "--eval-bleu-args", json.dumps(generation), "--eval-bleu-detok", b.detok]
        if b.tokenized:
            argv.append("--eval-tokenized-bleu")
        if b.remove_bpe is not None:
            argv += ["--eval-bleu-remove-bpe", b.remove_bpe]
    return argv
