"""What each scale of `prelnx reproduce` runs: the one owner of the scale -> stages table.

A scale is a list of stages, in order, over EXISTING configs (a stage adds only toy-size overrides, `set`). Kinds,
each the `prelnx <command>` it reuses: theory, grads, sweep, configs (several training configs as one sweep),
evaluate (each finished run of the stages in `of`), finetune (each finished run of `pretrained`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Stage:
    name: str  # its folder under the reproduction's folder
    kind: str  # one of the kinds above (reproduce/run.py's RUNNERS runs each)
    figure: str  # what of the paper it reproduces (the report's section)
    source: str = ""  # the config (sweep spec, grads config, fine-tuning config) it runs, a name under configs/
    sources: tuple[str, ...] = ()  # kind configs: the training configs
    after: tuple[str, ...] = ()  # stages that must be complete first
    set: tuple[str, ...] = ()  # KEY=VALUE overrides for every run (toy size)
    options: dict[str, Any] = field(default_factory=dict)  # kind-specific: theory/grads settings, evaluate's `of`
    choose: str = ""  # a rule of choose.py applied to the `after` premise stage(s) before this stage runs
    seeds_grid: bool = False  # --seeds N sets train.seed to 1..N on every run of this stage
    optional_data: str = ""  # data a user brings (a corpus): missing, the stage is not run (said why), not refused
    prepare: str = ""  # the command that prepares this stage's data, when the data check's own words do not say it
    # its `choose` rule may choose nothing (a protocol's premise not met): the stage is then not run, said why, nor is
    # any stage after it, and its claims are "not testable at this scale" with the premise stage's runs as evidence
    skip_unless_chosen: bool = False


# The demo's translation runs: the CPU study's sweeps on the offline synthetic task, at half the width (d 64, as
# configs/sweeps/warmup_free.yaml), 3 short epochs (~150 updates).
TOY_NMT = ("data.dataset=synthetic", "data.path=null", "data.source_lang=null", "data.target_lang=null",
           "eval.bleu.remove_bpe=null", "model.embed_dim=64", "model.ffn_dim=256", "train.max_epoch=3")  # fmt: skip
TOY_BERT = ("train.max_update=160", "eval.every_updates=40", "train.log_interval=40")  # > the Post-LN arm's 150 warm-up
TOY_BERT_PREMISE = ("train.max_update=60", "eval.every_updates=20", "train.log_interval=20")

_CPU_STUDY = "bash scripts/prepare_cpu_study.sh   (Multi30k De-En, 8k pairs; docs/reproduce.md)"


def _nmt(set_: tuple[str, ...], prepare: str, test_bleu: bool = True) -> list[Stage]:
    return [
        Stage("nmt_premise", "sweep", "Figure 2b premise (SGD's lr)", "sweeps/cpu_multi30k_sgd_premise2.yaml",
              set=set_, prepare=prepare),
        Stage("nmt", "sweep", "Figures 2a, 2b, 4", "sweeps/cpu_multi30k.yaml", after=("nmt_premise",), set=set_,
              choose="sgd_lr", seeds_grid=True, prepare=prepare),
        *([Stage("nmt_test_bleu", "evaluate", "Test BLEU of each translation arm", after=("nmt",),
                 options={"of": ["nmt"]})] if test_bleu else []),
    ]  # fmt: skip


def _bert_premise_d128(set_: tuple[str, ...]) -> Stage:
    return Stage("bert_premise_d128", "sweep", "Figure 5a premise (d 128)", "sweeps/bert_cpu_premise_d128.yaml",
                 set=set_)


def _finetune(set_: tuple[str, ...], seeds: int) -> Stage:
    return Stage("finetune", "finetune", "Figures 5b/c", "bert_cpu/finetune_synthetic.yaml", after=("bert",), set=set_,
                 options={"pretrained": "bert", "checkpoint": ["best"], "seeds": seeds})


def _bert(premise_set: tuple[str, ...], set_: tuple[str, ...], finetune_set: tuple[str, ...], seeds: int) -> list[Stage]:
    return [
        _bert_premise_d128(premise_set),
        Stage("bert_premise_d256", "sweep", "Figure 5a premise (d 256)", "sweeps/bert_cpu_premise_d256.yaml",
              set=premise_set),
        Stage("bert", "sweep", "Figure 5a", "sweeps/bert_cpu.yaml", after=("bert_premise_d128", "bert_premise_d256"),
              set=set_, choose="bert_scale"),
        _finetune(finetune_set, seeds),
    ]  # fmt: skip


SCALES: dict[str, list[Stage]] = {
    # every stage at toy size, offline, on 2 cores (<= 25 min): a smoke reproduction, not a test of the claims
    "demo": [
        Stage("theory", "theory", "Section 3.3 (Lemmas 1-2)", options={"d": 128, "layers": 6, "seeds": 3}),
        Stage("grads", "grads", "Figure 3", "grads/figure3_synthetic.yaml",
              options={"quick": True, "depths": (6, 10), "max_tokens": 512}),
        *_nmt(TOY_NMT, ""),
        *_bert(TOY_BERT_PREMISE, TOY_BERT, ("train.max_update=30", "train.max_epoch=2"), 1),
    ],
    # the protocol's studies, in its order (docs/protocols/paper_cpu.md: C, B, B2, A0, A, E, F, G, H, D1, D2's rule; hours on
    # 2 cores; Multi30k must be prepared)
    "cpu": [
        Stage("theory", "theory", "Section 3.3 (Lemmas 1-2)", options={"d": 512, "layers": 12, "seeds": 10}),
        Stage("grads", "grads", "Figure 3", "grads/figure3_multi30k.yaml", options={}, prepare=_CPU_STUDY),
        Stage("grads_b2", "grads", "Figure 3c replicated (study B2)", "grads/figure3_multi30k.yaml",
              options={"layouts": ("pre",), "seeds": tuple(range(11, 31))}, prepare=_CPU_STUDY),
        *_nmt((), _CPU_STUDY, test_bleu=False),  # A0, A (no claim reads test BLEU: docs/reproduce.md)
        Stage("nmt_faster", "sweep", "Figure 4, faster (study E)", "sweeps/cpu_multi30k_faster.yaml",
              prepare=_CPU_STUDY),  # no seeds_grid: --seeds never replaces its fresh seeds 9-16
        Stage("nmt_sgd_long", "sweep", "Figure 2b, 552 updates (study F)", "sweeps/cpu_multi30k_sgd_long.yaml",
              prepare=_CPU_STUDY),  # A7, A8 at 552 updates, SGD's lr as its protocol fixed it (0.03); seeds 9-16
        Stage("nmt_short_g", "sweep", "Figure 2a's short warm-up, fresh seeds (study G)",
              "sweeps/cpu_multi30k_short_g.yaml", prepare=_CPU_STUDY),  # A2, A5, A6; seeds 17-34, looks 6/12/18
        Stage("nmt_short_h", "sweep", "Figure 2a's short warm-up at the paper's ratio (study H)",
              "sweeps/cpu_multi30k_short_h.yaml", prepare=_CPU_STUDY),  # 15 of 120 warm-up; seeds 35-52, looks 6/12/18
        _bert_premise_d128(()),  # D1; D2 below runs only if D1's rule chooses an lr (protocol, 2026-12-05 02:40 UTC)
        Stage("bert", "sweep", "Figure 5a", "sweeps/bert_cpu.yaml", after=("bert_premise_d128",), choose="bert_scale",
              skip_unless_chosen=True),
        _finetune((), 3),
    ],
    # the paper's own configs, on GPUs (local or Slurm): planned and checked here, never run on a CPU
    "paper": [
        Stage("theory", "theory", "Section 3.3 (Lemmas 1-2)", options={"d": 512, "layers": 12, "seeds": 10}),
        Stage("grads", "grads", "Figure 3", "grads/figure3_iwslt14.yaml", options={}),
        Stage("fig2", "sweep", "Figures 2a, 2b", "sweeps/iwslt14_fig2.yaml", seeds_grid=True),
        Stage("fig4", "sweep", "Figure 4", "sweeps/iwslt14_fig4.yaml", seeds_grid=True),
        Stage("test_bleu", "evaluate", "Test BLEU of each translation arm", after=("fig2", "fig4"),
              options={"of": ["fig2", "fig4"]}),
        Stage("bert", "configs", "Figure 5a", sources=("bert/postln_warmup.yaml", "bert/preln_nowarmup.yaml"),
              seeds_grid=True, optional_data="a pre-training corpus"),
        Stage("finetune", "finetune", "Figures 5b/c", "bert/finetune_mrpc.yaml", after=("bert",),
              options={"pretrained": "bert", "checkpoint": ["stages"], "seeds": 5}, optional_data="GLUE's MRPC"),
    ],  # fmt: skip
}

# Which stage's runs each family of the paper's claims is decided on (the report's claims table).
CLAIM_STAGES = {"training": ("nmt", "fig2", "fig4"), "bert": ("bert",), "gradients": ("grads",)}

# What the paper's GPU-scale stages assume (estimate.py), stated where the plan prints them.
PAPER_GPU = "NVIDIA V100"


Scale = enum.StrEnum("Scale", {name.upper(): name for name in SCALES})  # --scale's choices, from the one table
