"""One model of the gradient study, inside a worker: built through prelnx.launch.inprocess as `prelnx train` builds
it, in train mode (dropout as configured), fed the seed's batches of the task's own train iterator through the
configured criterion; the summed loss's gradient is divided by sample_size, as fairseq's trainer does.

Only the FFN weights require gradients (autograd then skips the ones nobody reads; the FFN's are the same numbers).
A hook on every layer reads the RMS of its output in the same forward passes (`hidden_rms`).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

from prelnx.analysis.grads.study import WEIGHTS, GradsError, ModelResult, ModelSpec, model_variant
from prelnx.config.schema import Config
from prelnx.launch.inprocess import build_model, load_plugin, training_cfg


class Worker:
    """What one worker process keeps between models: the task, fairseq cfgs per (layout, depth), each seed's batches."""

    def __init__(self, config: Config, batches: int, max_tokens: int) -> None:
        self.config, self.batches, self.max_tokens = config, batches, max_tokens
        self.cfgs: dict[tuple[str, int], Any] = {}
        self.samples: dict[int, list[dict[str, Any]]] = {}
        self.checkpoints: dict[str, Any] = {}
        self.task: Any = None
        self.criterion: Any = None

    def fairseq_cfg(self, layout: str, depth: int, seed: int) -> Any:
        """The training cfg of this variant: the same argv `prelnx train` would run, parsed by fairseq."""
        key = (layout, depth)
        if key not in self.cfgs:
            from fairseq import tasks

            with warnings.catch_warnings(action="ignore"):  # fairseq's use of hydra's deprecated API warns each call
                cfg = training_cfg(model_variant(self.config, layout, depth, seed))
            if self.task is None:  # the task (data, dictionaries) does not depend on layout, depth or seed
                self.task = tasks.setup_task(cfg.task)
                self.criterion = self.task.build_criterion(cfg.criterion)
            self.cfgs[key] = cfg
        return self.cfgs[key]

    def model(self, spec: ModelSpec) -> Any:
        """What `build_task_and_model` returns for this variant (seeded with the seed, then `task.build_model`), or
        the checkpoint's trained model (loaded once)."""
        cfg = self.fairseq_cfg(spec.layout, spec.depth, spec.seed)  # sets up the task
        if spec.checkpoint is None:
            with warnings.catch_warnings(action="ignore"):
                return build_model(self.task, cfg, seed=spec.seed)
        if spec.checkpoint not in self.checkpoints:
            self.checkpoints[spec.checkpoint] = load_checkpoint_model(Path(spec.checkpoint), self.task)[0]
        return self.checkpoints[spec.checkpoint]

    def seed_batches(self, seed: int, cfg: Any, model: Any) -> list[dict[str, Any]]:
        """The first N batches of the train iterator shuffled with this seed (built as fairseq's train builds it):
        the same for every model of the seed."""
        if seed not in self.samples:
            from fairseq import utils

            if "train" not in self.task.datasets:
                self.task.load_dataset("train", combine=False, epoch=1)
            try:
                iterator = self.task.get_batch_iterator(
                    dataset=self.task.dataset("train"),
                    max_tokens=self.max_tokens,
                    max_sentences=cfg.dataset.batch_size,
                    max_positions=utils.resolve_max_positions(self.task.max_positions(), model.max_positions()),
                    ignore_invalid_inputs=True,
                    required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
                    seed=seed,
                    num_workers=0,
                    epoch=1,
                    disable_iterator_cache=True,  # the cached iterator would ignore the seed
                )
            except AssertionError as error:  # fairseq's batch_by_size: a sentence longer than a batch
                raise GradsError(f"--max-tokens {self.max_tokens}: smaller than a training sentence ({error})") from None
            with warnings.catch_warnings(action="ignore"):  # torch warns that pin_memory does nothing without a GPU
                batches = iterator.next_epoch_itr(shuffle=True)
                samples = [sample for _, sample in zip(range(self.batches), batches)]
            if len(samples) < self.batches:
                raise GradsError(f"--batches {self.batches}: the train split has only {len(samples)} batches of {self.max_tokens} tokens")
            self.samples[seed] = samples
        return self.samples[seed]

    def measure(self, spec: ModelSpec) -> ModelResult:
        import torch

        start = time.perf_counter()
        model = self.model(spec)
        built = time.perf_counter()
        samples = self.seed_batches(spec.seed, self.cfgs[(spec.layout, spec.depth)], model)
        loaded = time.perf_counter()
        ffn = ffn_weights(model)
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        for weight in ffn.values():
            weight.requires_grad_(True)
        model.train()  # dropout as configured, as in training
        sums = dict.fromkeys(ffn, 0.0)
        fwdbwd = 0.0
        rms: dict[tuple[str, int], float] = {}
        handles = output_rms_hooks(model, rms)
        for index, sample in enumerate(samples):
            torch.manual_seed(spec.seed * 1000 + index)  # the same dropout draws for every model of the seed
            model.zero_grad(set_to_none=True)
            before = time.perf_counter()
            with warnings.catch_warnings(action="ignore"):  # torch deprecates fairseq's attention masks
                loss, sample_size, _ = self.criterion(model, sample)
                loss.backward()
            fwdbwd += time.perf_counter() - before
            scale = 1.0 / float(sample_size)  # what fairseq's trainer does: multiply_grads(1 / sample_size)
            for key, weight in ffn.items():
                sums[key] += float(weight.grad.norm()) * scale
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
        norms = {key: total / len(samples) for key, total in sums.items()}
        hidden = {key: total / len(samples) for key, total in rms.items()}
        return ModelResult(spec, norms, built - start, loaded - built, fwdbwd, hidden_rms=hidden)


