"""The compute a stage will take, before it runs (docs/reproduce.md): a run's updates x tokens per update, weighted by
the model's cost per token; at demo and cpu scale this machine's pace (`probe`), at paper scale GPU-hours on a V100."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from prelnx.config.schema import Config
from prelnx.machine import load_average, usable_cores
from prelnx.plan.model_sizes import TRANSFORMER_BASE, model_sizes

STARTUP_S = 8.0  # a fairseq training process's start-up and first validation, seconds on this kind of CPU
# fairseq's issue 940 (myleott, 2019): transformer_wmt_en_de on 4 x V100 fp32, "more than ~73k wps": ~18k target
# words/s per V100 at TRANSFORMER_BASE's cost per token. An assumption, not measured here: the plan says so.
GPU_WPS = 18_000.0
GPU_SOURCE = "fairseq issue 940: ~73k wps on 4 x V100 fp32, transformer_wmt_en_de"
PAPER_GPU_VOCAB = 32000  # transformer_wmt_en_de's joined BPE vocabulary, with TRANSFORMER_BASE its cost per token
PROBE_CONFIG = "demo/base.yaml"
# The probe's pace where prelnx was written (docs/reproduce.md, the estimate checked against D1: 3,840-4,070 target
# tokens/s, AMD EPYC with AVX512-BF16, one thread, load average 1.4-1.5). A plan refused for its missing data is
# estimated at it: the refusal comes at once, not after the probe's seconds of training, and the plan says so.
REFERENCE_WPS = 3_900.0
REFERENCE_SOURCE = "the probe's pace on an AMD EPYC with AVX512-BF16 at load average 1.4-1.5"


def _vocab(config: Config) -> int:
    from prelnx.plan.data import data_dir

    folder = data_dir(config)
    names = sorted(folder.glob("dict*.txt")) if folder.is_dir() else []
    if names:
        return max(1, sum(1 for _ in names[-1].open(errors="replace")))
    return config.data.synthetic.vocab_size + 4 if config.data.dataset == "synthetic" else 10_000


def cost_per_token(sizes: dict[str, int], vocab: int) -> float:
    """Weights a token meets: self-attention 4 d^2 and FFN 2 d F per layer; a decoder layer also cross-attends."""
    d, f = sizes["embed_dim"], sizes["ffn_dim"]
    return sizes["encoder_layers"] * (4 * d * d + 2 * d * f) + sizes["decoder_layers"] * (8 * d * d + 2 * d * f) + d * vocab


def _tokens(prefix: Path) -> int:
    """Tokens in a binarized split (data/check.py reads fairseq's .idx); 0 when it is not there."""
    from prelnx.data.check import split_sizes

    sizes = split_sizes(prefix)
    return 0 if sizes is None else int(sizes.sum())


# A dataset's epoch while it is not prepared here: the training pairs of fairseq's prepare-iwslt14.sh (160,239) x
# an assumed ~25 target tokens per pair after BPE; the prepared data's own count replaces it.
ASSUMED_EPOCH = {"iwslt14": (160_239, 25)}


def epoch_tokens(config: Config) -> int | None:
    """Target-side tokens of one epoch (padding not counted); None when the data is not here to count."""
    from prelnx.plan.data import data_dir, languages

    folder = data_dir(config)
    if config.task == "translation":
        source, target = languages(config)
        found = _tokens(folder / f"train.{source}-{target}.{target}")
    else:
        found = _tokens(folder / "train") or _tokens(folder / "input0" / "train")
    if found:
        return found
    if config.data.dataset in ASSUMED_EPOCH:  # not prepared here: planned on its known size, said so in the plan
        pairs, per_pair = ASSUMED_EPOCH[config.data.dataset]
        return pairs * per_pair
    if config.data.dataset != "synthetic":
        return None
    s = config.data.synthetic
    return int(s.train_pairs * ((s.min_words + s.max_words) / 2 + 1))


@dataclass(frozen=True)
class Work:
    updates: int
    tokens: float  # tokens trained
    cost: float  # cost per token (cost_per_token)
    sized: bool = True  # False: its epochs' data is not here to count, each taken as one update (a lower bound)


def work(config: Config) -> Work:
    """The run's updates: the first of max_update and max_epoch epochs of its data to end it (neither: one epoch)."""
    t, epoch = config.train, epoch_tokens(config)
    per_epoch = max(1, math.ceil(epoch / max(1, t.max_tokens))) if epoch else None
    planned = [value for value in (t.max_update, (t.max_epoch or 0) * (per_epoch or 0)) if value]
    n = int(min(planned)) if planned else per_epoch or 1
    per_update = int(t.effective_batch_tokens or t.max_tokens * (t.update_freq or 1))
    return Work(n, float(n * min(per_update, epoch or per_update)), cost_per_token(model_sizes(config), _vocab(config)),
                sized=per_epoch is not None or bool(t.max_update))


@dataclass(frozen=True)
class Probe:
    wps: float  # target tokens per second, one thread, at `cost`
    cost: float
    seconds: float  # the probe's own time
    measured: bool = True  # False: REFERENCE_WPS, no probe ran

    def describe(self) -> str:
        if not self.measured:
            return (f"not measured here (the data is missing, so no probe ran): the demo model at "
                    f"{self.wps:,.0f} target tokens/s on one thread, {REFERENCE_SOURCE}")  # fmt: skip
        load = load_average(1)
        return (f"measured here: the demo model trains {self.wps:,.0f} target tokens/s on one thread "
                f"(a {self.seconds:.0f} s probe of forward+backward steps in this process; load average {load})")


def probe(measured: bool = True, steps: int = 4) -> Probe:
    """A few real training steps of the demo's model on one thread, timed after a warm-up step; not `measured`: the
    probe's answer without the probe, REFERENCE_WPS at the demo model's cost per token."""
    from prelnx.config.load import load_config

    started = time.perf_counter()
    config, _ = load_config(PROBE_CONFIG)
    cost = cost_per_token(model_sizes(config), _vocab(config))
    if not measured:  # a refusal comes at once: neither torch nor fairseq is imported
        return Probe(REFERENCE_WPS, cost, 0.0, measured=False)
    import warnings

    import torch

    from prelnx.launch.inprocess import build_task_and_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # hydra's and torch's deprecation warnings about fairseq's own calls
            cfg, task, model = build_task_and_model(config)
            criterion = task.build_criterion(cfg.criterion)
            task.load_dataset("train", combine=False, epoch=1)
            iterator = task.get_batch_iterator(dataset=task.dataset("train"), max_tokens=config.train.max_tokens,
                                               seed=1, num_workers=0, epoch=1, disable_iterator_cache=True)  # fmt: skip
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
            model.train()
            tokens, clock = 0, 0.0
            for index, sample in zip(range(steps + 1), iterator.next_epoch_itr(shuffle=True)):
                before = time.perf_counter()
                optimizer.zero_grad()
                loss, _, _ = criterion(model, sample)
                loss.backward()
                optimizer.step()
                if index:  # the first step warms up the allocator and kernels
                    clock += time.perf_counter() - before
                    tokens += int(sample["ntokens"])
    finally:
        torch.set_num_threads(threads)
    return Probe(tokens / clock, cost, time.perf_counter() - started)


def cpu_seconds(runs: list[Work], probe: Probe, jobs: int) -> float:
    """Wall seconds of these runs, `jobs` at a time on this machine's cores (each at the probe's one-thread pace,
    at most one run per core; a run with several threads gains ~0.8 per extra thread)."""
    cores = usable_cores()
    lanes = cores if jobs >= cores else jobs + 0.8 * (cores - jobs)
    busy = sum(w.tokens * w.cost / (probe.wps * probe.cost) + STARTUP_S for w in runs)
    return busy / max(1.0, lanes) if runs else 0.0


def gpu_hours(runs: list[Work]) -> float:
    anchor = cost_per_token(TRANSFORMER_BASE, PAPER_GPU_VOCAB)
    return sum(w.tokens * w.cost / (GPU_WPS * anchor) for w in runs) / 3600.0
