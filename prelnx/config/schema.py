"""The typed configuration: every key a YAML config may hold, its type, default, meaning and checks (config.schedule:
`schedule:`). Units: learning rates absolute, lengths in updates or epochs as named, batch sizes in tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from prelnx.config.schedule import Problems, ScheduleConfig, schedule_problems
from prelnx.data.locations import TRAINED
from prelnx.data.synthetic import SyntheticTask
from prelnx.layout_options import option_values
from prelnx.layouts import (ALL_NORMS, ALL_TASKS, ARCH_PRESETS, LAYOUTS, NORM_REASON, QK_REASON, Layout,
                            LayoutFileError, absolute_spec, layout, post_ln_layers)

# fairseq's BERT-style encoder presets (fairseq/models/roberta/model.py; the layout's architecture: plan/encoder.py)
MLM_ARCH_PRESETS = ("roberta_base",)
# language_model: transformer_lm only; fairseq's other LM presets force decoder_normalize_before (transformer_lm.py)
LM_ARCH_PRESETS = ("transformer_lm",)


@dataclass
class DataConfig:
    dataset: Literal[TRAINED] = "synthetic"  # data/locations.py owns the names
    # Folder of binarized data (dict.*.txt, *.bin/*.idx); for synthetic, its cache (default: a folder named after the
    # task's settings in $PRELNX_DATA_HOME or ~/.cache/prelnx)
    path: str | None = None
    source_lang: str | None = None  # default per dataset: de/en, en/de, src/tgt
    target_lang: str | None = None
    synthetic: SyntheticTask = field(default_factory=SyntheticTask)  # only read when dataset is synthetic
    # masked_lm (language_model: the first two): tokens per training sample, and the share of tokens masked
    tokens_per_sample: int = 512
    mask_prob: float = 0.15
    # complete: whole lines packed into samples (fairseq's RoBERTa recipe; a line must fit in one); none: the text
    # cut into samples of exactly tokens_per_sample, across lines (for long documents)
    sample_break_mode: Literal["complete", "none"] = "complete"


@dataclass
class ModelConfig:
    # Where the norm sits: a name of the layout table (prelnx/layouts.py; docs/warmup_free.md, docs/placements.md)
    # or your own, PATH.py:CLASS (a LayoutScheme subclass, docs/your_layout.md; PATH made absolute).
    layout: str = "post"
    # The layout's own options, model.<key> in a config (a layout declares them: prelnx/layout_options.py's Option; the
    # loader fills in their defaults and checks them): mixln_alpha, admin_init, rezero_ffn_init, a user file's own.
    options: dict[str, Any] = field(default_factory=dict)
    norm: Literal[ALL_NORMS] = "layernorm"  # the normalisation module (dyt: gamma*tanh(alpha*x)+beta); layouts.py
    qk_norm: bool = False  # normalise queries and keys (per head) before the attention dot product
    arch: str = "transformer_iwslt_de_en"  # a fairseq preset (masked_lm: roberta_base), resized by the fields below
    encoder_layers: int | None = None
    decoder_layers: int | None = None
    embed_dim: int | None = None  # encoder and decoder
    ffn_dim: int | None = None  # encoder and decoder FFN inner size
    attention_heads: int | None = None  # encoder and decoder
    dropout: float = 0.1  # the paper's value; fairseq's IWSLT recipe uses 0.3
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    share_decoder_input_output_embed: bool = True
    share_all_embeddings: bool = False  # needs a joined dictionary

    def __post_init__(self) -> None:
        self.layout = absolute_spec(self.layout)  # a user's file is run from wherever the run starts
        try:  # its declared options, defaults filled in (a bad value is kept for layout_problems to name)
            self.options = option_values(layout(self.layout), self.options)[0]
        except (KeyError, LayoutFileError):
            pass  # layout_problems names the layout


@dataclass
class OptimizerConfig:
    name: Literal["adam", "sgd", "radam"] = "adam"
    lr: float = 5e-4  # the peak learning rate, reached at the end of warm-up
    betas: tuple[float, float] = (0.9, 0.98)  # adam and radam
    eps: float = 1e-8  # adam and radam
    weight_decay: float = 0.0
    momentum: float = 0.0  # sgd only
    # v_0, Adam's second moment before the first step: zero (Adam) or gradient (GI-Adam, v_0 = g_1^2; Kalra &
    # Barkeshli 2024); adam and radam (RAdam's first, unrectified updates do not use v)
    second_moment_init: Literal["zero", "gradient"] = "zero"
    bias_correction: bool = True  # adam only: false uses m_t and v_t without Adam's 1 - beta^t corrections
    # radam only: its first updates while rho_t <= 5 (about 5): momentum (torch's RAdam and T-Fixup's adam.py:248-252)
    # or decay_only (Transformer-Clinic's radam_fairseq/radam.py:124, 70f72b7: weight decay only; the Admin configs)
    radam_first_steps: Literal["momentum", "decay_only"] = "momentum"


@dataclass
class DiagnosticsConfig:
    # every N updates: per layer and sublayer the gradient norm, ||delta w|| / ||w|| after the step and the largest
    # pre-softmax attention logit, into diagnostics.jsonl (null = off)
    every_updates: int | None = None
    # every M updates: the critical sharpness 2 / eta_c on a fixed validation batch (null = off)
    sharpness_every_updates: int | None = None


@dataclass
class TrainConfig:
    max_tokens: int = 4096  # tokens per batch (per GPU), before update_freq
    max_epoch: int | None = None
    max_update: int | None = None
    seed: int = 1
    clip_norm: float = 0.0  # 0 = no gradient clipping
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto = cuda when a GPU is visible
    precision: Literal["fp32", "fp16", "bf16"] = "fp32"
    update_freq: int = 1  # gradient accumulation: batches per update (derived when effective_batch_tokens is set)
    # tokens per update summed over workers and accumulation; when set, update_freq = this / (max_tokens x workers)
    effective_batch_tokens: int | None = None
    processes: int | None = None  # data-parallel workers on this machine; None = every visible GPU, or 1 on CPU
    nodes: int = 1  # machines (Slurm); workers in all = processes x nodes
    threads: int | None = None  # CPU threads for torch per worker; None = the cores shared by the workers
    label_smoothing: float = 0.1  # translation's criterion; masked_lm and sentence_prediction use fairseq's own
    log_interval: int = 25  # updates between progress lines
    # epoch checkpoints kept besides checkpoint_last/best (with eval.every_updates: update checkpoints, at least 1)
    keep_last_epochs: int = 5
    # with eval.every_updates: also keep every checkpoint whose update is a multiple of this (Figure 5b/c's stages)
    keep_every_updates: int | None = None
    loss_ceiling: float | None = None  # a train loss (base 2) above this counts as divergence; None = NaN/Inf only
    num_workers: int = 1  # fairseq data-loading worker processes; 0 = load in the training process
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)  # why warm-up works: docs/diagnostics.md


@dataclass
class BleuConfig:
    enabled: bool = True  # compute validation BLEU after every epoch
    beam: int = 5
    lenpen: float = 1.0
    max_len_a: float = 1.2  # generate at most a * source_length + b tokens
    max_len_b: int = 10
    remove_bpe: str | None = None  # the BPE continuation marker to remove, e.g. "@@ " for subword-nmt
    detok: Literal["space", "moses"] = "space"  # how hypotheses are detokenized before scoring
    tokenized: bool = True  # True: BLEU on tokenized text (as the paper and fairseq-generate); False: SacreBLEU 13a
    # prelnx evaluate's tokenized BLEU splits hyphenated compounds (fairseq's WMT14 En-De convention);
    # null = on for wmt14, off otherwise
    compound_split: bool | None = None


@dataclass
class TestDecodingConfig:
    # prelnx evaluate's decoding; null = eval.bleu's (validation BLEU's), so the two agree unless a config says not
    beam: int | None = None
    lenpen: float | None = None


@dataclass
class EvalConfig:
    # validate every N updates (a metrics row and TensorBoard step per validation; masked_lm needs it); null = per epoch
    every_updates: int | None = None
    bleu: BleuConfig = field(default_factory=BleuConfig)  # translation only
    test: TestDecodingConfig = field(default_factory=TestDecodingConfig)


@dataclass
class FinetuneConfig:
    # task: sentence_prediction only
    from_checkpoint: str | None = None  # the pre-trained checkpoint the model starts from (its optimizer is not)
    num_classes: int = 2  # MRPC and RTE: 2


@dataclass
class Config:
    name: str | None = None  # run name; default: the config file's path under configs/, without .yaml
    # translation: fairseq's encoder-decoder transformer; masked_lm: BERT-style pre-training (roberta, Figure 5a);
    # sentence_prediction: fine-tuning it (MRPC, RTE: Figure 5b/c; `prelnx finetune`); language_model: transformer_lm
    task: Literal[ALL_TASKS] = "translation"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)


# Keys (or whole sections) that only some tasks read: `--dry-run` prints only those of the run's task.
TASK_KEYS: dict[str, tuple[str, ...]] = {
    "data.tokens_per_sample": ("masked_lm", "sentence_prediction", "language_model"),
    "data.mask_prob": ("masked_lm",),
    "data.sample_break_mode": ("masked_lm", "language_model"),
    "model.encoder_layers": ("translation", "masked_lm", "sentence_prediction"),
    "model.decoder_layers": ("translation", "language_model"),
    "model.share_decoder_input_output_embed": ("translation", "language_model"),
    "model.share_all_embeddings": ("translation",),
    "train.label_smoothing": ("translation",),
    "eval.bleu": ("translation",),
    "eval.test": ("translation",),
    "finetune": ("sentence_prediction",),
}


def check_values(config: Config) -> list[tuple[str, str]]:
    """Checks that span keys or bound values; returns (key, message) pairs. Types are checked by the loader."""
    problems = Problems()
    need = problems.need
    m, o, s, t, b = config.model, config.optimizer, config.schedule, config.train, config.eval.bleu
    if config.task != "translation":
        _task_problems(config, need)
    else:
        need(m.arch in ARCH_PRESETS, "model.arch", f"unknown preset {m.arch!r}; allowed: {', '.join(ARCH_PRESETS)}")
    every = config.eval.every_updates
    need(every is None or every >= 1, "eval.every_updates", f"must be >= 1 or null, got {every}")
    problems += layout_problems(config)
    for key in ("encoder_layers", "decoder_layers", "embed_dim", "ffn_dim", "attention_heads"):
        value = getattr(m, key)
        need(value is None or value >= 1, f"model.{key}", f"must be >= 1 or null, got {value}")
    need(m.embed_dim is None or not m.attention_heads or m.embed_dim % m.attention_heads == 0,
         "model.attention_heads", f"must divide model.embed_dim ({m.embed_dim}), got {m.attention_heads}")
    for key in ("dropout", "attention_dropout", "activation_dropout"):
        value = getattr(m, key)
        need(0.0 <= value < 1.0, f"model.{key}", f"must be in [0, 1), got {value}")
    need(o.lr > 0, "optimizer.lr", f"must be > 0, got {o.lr}")
    need(all(0.0 <= beta < 1.0 for beta in o.betas), "optimizer.betas", f"each must be in [0, 1), got {list(o.betas)}")
    need(o.weight_decay >= 0, "optimizer.weight_decay", f"must be >= 0, got {o.weight_decay}")
    need(0.0 <= o.momentum < 1.0, "optimizer.momentum", f"must be in [0, 1), got {o.momentum}")
    need(o.momentum == 0.0 or o.name == "sgd", "optimizer.momentum", f"only sgd uses momentum; optimizer.name is {o.name}")
    problems += schedule_problems(s, o.lr, t.max_update)
    need(o.second_moment_init == "zero" or o.name in ("adam", "radam"), "optimizer.second_moment_init",
         f"only adam and radam have a second moment; optimizer.name is {o.name}")  # fmt: skip
    need(o.bias_correction or o.name == "adam", "optimizer.bias_correction",
         f"only adam can run without bias correction (RAdam's rectification assumes it); optimizer.name is {o.name}")
    need(o.radam_first_steps == "momentum" or o.name == "radam", "optimizer.radam_first_steps",
         f"only radam has unrectified first steps; optimizer.name is {o.name}")  # fmt: skip
    for key in ("every_updates", "sharpness_every_updates"):
        value = getattr(t.diagnostics, key)
        need(value is None or value >= 1, f"train.diagnostics.{key}", f"must be >= 1 or null (off), got {value}")
    diagnosed = t.diagnostics.every_updates is not None or t.diagnostics.sharpness_every_updates is not None
    need(not (diagnosed and t.precision == "fp16"), "train.diagnostics",
         "diagnostics read the gradients as fp32 or bf16 runs hold them (fp16's are loss-scaled); use precision "
         "fp32 or bf16, or set train.diagnostics.every_updates and sharpness_every_updates to null")  # fmt: skip
    need(t.max_epoch is not None or t.max_update is not None, "train.max_epoch",
         "set train.max_epoch or train.max_update (or both); otherwise training never stops")  # fmt: skip
    for key in ("max_tokens", "update_freq", "log_interval", "nodes"):
        value = getattr(t, key)
        need(value >= 1, f"train.{key}", f"must be >= 1, got {value}")
    need(t.effective_batch_tokens is None or t.effective_batch_tokens >= t.max_tokens, "train.effective_batch_tokens",
         f"must be at least train.max_tokens ({t.max_tokens}), got {t.effective_batch_tokens}")
    need(t.keep_every_updates is None or (every is not None and t.keep_every_updates % every == 0),
         "train.keep_every_updates", f"must be a multiple of eval.every_updates ({every}): checkpoints are saved at "
         f"validations")  # fmt: skip
    for key in ("max_epoch", "max_update", "processes", "threads", "keep_every_updates"):
        value = getattr(t, key)
        need(value is None or value >= 1, f"train.{key}", f"must be >= 1 or null, got {value}")
    need(t.num_workers >= 0, "train.num_workers", f"must be >= 0 (0 = load in the training process), got {t.num_workers}")
    need(t.clip_norm >= 0, "train.clip_norm", f"must be >= 0 (0 = off), got {t.clip_norm}")
    need(t.keep_last_epochs >= 0, "train.keep_last_epochs", f"must be >= 0, got {t.keep_last_epochs}")
    need(0.0 <= t.label_smoothing < 1.0, "train.label_smoothing", f"must be in [0, 1), got {t.label_smoothing}")
    need(t.loss_ceiling is None or t.loss_ceiling > 0, "train.loss_ceiling", f"must be > 0 or null, got {t.loss_ceiling}")
    need(not (t.device == "cpu" and t.precision == "fp16"), "train.precision",
         "fp16 needs a GPU (train.device: cuda or auto); use fp32 or bf16 on CPU")  # fmt: skip
    need(b.beam >= 1, "eval.bleu.beam", f"must be >= 1, got {b.beam}")
    need(b.lenpen > 0, "eval.bleu.lenpen", f"must be > 0, got {b.lenpen}")
    need(config.data.dataset != "custom" or config.data.path is not None, "data.path",
         "dataset: custom needs the folder of its binarized data")
    need(not m.share_all_embeddings or m.share_decoder_input_output_embed, "model.share_decoder_input_output_embed",
         "must be true when model.share_all_embeddings is true")
    return problems


def _task_problems(config: Config, need: Callable[[bool, str, str], None]) -> None:
    """The keys masked_lm, sentence_prediction (roberta) or language_model cannot train with, each to `need`."""
    m, d, task, f = config.model, config.data, config.task, config.finetune
    if task == "language_model":
        need(m.arch in LM_ARCH_PRESETS, "model.arch",
             (f"task: language_model uses fairseq's decoder-only preset {', '.join(LM_ARCH_PRESETS)} (its other "
              f"presets are always Pre-LN), got {m.arch!r}"))  # fmt: skip
        need(m.encoder_layers is None, "model.encoder_layers",
             "task: language_model is decoder-only: remove the key and set model.decoder_layers")
        need(not m.share_all_embeddings, "model.share_all_embeddings",
             "task: language_model has one dictionary: use model.share_decoder_input_output_embed")
    else:
        need(m.arch in MLM_ARCH_PRESETS, "model.arch",
             f"task: {task} uses an encoder preset ({', '.join(MLM_ARCH_PRESETS)}; roberta_base is BERT base), "
             f"got {m.arch!r}")  # fmt: skip
        need(m.norm == "layernorm" and not m.qk_norm, "model.norm",
             f"task: {task} runs fairseq's own roberta encoder: norm layernorm, qk_norm false")
        need(m.decoder_layers is None, "model.decoder_layers", f"task: {task} has no decoder; remove the key")
    need(d.dataset in ("synthetic", "custom"), "data.dataset",
         f"task: {task} reads synthetic or custom (prelnx data prepare text) data, got {d.dataset!r}")
    need(d.tokens_per_sample >= 8, "data.tokens_per_sample", f"must be >= 8, got {d.tokens_per_sample}")
    if task == "masked_lm":
        need(config.eval.every_updates is not None, "eval.every_updates",
             "task: masked_lm validates by updates: set eval.every_updates (e.g. 100)")
        need(0.0 < d.mask_prob < 1.0, "data.mask_prob", f"must be in (0, 1), got {d.mask_prob}")
    elif task == "sentence_prediction":
        # finetune.from_checkpoint is checked when the run starts: prelnx finetune sets it
        need(f.num_classes >= 2, "finetune.num_classes", f"must be >= 2, got {f.num_classes}")


def layout_problems(config: Config) -> list[tuple[str, str]]:
    """model.layout against its row of the table: a known layout (or a loadable file of yours), defined for the
    config's task, its norm and its QK-Norm; its options (an option's range is its declaration's), and the
    placements' own checks (docs/placements.md): a Mix-LN with no Post-LN layer (post_ln_layers, floor(alpha L), is
    0). The one check of a layout's flags (the plugin trusts it)."""
    m, task = config.model, config.task
    try:
        row: Layout = layout(m.layout)
    except LayoutFileError as error:
        return [("model.layout", str(error))]
    except KeyError:
        shipped = ", ".join(repr(name) for name in LAYOUTS)
        return [("model.layout", (f"expected one of {shipped}, got {m.layout!r} (or a file of yours, PATH.py:CLASS: "
                                 f"docs/your_layout.md)"))]  # fmt: skip
    problems = Problems(option_values(row, m.options)[1])
    if task not in row.tasks:
        allowed = ", ".join(name for name, other in LAYOUTS.items() if task in other.tasks)
        problems.append(("model.layout", (f"task: {task} has layouts {allowed} ({row.display if row.file else m.layout} is "
                                         f"{' and '.join(row.tasks)} only), got {m.layout!r}")))  # fmt: skip
    if m.norm not in row.norms:
        why = NORM_REASON.get(row.family, "is defined") if row.file is None else "is defined (by its file)"
        problems.append(("model.norm", f"layout: {m.layout} {why}; use norm: {' or '.join(row.norms)}, got {m.norm!r}"))
    if m.qk_norm and not row.qk_norm:
        why = QK_REASON.get(row.family, "is defined without QK-Norm") if row.file is None else "is defined (by its file) without QK-Norm"
        problems.append(("model.qk_norm", f"layout: {m.layout} {why}; use qk_norm: false"))
    alpha = m.options.get("mixln_alpha")
    if m.layout == "mixln" and isinstance(alpha, float) and 0.0 <= alpha <= 1.0:  # else refused by its declaration
        for key in ("encoder_layers", "decoder_layers"):
            layers = getattr(m, key)
            problems.need(layers is None or layers < 1 or post_ln_layers(alpha, layers) != 0, f"model.{key}",
                          (f"layout: mixln with mixln_alpha {alpha} has no Post-LN layer in {layers} layers "
                           f"(floor(alpha L) = 0: it would be Pre-LN); use more layers or a larger model.mixln_alpha"))
    return problems