def _layers(model: Any) -> list[tuple[str, int, Any]]:
    """(side, layer number from 1, layer) of every encoder and decoder layer."""
    stacks = (("encoder", model.encoder.layers), ("decoder", model.decoder.layers))
    return [(side, index, layer) for side, stack in stacks for index, layer in enumerate(stack, start=1)]


def output_rms_hooks(model: Any, sums: dict[tuple[str, int], float]) -> list[Any]:
    """Forward hooks adding the RMS of each encoder and decoder layer's output to sums[(side, layer from 1)]."""
    handles = []
    for side, index, layer in _layers(model):
        def hook(module: Any, inputs: Any, output: Any, key: tuple[str, int] = (side, index)) -> None:
            x = output[0] if isinstance(output, tuple) else output  # a decoder layer returns (x, attn, state)
            sums[key] = sums.get(key, 0.0) + float(x.detach().float().pow(2).mean().sqrt())

        handles.append(layer.register_forward_hook(hook))
    return handles


def ffn_weights(model: Any) -> dict[tuple[str, int, str], Any]:
    """(side, layer from 1, W1|W2) -> the FFN weight parameter of every encoder and decoder layer."""
    return {(side, index, name): getattr(layer, module).weight for side, index, layer in _layers(model)
            for name, module in WEIGHTS.items()}  # fmt: skip


def load_checkpoint_model(path: Path, task: Any) -> tuple[Any, str, int]:
    """(model, layout, depth) of a fairseq checkpoint, built with its own cfg for this task's dictionaries."""
    from fairseq import checkpoint_utils

    load_plugin()  # safe loading (weights_only=True with fairseq's allowlist) for fairseq's own loader too
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    except Exception as error:  # noqa: BLE001 - any unreadable file is the user's input error
        raise GradsError(f"--checkpoint: {path}: not a readable fairseq checkpoint ({type(error).__name__}: {error})") from None
    cfg = state.get("cfg")
    if cfg is None or cfg.get("model") is None or "model" not in state:
        raise GradsError(f"--checkpoint: {path}: no model config or weights in this file")
    model_cfg = cfg.model
    try:
        model = task.build_model(model_cfg)
        model.load_state_dict(state["model"], strict=True, model_cfg=model_cfg)
    except (RuntimeError, KeyError, AttributeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise GradsError(f"--checkpoint: {path}: does not fit the config's data and model ({first})") from None
    if getattr(model_cfg, "layout_file", None):
        layout = str(model_cfg.layout_file)  # a user's layout: its model.layout is its absolute PATH.py:CLASS
    elif getattr(model_cfg, "deepnorm", False):
        layout = "deepnorm"
    elif getattr(model_cfg, "layout_scheme", None) not in (None, "none"):
        layout = str(model_cfg.layout_scheme)  # a warm-up-free scheme: its name is its model.layout
    else:
        layout = "pre" if model.decoder.layers[0].normalize_before else "post"
    return model, layout, len(model.decoder.layers)
