"""Config -> the exact `fairseq-train` command of a run (saved as command.txt, runnable by hand).

`fairseq_argv` is a pure function of the config and the resolved data folder; nothing about a run is
decided anywhere else, so what ran is what command.txt says.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.data.locations import DEFAULT_DATA_DIRS, DEFAULT_LANGUAGES
from prelnx.data.synthetic import SyntheticTask


def _plugin_dir() -> Path:
    """The plugin's folder, found without importing it (importing it would import fairseq and register its parts)."""
    spec = importlib.util.find_spec("prelnx_fairseq_plugin")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("prelnx_fairseq_plugin is not installed; reinstall prelnx (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


PLUGIN_DIR = _plugin_dir()


class DataNotReady(ValueError):
    """The configured data folder is missing or not binarized; the message says how to prepare it."""


def data_home() -> Path:
    return Path(os.environ.get("PRELNX_DATA_HOME", Path.home() / ".cache" / "prelnx"))


def languages(config: Config) -> tuple[str, str]:
    default = DEFAULT_LANGUAGES.get(config.data.dataset, ("src", "tgt"))
    return config.data.source_lang or default[0], config.data.target_lang or default[1]


def data_dir(config: Config) -> Path:
    """Where the binarized data is (or, for synthetic, will be cached)."""
    if config.data.path is not None:
        return Path(config.data.path).expanduser()
    if config.data.dataset == "synthetic":
        return synthetic_dir(config.task, config.data.synthetic)
    return DEFAULT_DATA_DIRS.get(config.data.dataset, Path("data-bin") / config.data.dataset)


SYNTHETIC_KINDS = {"translation": "synthetic", "masked_lm": "synthetic-text", "sentence_prediction": "synthetic-pairs"}


def synthetic_dir(task: str, synthetic: SyntheticTask) -> Path:
    """Where a task's synthetic data is cached: one folder per kind and generator settings."""
    return data_home() / f"{SYNTHETIC_KINDS[task]}-{synthetic.fingerprint()}"


def data_problem(config: Config) -> str | None:
    """Why the config's data cannot be trained on (not prepared, damaged), or None. Generates nothing."""
    from prelnx.run.datacheck import DataDamaged, check_binarized, check_monolingual

    folder = data_dir(config)
    if config.task == "sentence_prediction":
        from prelnx.data.pairs import pairs_problem

        return pairs_problem(folder, generated=config.data.dataset == "synthetic")
    if config.task == "masked_lm":
        if config.data.dataset == "synthetic" and not (folder / "dict.txt").is_file():
            return None  # generated on demand
        if not (folder / "dict.txt").is_file() or not (folder / "train.idx").is_file():
            return (f"data.path: {folder} holds no binarized text for masked_lm (needs dict.txt, train.bin/.idx, "
                    f"valid.bin/.idx). Prepare it with `prelnx data prepare text --source <your text> --out <folder>` "
                    f"(see README, 'BERT') and point data.path at the output folder.")  # fmt: skip
        try:
            check_monolingual(folder)
        except DataDamaged as error:
            return str(error)
        return long_lines_problem(config, folder)
    source, target = languages(config)
    if config.data.dataset == "synthetic" and not (folder / f"dict.{source}.txt").is_file():
        return None  # generated on demand
    missing = [name for name in (f"dict.{source}.txt", f"dict.{target}.txt") if not (folder / name).is_file()]
    if missing:
        return (
            f"data.path: {folder} holds no binarized {config.data.dataset} data (missing {', '.join(missing)}). "
            f"Prepare it with `prelnx data prepare {config.data.dataset}` (see README, 'Data') and point data.path "
            f"at the output folder."
        )
    try:
        check_binarized(folder, source, target)
    except DataDamaged as error:
        return str(error)
    return None


def long_lines_problem(config: Config, folder: Path) -> str | None:
    """sample_break_mode complete packs whole lines: one longer than a sample makes fairseq's validation fail."""
    from prelnx.run.datacheck import longest_sentence

    d = config.data
    if d.sample_break_mode != "complete":
        return None
    for split in ("train", "valid"):
        longest = longest_sentence(folder / split)
        if longest is not None and longest > d.tokens_per_sample - 1:
            return (f"{folder / split}.bin: a line of {longest} tokens (end of line included) does not fit in a "
                    f"sample of data.tokens_per_sample {d.tokens_per_sample} (with its start token); set "
                    f"data.tokens_per_sample to at least {longest + 1}, or data.sample_break_mode: none to cut the "
                    f"text into samples across lines")  # fmt: skip
    return None


def ensure_data(config: Config) -> Path:
    """Generate the synthetic task if needed; check any other dataset is binarized and intact (and a fine-tuning's
    pre-trained checkpoint: CheckpointRefused, CheckpointDamaged). Returns the folder."""
    folder = data_dir(config)
    if config.data.dataset == "synthetic" and config.task in ("masked_lm", "sentence_prediction"):
        from prelnx.data.monolingual import prepare_synthetic_text

        task = SyntheticTask(**vars(config.data.synthetic))
        text = synthetic_dir("masked_lm", task)  # fine-tuning pairs use the pre-training text's dictionary
        prepare_synthetic_text(task, text)
        if config.task == "sentence_prediction":
            from prelnx.data.pairs import prepare_synthetic_pairs

            prepare_synthetic_pairs(task, text / "dict.txt", folder)
    elif config.data.dataset == "synthetic":
        from prelnx.data.synthetic import prepare_synthetic

        prepare_synthetic(SyntheticTask(**vars(config.data.synthetic)), folder)
    problem = data_problem(config)
    if problem is not None:
        raise DataNotReady(problem)
    if config.task == "sentence_prediction":  # the pre-trained weights load safely, or nothing starts
        from prelnx.run.checkpoints import checkpoint_info

        if config.finetune.from_checkpoint is None or not Path(config.finetune.from_checkpoint).is_file():
            raise DataNotReady(f"finetune.from_checkpoint: {config.finetune.from_checkpoint!r} is not a checkpoint "
                               f"file; fine-tune with `prelnx finetune --pretrained <masked_lm run>`")  # fmt: skip
        checkpoint_info(Path(config.finetune.from_checkpoint))
    return folder


def use_cuda(config: Config) -> bool:
    if config.train.device == "cpu":
        return False
    import torch

    available = torch.cuda.is_available()
    if config.train.device == "cuda" and not available:
        raise ValueError("train.device: cuda, but torch sees no GPU; use device: cpu or auto")
    return available


def fairseq_argv(config: Config, data: Path, save_dir: Path, *, cuda: bool) -> list[str]:
    """The `fairseq-train` arguments (without the program name) for this config."""
    if config.task == "translation":
        task_argv = translation_argv(config, data)
    else:
        from prelnx.run.plan_encoder import masked_lm_argv, sentence_prediction_argv

        task_argv = (masked_lm_argv if config.task == "masked_lm" else sentence_prediction_argv)(config, data)
    return task_argv + optimization_argv(config) + run_argv(config, save_dir, cuda=cuda)


def translation_argv(config: Config, data: Path) -> list[str]:
    """Task, model and criterion of a translation run."""
    m, t, b = config.model, config.train, config.eval.bleu
    source, target = languages(config)
    variant = m.layout == "deepnorm" or m.norm != "layernorm" or m.qk_norm
    argv = [
        str(data),
        "--user-dir", str(PLUGIN_DIR),
        "--task", "translation", "--source-lang", source, "--target-lang", target,
        # The paper's layouts are fairseq's own transformer; the variants are the plugin's subclass of it.
        "--arch", f"prelnx_{m.arch}" if variant else m.arch,
    ]  # fmt: skip
    if variant:
        argv += ["--norm-type", m.norm]
        if m.layout == "deepnorm":
            argv.append("--deepnorm")
        if m.qk_norm:
            argv.append("--qk-norm")
    for flag, value in (
        ("--encoder-layers", m.encoder_layers),
        ("--decoder-layers", m.decoder_layers),
        ("--encoder-embed-dim", m.embed_dim),
        ("--decoder-embed-dim", m.embed_dim),
        ("--encoder-ffn-embed-dim", m.ffn_dim),
        ("--decoder-ffn-embed-dim", m.ffn_dim),
        ("--encoder-attention-heads", m.attention_heads),
        ("--decoder-attention-heads", m.attention_heads),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if m.layout == "pre":
        # fairseq's Pre-LN: LayerNorm before each sublayer plus a final LayerNorm after the last layer.
        argv += ["--encoder-normalize-before", "--decoder-normalize-before"]
    argv += dropout_argv(config)
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


def dropout_argv(config: Config) -> list[str]:
    m = config.model
    return ["--dropout", str(m.dropout), "--attention-dropout", str(m.attention_dropout),
            "--activation-dropout", str(m.activation_dropout)]  # fmt: skip


def optimization_argv(config: Config) -> list[str]:
    """Optimizer and learning-rate schedule (the plugin's warmup_decay), the same for every task."""
    o, s = config.optimizer, config.schedule
    argv = ["--optimizer", o.name, "--lr", str(o.lr), "--weight-decay", str(o.weight_decay)]
    if o.name in ("adam", "radam"):
        argv += ["--adam-betas", f"({o.betas[0]}, {o.betas[1]})", "--adam-eps", str(o.eps)]
    else:
        argv += ["--momentum", str(o.momentum)]
    argv += [
        "--lr-scheduler", "warmup_decay",
        "--warmup-updates", str(s.warmup_updates), "--warmup-init-lr", str(s.warmup_init_lr),
        "--decay", s.decay,
    ]  # fmt: skip
    if s.decay == "step":
        argv += ["--step-epochs", ",".join(str(e) for e in s.step_epochs), "--step-factor", str(s.step_factor)]
    if s.decay_start_epoch is not None:
        argv += ["--decay-start-epoch", str(s.decay_start_epoch)]
    if s.decay_start_update is not None:
        argv += ["--decay-start-update", str(s.decay_start_update)]
    if s.decay == "linear":
        argv += ["--end-lr", str(s.end_lr)]
    return argv


def run_argv(config: Config, save_dir: Path, *, cuda: bool) -> list[str]:
    """Batching, length, device, checkpoints, logging and the validation grain, the same for every task."""
    t, every = config.train, config.eval.every_updates
    argv = ["--max-tokens", str(t.max_tokens), "--update-freq", str(t.update_freq), "--seed", str(t.seed),
            "--clip-norm", str(t.clip_norm), "--num-workers", str(t.num_workers)]  # fmt: skip
    if t.max_epoch is not None:
        argv += ["--max-epoch", str(t.max_epoch)]
    if t.max_update is not None:
        argv += ["--max-update", str(t.max_update)]
    if not cuda:
        argv.append("--cpu")
    if t.precision == "fp16":
        argv.append("--fp16")
    elif t.precision == "bf16":
        argv.append("--bf16")

    argv += ["--save-dir", str(save_dir), "--log-format", "json", "--log-interval", str(t.log_interval)]
    if every is not None:
        # Validate and checkpoint every N updates and when training stops, at an epoch's end only when it is the
        # last (train.max_epoch; fairseq has no "never" for --validate-interval): each validation is a metrics
        # row, and every checkpoint sits at a validated update (run/grain.py).
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


EPOCH_NEVER = 1_000_000  # an epoch interval no run reaches: fairseq has no "never" for --validate-interval


@dataclass
class Launch:
    """How the run's child process is started."""

    argv: list[str]  # fairseq-train arguments
    env: dict[str, str]  # additions to the environment
    threads: int  # torch threads per worker
    launcher: list[str] = field(default_factory=list)  # torchrun's arguments for several workers; [] for one
    batch: str = ""  # how the batch per update is made up (parallel.describe_batch)
    # srun's arguments when the workers are Slurm tasks (`prelnx train --executor slurm`): each task runs the
    # plain child command itself (rank 0 under prelnx); only command.txt shows them
    slurm_tasks: list[str] = field(default_factory=list)

    def child_argv(self, python: str) -> list[str]:
        """The command prelnx runs: fairseq's train module, under torchrun for several workers."""
        if self.launcher:
            return [python, "-u", "-m", "torch.distributed.run", *self.launcher, "-m", "fairseq_cli.train", *self.argv]
        return [python, "-u", "-m", "fairseq_cli.train", *self.argv]

    def command_line(self) -> str:
        """The plain command, with the environment it needs, as saved in command.txt (runnable by hand)."""
        env = " ".join(f"{key}={shlex.quote(value)}" for key, value in sorted(self.env.items()))
        program = f"torchrun {shlex.join(self.launcher)} -m fairseq_cli.train" if self.launcher else "fairseq-train"
        if self.slurm_tasks:  # inside an allocation of that shape (sbatch/salloc)
            program = f"srun {shlex.join(self.slurm_tasks)} {program}"
        return f"{env} {program} {shlex.join(self.argv)}".strip()


def plan_launch(config: Config, data: Path, save_dir: Path, env: dict[str, str] | None = None) -> Launch:
    """The launch of `config` on this machine. Its update_freq must already be resolved (resolve_batch)."""
    from prelnx.run.parallel import describe_batch, resolve

    cuda = use_cuda(config)
    if config.train.precision == "bf16" and not cuda:  # refused before training, where it would train
        from prelnx.machine import cpu_bf16_problem

        if (problem := cpu_bf16_problem()) is not None:
            raise ValueError(problem)
    parallel = resolve(config, cuda, env)
    threads = parallel.threads(config.train.threads)
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    argv = fairseq_argv(config, data, save_dir, cuda=cuda) + parallel.fairseq_argv()
    return Launch(argv, env, threads, parallel.launcher(), describe_batch(config, parallel), parallel.slurm_tasks())


def resolve_batch(config: Config, env: dict[str, str] | None = None) -> Config:
    """The config with update_freq derived from train.effective_batch_tokens for this run's workers."""
    from prelnx.run.parallel import resolve, with_effective_batch

    return with_effective_batch(config, resolve(config, use_cuda(config), env))
