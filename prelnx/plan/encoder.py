"""The fairseq arguments of BERT-style runs: fairseq's `roberta` encoder, pre-trained with `masked_lm` (Figure 5a)
or fine-tuned with `sentence_prediction` (MRPC, RTE: Figure 5b/c). Layouts (fairseq/models/roberta/model.py): post =
`roberta`; pre = `roberta_prenorm` (no embedding LayerNorm, a final one after the last layer: Figure 1b).
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.schema import Config
from prelnx.plan.common import dropout_argv, shape_argv, task_argv

FAIRSEQ_ARCH = {"post": "roberta", "pre": "roberta_prenorm"}


def masked_lm_argv(config: Config, data: Path) -> list[str]:
    d = config.data
    return task_argv(data, "masked_lm", "--criterion", "masked_lm",
                     # sentences packed into samples of up to tokens_per_sample tokens, as fairseq's RoBERTa recipe does
                     "--sample-break-mode", d.sample_break_mode, "--tokens-per-sample", str(d.tokens_per_sample),
                     "--mask-prob", str(d.mask_prob)) + encoder_argv(config)  # fmt: skip


def sentence_prediction_argv(config: Config, data: Path) -> list[str]:
    """fairseq's GLUE fine-tuning (examples/roberta/README.glue.md): the classification head on the first token.
    --finetune-from-model loads the pre-trained weights on the first start only (a resume: its checkpoint_last.pt)."""
    f = config.finetune
    return task_argv(data, "sentence_prediction", "--criterion", "sentence_prediction",
                     "--num-classes", str(f.num_classes), "--init-token", "0", "--separator-token", "2",
                     "--finetune-from-model", str(Path(f.from_checkpoint or "").resolve()),
                     "--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric") + encoder_argv(config)


def encoder_argv(config: Config) -> list[str]:
    arch = FAIRSEQ_ARCH[config.model.layout]
    return ["--arch", arch, "--max-positions", str(config.data.tokens_per_sample), *shape_argv(config, ("encoder",)),
            *dropout_argv(config)]  # fmt: skip
