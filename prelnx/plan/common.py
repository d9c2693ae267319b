"""The fairseq arguments every task shares: dropout, optimizer and lr schedule, batching, device, checkpoints,
logging and the validation grain; and a layout's, read from its row (prelnx/layouts.py): fairseq's own model or the
plugin's, with the plugin options and Pre-LN flags it needs (a user's layout: `--layout-file /abs/PATH.py:CLASS`)."""

from __future__ import annotations

import json
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.layouts import PAPER, VARIANT, layout
from prelnx.plugin_path import PLUGIN_DIR

EPOCH_NEVER = 1_000_000  # an epoch interval no run reaches: fairseq has no "never" for --validate-interval


def given_argv(*flags: tuple[str, object]) -> list[str]:
    """`flag value` for each value the config sets, in order; a None leaves fairseq's default."""
    return [part for flag, value in flags if value is not None for part in (flag, str(value))]


def task_argv(data: Path, task: str, *argv: str) -> list[str]:
    """How every planner's argv opens: the data folder, the plugin (--user-dir) and fairseq's --task, then `argv`."""
    return [str(data), "--user-dir", str(PLUGIN_DIR), "--task", task, *argv]


def shape_argv(config: Config, sides: tuple[str, ...], widths: tuple[str, ...] = ("embed-dim",)) -> list[str]:
    """The model's size, each flag for each side (`--encoder-layers`, `--decoder-layers`, ...): layers, the width
    model.embed_dim sets (`widths`), FFN and heads; a None keeps the preset's."""
    m = config.model
    sizes = [*((width, m.embed_dim) for width in widths), ("ffn-embed-dim", m.ffn_dim),
             ("attention-heads", m.attention_heads)]  # fmt: skip
    layers = [(f"--{side}-layers", getattr(m, f"{side}_layers")) for side in sides]
    return given_argv(*layers, *((f"--{side}-{flag}", value) for flag, value in sizes for side in sides))


def dropout_argv(config: Config) -> list[str]:
    m = config.model
    return ["--dropout", str(m.dropout), "--attention-dropout", str(m.attention_dropout),
            "--activation-dropout", str(m.activation_dropout)]  # fmt: skip


def optimization_argv(config: Config) -> list[str]:
    """Optimizer and learning-rate schedule (the plugin's warmup_decay), the same for every task."""
    o, s = config.optimizer, config.schedule
    # Adam with GI-Adam's v_0 or without bias correction is the plugin's prelnx_adam; plain Adam stays fairseq's own
    variant = o.name == "adam" and (o.second_moment_init != "zero" or not o.bias_correction)
    argv = ["--optimizer", "prelnx_adam" if variant else o.name, "--lr", str(o.lr), "--weight-decay", str(o.weight_decay)]
    if o.name in ("adam", "radam"):
        argv += ["--adam-betas", f"({o.betas[0]}, {o.betas[1]})", "--adam-eps", str(o.eps)]
        if o.second_moment_init != "zero":
            argv += ["--second-moment-init", o.second_moment_init]
        if not o.bias_correction:
            argv.append("--no-bias-correction")
        if o.name == "radam" and o.radam_first_steps != "momentum":
            argv += ["--radam-first-steps", o.radam_first_steps]
    else:
        argv += ["--momentum", str(o.momentum)]
    argv += [
        "--lr-scheduler", "warmup_decay",
        "--warmup-updates", str(s.warmup_updates), "--warmup-init-lr", str(s.warmup_init_lr),
        "--decay", s.decay,
    ]  # fmt: skip
    if s.decay == "step":
        argv += ["--step-epochs", ",".join(str(e) for e in s.step_epochs), "--step-factor", str(s.step_factor)]
    argv += given_argv(("--decay-start-epoch", s.decay_start_epoch), ("--decay-start-update", s.decay_start_update),
                       ("--decay-period", s.decay_period))  # fmt: skip
    if s.decay == "linear":
        argv += ["--end-lr", str(s.end_lr)]
    return argv


