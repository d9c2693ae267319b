"""'Did you mean' for a name the user got wrong: a config key, by meaning where the name is a known alias of ours
(learning_rate -> optimizer.lr) and by spelling otherwise; a config file, by the closest existing files."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

# Names other tools and papers give our keys (Hugging Face, fairseq, PyTorch), for "did you mean":
# their name -> the last part of ours.
ALIASES = {
    **dict.fromkeys(("learning_rate", "peak_lr", "max_lr", "base_lr"), "lr"),
    **dict.fromkeys(("warmup", "warmup_steps", "num_warmup_steps", "warmup_iters", "warm_up"), "warmup_updates"),
    **dict.fromkeys(("init_lr", "warmup_init", "start_lr", "initial_lr"), "warmup_init_lr"),
    **dict.fromkeys(("min_lr", "final_lr"), "end_lr"),
    **dict.fromkeys(("epochs", "num_epochs", "max_epochs", "num_train_epochs", "epoch"), "max_epoch"),
    **dict.fromkeys(("steps", "max_steps", "updates", "max_updates", "total_steps", "num_updates"), "max_update"),
    **dict.fromkeys(("batch_size", "batch_tokens", "tokens_per_batch"), "max_tokens"),
    **dict.fromkeys(("grad_clip", "clip_grad_norm", "max_grad_norm", "clip"), "clip_norm"),
    **dict.fromkeys(("accumulation_steps", "gradient_accumulation_steps", "grad_accum"), "update_freq"),
    **dict.fromkeys(("d_model", "hidden_size", "embed_size", "model_dim", "encoder_embed_dim"), "embed_dim"),
    **dict.fromkeys(("d_ff", "ffn_embed_dim", "intermediate_size", "ffn_size"), "ffn_dim"),
    **dict.fromkeys(("heads", "num_heads", "n_heads", "num_attention_heads"), "attention_heads"),
    **dict.fromkeys(("layers", "num_layers", "n_layers", "num_encoder_layers"), "encoder_layers"),
    **dict.fromkeys(("norm_position", "normalize_before", "pre_norm", "prenorm", "ln_position"), "layout"),
    **dict.fromkeys(("scheduler", "lr_scheduler", "decay_type"), "decay"),
    **dict.fromkeys(("type", "optim"), "name"),
    "wd": "weight_decay", "beta": "betas", "length_penalty": "lenpen",
    **dict.fromkeys(("epsilon", "adam_eps"), "eps"),
    **dict.fromkeys(("beam_size", "num_beams"), "beam"),
    **dict.fromkeys(("smoothing", "label_smoothing_factor"), "label_smoothing"),
    **dict.fromkeys(("gpus", "num_gpus", "workers", "world_size"), "processes"),
}


def _split(key: str) -> tuple[str, str]:
    section, _, last = key.rpartition(".")
    return section, last


def closest_key(key: str, known: Collection[str], aliases: Mapping[str, str]) -> str | None:
    """The known key `key` most likely meant, or None: 1. by its last part, an alias (`learning_rate`) or right in
    another section (`train.lr`), preferring the same section; 2. the same section's key spelt closest (`model.layuot`
    -> `model.layout`); 3. the closest whole key (`optimiser.lr` -> `optimizer.lr`)."""
    section, last = _split(key)
    meant = aliases.get(last.lower(), last)
    by_meaning = sorted((k for k in known if _split(k)[1] == meant), key=lambda k: (_split(k)[0] != section, k))
    if by_meaning:
        return by_meaning[0]
    same_section = {_split(k)[1]: k for k in known if _split(k)[0] == section}
    near = difflib.get_close_matches(last, list(same_section), n=1)
    if near:
        return same_section[near[0]]
    near = difflib.get_close_matches(key, list(known), n=1)
    return near[0] if near else None


def closest_files(name: str | Path, roots: Iterable[Path], limit: int = 4) -> list[str]:
    """Up to `limit` .yaml files under the roots (recursively) or beside `name` whose last path parts are spelt
    closest to `name`'s (the best, and those nearly as close): `configs/demo/preln_nowarmpu.yaml` ->
    configs/demo/preln_nowarmup.yaml; a bare name is compared by file name."""
    wanted = Path(name).with_suffix("")
    parts = [p for p in wanted.parts if p not in ("configs", ".")] or [wanted.name]
    folders = [(root, "**/*.yaml") for root in roots]
    if str(Path(name).parent) not in ("", "."):
        folders.append((Path(name).parent, "*.yaml"))
    candidates = {path.resolve(): path for root, pattern in folders if root.is_dir() for path in root.glob(pattern)}
    scored = []
    for resolved, candidate in candidates.items():
        tail = resolved.with_suffix("").parts[-len(parts):]
        ratio = difflib.SequenceMatcher(None, "/".join(parts), "/".join(tail)).ratio()
        if ratio >= 0.75:
            shown = candidate.relative_to(Path.cwd()) if candidate.is_relative_to(Path.cwd()) else candidate
            scored.append((-ratio, str(shown)))
    best = min(scored, default=(0.0, ""))[0]
    return [shown for score, shown in sorted(set(scored))[:limit] if score <= best + 0.05]  # the closest ones only