def run_argv(config: Config, save_dir: Path, *, cuda: bool) -> list[str]:
    """Batching, length, device, checkpoints, logging and the validation grain, the same for every task."""
    t, every = config.train, config.eval.every_updates
    argv = ["--max-tokens", str(t.max_tokens), "--update-freq", str(t.update_freq), "--seed", str(t.seed),
            "--clip-norm", str(t.clip_norm), "--num-workers", str(t.num_workers)]  # fmt: skip
    argv += given_argv(("--max-epoch", t.max_epoch), ("--max-update", t.max_update))
    if not cuda:
        argv.append("--cpu")
    if t.precision != "fp32":
        argv.append(f"--{t.precision}")  # --fp16, --bf16

    argv += ["--save-dir", str(save_dir), "--log-format", "json", "--log-interval", str(t.log_interval)]
    argv += given_argv(("--diagnostics-every-updates", t.diagnostics.every_updates),  # the plugin's options
                       ("--sharpness-every-updates", t.diagnostics.sharpness_every_updates))  # (plugin/diagnostics.py)
    if every is not None:
        # Validate and checkpoint every N updates and when training stops, at an epoch's end only when it is the
        # last (train.max_epoch; fairseq has no "never" for --validate-interval): each validation is a metrics
        # row, and every checkpoint sits at a validated update (records/grain.py).
        last_epoch = str(t.max_epoch or EPOCH_NEVER)
        argv += ["--validate-interval-updates", str(every), "--save-interval-updates", str(every),
                 "--validate-interval", last_epoch, "--save-interval", last_epoch,
                 "--no-epoch-checkpoints", "--keep-interval-updates", str(max(1, t.keep_last_epochs))]  # fmt: skip
        if t.keep_every_updates is not None:  # stages kept for fine-tuning (prelnx finetune --checkpoint stages)
            argv += ["--keep-interval-updates-pattern", str(t.keep_every_updates)]
    elif t.keep_last_epochs == 0:
        argv.append("--no-epoch-checkpoints")
    else:
        argv += ["--keep-last-epochs", str(t.keep_last_epochs)]
    return argv


def uses_plugin_model(config: Config) -> bool:
    """False for fairseq's own model (the paper's post or pre with LayerNorm, no QK-Norm), True for the plugin's."""
    m = config.model
    return layout(m.layout).family != PAPER or m.norm != "layernorm" or m.qk_norm


def variant_argv(config: Config) -> list[str]:
    """The plugin model's options for this config ([] for fairseq's own model)."""
    m = config.model
    if not uses_plugin_model(config):
        return []
    row = layout(m.layout)
    argv = ["--norm-type", m.norm]
    if row.file is not None:
        argv += ["--layout-file", row.file]
    elif row.family == VARIANT:  # DeepNorm: the plugin's --deepnorm
        argv.append("--deepnorm")
    elif row.scheme:  # a warm-up-free scheme (docs/warmup_free.md) or a placement (docs/placements.md)
        argv += ["--layout-scheme", m.layout]
    if row.options:  # its declared options' values (layouts.Option), read by the plugin's LayoutScheme.option
        argv += ["--layout-options", json.dumps(m.options, sort_keys=True)]
    if m.qk_norm:
        argv.append("--qk-norm")
    return argv


def normalize_before_argv(config: Config, sides: tuple[str, ...]) -> list[str]:
    """fairseq's Pre-LN flags (a norm before each sublayer, a final norm per stack) for the layouts built on it."""
    return [f"--{side}-normalize-before" for side in sides] if layout(config.model.layout).pre_ln else []


def model_argv(config: Config, plugin_arch: str, sides: tuple[str, ...],
               widths: tuple[str, ...] = ("embed-dim",)) -> list[str]:
    """The model of a translation or language-model run: fairseq's preset, or `plugin_arch` with the plugin's options;
    each side's size and the Pre-LN flags."""
    arch = plugin_arch if uses_plugin_model(config) else config.model.arch
    return ["--arch", arch, *variant_argv(config), *shape_argv(config, sides, widths),
            *normalize_before_argv(config, sides)]
