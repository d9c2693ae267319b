"""A scale's stages as they would run here: each stage's runs, its data check and its compute estimate.

Pure: reads configs, data and a reproduction's markers (stages/<stage>.json, <stage>/choice.json); writes nothing
(but the CPU probe's synthetic data cache, when the data is here). Missing data refuses the whole plan (PlanError,
naming what prepares it), unless a user brings it (a corpus): that stage is then planned as not run, with the reason.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prelnx.config.load import find_config, flatten_values, load_config
from prelnx.console import counted
from prelnx.config.schema import Config
from prelnx.config.strict_yaml import read_yaml
from prelnx.eta import duration
from prelnx.exits import Refusal
from prelnx.machine import cpu_bf16_flags, usable_cores
from prelnx.plan.model_sizes import model_sizes
from prelnx.reproduce import estimate
from prelnx.reproduce.scales import PAPER_GPU, SCALES, Stage
from prelnx.sweep.spec import SweepSpec, resolve_spec, with_command_line


class PlanError(Refusal):
    """The scale cannot run here (missing data, a bad option); the message says what to do."""


@dataclass
class StagePlan:
    stage: Stage
    runs: list[str] = field(default_factory=list)  # run names (sweeps), or what is measured
    configs: list[Config] = field(default_factory=list)  # the training configs (sweeps, fine-tunings)
    spec: SweepSpec | None = None  # sweep and configs stages
    work: list[estimate.Work] = field(default_factory=list)
    seconds: float = 0.0  # demo, cpu: estimated wall seconds here
    gpu_hours: float = 0.0  # paper
    not_run: str = ""  # why the stage will not run (its user-brought data is missing)
    note: str = ""  # a choice to be made, a count that depends on an earlier stage
    done: bool = False  # complete in an earlier attempt
    precision: str = ""  # the CPU scale's precision and why
    missing: list[str] = field(default_factory=list)  # the data it needs and lacks here, each with what prepares it


@dataclass
class Plan:
    scale: str
    out: Path
    executor: str
    jobs: int
    seeds: tuple[int, ...] | None  # the arms sweeps' seeds (--seeds), None: each sweep's own
    stages: list[StagePlan]
    pace: str  # how the estimate was made
    slurm: dict[str, Any] = field(default_factory=dict)  # the sweeps' per-run Slurm resources (prelnx sweep's options)

    @property
    def missing_stages(self) -> list[str]:
        """The stages whose data is missing here: the plan is whole, it cannot run yet."""
        return [sp.stage.name for sp in self.stages if sp.missing]


def marker(out: Path, name: str) -> Path:
    """stages/<stage>.json: written when the stage is complete (run.py); its presence skips the stage."""
    return out / "stages" / f"{name}.json"


def read_marker(out: Path, name: str) -> dict[str, Any] | None:
    try:
        return json.loads(marker(out, name).read_text())
    except (OSError, ValueError):
        return None


def complete(out: Path, sp: StagePlan) -> bool:
    """The stage was completed by an earlier attempt with the same runs (another --seeds plans other runs: not
    complete, and its sweep trains only the runs it lacks)."""
    done = read_marker(out, sp.stage.name)
    return done is not None and (sp.spec is None or done.get("run_names", sp.runs) == sp.runs)


def configs_spec(name: str, sources: tuple[str, ...]) -> SweepSpec:
    """Several training configs of one base trained as one sweep: each config's own keys are one grid point."""
    paths = [find_config(source) for source in sources]
    layers = [read_yaml(path) or {} for path in paths]
    bases = {(path.parent / str(data.get("base", ""))).resolve() for path, data in zip(paths, layers)}
    if len(bases) != 1 or any("base" not in data for data in layers):
        raise PlanError(f"{', '.join(sources)}: a configs stage needs configs that share one base: config")
    grids = [{key: [value] for key, value in flatten_values({k: v for k, v in data.items() if k != "base"}).items()}
             for data in layers]  # fmt: skip
    return SweepSpec(name=name, base=bases.pop(), grids=grids)


# bf16 pays on a CPU only with native bf16 and only from the IWSLT14 transformer's size up (issue 33, measured with
# AVX512-BF16 on 2 threads: d 512 / FFN 1024 x2.4 words/s, the demo's d 128 x1.14)
BF16_FROM = {"embed_dim": 512, "ffn_dim": 1024}


def cpu_precision(configs: list[Config]) -> tuple[str, str]:
    """The precision a CPU-scale stage trains in, and why: bf16 where this CPU has native bf16 and every model of
    the stage is at least IWSLT14-sized, fp32 otherwise."""
    if not configs:
        return "fp32", "no runs"
    sizes = [model_sizes(config) for config in configs]
    small = [s for s in sizes if any(s[key] < value for key, value in BF16_FROM.items())]
    if small:
        return "fp32", f"d {small[0]['embed_dim']}, FFN {small[0]['ffn_dim']}: bf16 pays only from d 512 / FFN 1024 up"
    flags = cpu_bf16_flags()
    if not flags:
        return "fp32", "this CPU has no native bf16"
    return "bf16", f"native {', '.join(flags)} and IWSLT14-sized models"


def _looks(spec: SweepSpec) -> list[str]:
    """A sequential stage's looks (docs/sequential.md): seeds per arm and level at each, the first look's runs."""
    plan = spec.plan
    if plan is None or not plan.sequential:
        return []
    levels = ", ".join(f"{counted(n, 'seed')} ({plan.nominal(k):.4f})" for k, n in enumerate(plan.looks))
    order = f", seeds {', '.join(map(str, plan.seeds))} in this order" if plan.seeds else ""
    return [f"looks ({plan.method} spending, one-sided level per side): {levels}{order}; later looks add seeds only "
            f"to the arms an undecided claim reads"]


def sweep_points(spec: SweepSpec) -> list:  # type: ignore[type-arg]
    """Every run a stage's sweep may train: sweep/execute.py's own expansion (named arms to their last look)."""
    from prelnx.sweep.execute import plan_sweep

    return plan_sweep(spec, Path("."))[1]


def stage_spec(stage: Stage, seeds: tuple[int, ...] | None, out: Path, scale: str = "") -> SweepSpec:
    """The sweep a sweep or configs stage runs: its config, the stage's toy-size overrides, --seeds, and the choice
    an earlier premise stage made (when made)."""
    from prelnx.reproduce.choose import read_choice

    listed = seeds if seeds and stage.seeds_grid else None  # --seeds: a seed axis, or an armed spec's fixed plan
    if stage.kind == "configs":
        grid = [f"train.seed={','.join(str(s) for s in listed)}"] if listed else []
        spec = with_command_line(configs_spec(stage.name, stage.sources), grid, list(stage.set), stage.name)
    else:
        spec = resolve_spec(find_config(stage.source), [], list(stage.set), stage.name, listed)
    if scale == "cpu" and cpu_precision([p.config for p in sweep_points(spec)])[0] == "bf16":
        spec.fixed["train.precision"] = "bf16"
    choice = read_choice(out / stage.name) if stage.choose else None
    return choice.apply(spec) if choice is not None else spec


def _lacks(sp: StagePlan, *problems: str | None) -> None:
    """The stage's data problems: a user-brought corpus's make it not run; others refuse the plan (what prepares it)."""
    found = [problem for problem in problems if problem]
    if found and sp.stage.optional_data:
        sp.not_run = f"needs {sp.stage.optional_data}: " + "; ".join(found)
    else:
        prepare = f" Prepare it with: {sp.stage.prepare}" if sp.stage.prepare else ""
        sp.missing += [problem + prepare for problem in found]


def _sweep_plan(sp: StagePlan, seeds: tuple[int, ...] | None, out: Path, scale: str) -> None:
    from prelnx.sweep.execute import data_problems, launch_problems

    spec = stage_spec(sp.stage, seeds, out, scale)
    points = sweep_points(spec)  # an armed spec: every arm to its plan's last look (the most it can cost)
    sp.spec, sp.runs, sp.configs = spec, [p.name for p in points], [p.config for p in points]
    sp.work = [estimate.work(config) for config in sp.configs]
    if scale == "cpu":
        sp.precision = "%s (%s)" % cpu_precision(sp.configs)
    _lacks(sp, *data_problems(points), *launch_problems(points))
    if sp.stage.choose:
        from prelnx.reproduce.choose import CHOICE_FILE, unchosen

        made = (out / sp.stage.name / CHOICE_FILE).is_file()
        sp.note = (f"{sp.stage.choose} chosen from {', '.join(sp.stage.after)} by the committed rule"
                   if not made else "choice made (choice.json)")  # fmt: skip
        if sp.stage.skip_unless_chosen:
            sp.not_run = unchosen(out / sp.stage.name)
            sp.note += "" if made else "; if it chooses nothing, this stage and those after it are not run"


def grad_study(stage: Stage) -> tuple[Config, Any]:
    """A grads stage's config and the GradStudy `prelnx grads` would make of it and the stage's options."""
    from prelnx.analysis.grads.study import GradStudy

    config, _ = load_config(stage.source, list(stage.set))
    return config, GradStudy.from_options(config, **stage.options)


def _grads_plan(sp: StagePlan) -> None:
    from prelnx.plan.data import data_problem

    config, study = grad_study(sp.stage)
    sp.runs = [f"{', '.join(study.layouts)} x depths {', '.join(map(str, study.depths))} x "
               f"{counted(len(study.seeds), 'seed')}"]
    _lacks(sp, data_problem(config))
    for depth in study.depths:
        sized = load_config(sp.stage.source, [*sp.stage.set, f"model.encoder_layers={depth}",
                                              f"model.decoder_layers={depth}"])[0]  # fmt: skip
        cost = estimate.cost_per_token(model_sizes(sized), 10_000)
        models = len(study.layouts) * len(study.seeds)
        sp.work.append(estimate.Work(models, models * study.batches * study.tokens_per_batch(), cost))


def _finetune_plan(sp: StagePlan, plans: dict[str, StagePlan]) -> None:
    from prelnx.plan.data import data_problem

    config, _ = load_config(sp.stage.source, list(sp.stage.set))
    pretrained = plans[sp.stage.options["pretrained"]]
    seeds, which = int(sp.stage.options["seeds"]), sp.stage.options["checkpoint"]
    per_run = len(which)
    if "stages" in which and pretrained.configs:
        t = pretrained.configs[0].train
        per_run = max(1, (t.max_update or 0) // (t.keep_every_updates or t.max_update or 1))
    sp.runs = [f"{len(pretrained.runs)} pre-trained run(s) x {per_run} checkpoint(s) ({', '.join(which)}) x {counted(seeds, 'seed')}"]
    # the fine-tuning model is the pre-trained one
    trained = dataclasses.replace(config, model=pretrained.configs[0].model) if pretrained.configs else config
    sp.work = [estimate.work(trained)] * (len(pretrained.runs) * per_run * seeds)
    if pretrained.not_run:
        sp.not_run = f"its pre-training (stage {pretrained.stage.name}) is not run"
    else:
        _lacks(sp, data_problem(config))


def plan(scale: str, out: Path, *, executor: str = "local", jobs: int = 2,
         seeds: tuple[int, ...] | None = None) -> Plan:
    """Every stage of `scale` with its runs and estimate, whether its data is here or not (each StagePlan's
    `missing` says what is missing: the plan comes before the data)."""
    seeds = seeds if seeds is not None else (1,) if scale == "demo" else None  # None: each sweep's own
    plans: dict[str, StagePlan] = {}
    for stage in SCALES[scale]:
        sp = plans[stage.name] = StagePlan(stage)
        if stage.kind in ("sweep", "configs"):
            _sweep_plan(sp, seeds, out, scale)
        elif stage.kind == "grads":
            _grads_plan(sp)
        elif stage.kind == "theory":
            o = stage.options
            sp.runs = [f"d {o['d']}, {counted(o['layers'], 'layer')}, {counted(o['seeds'], 'seed')}"]
            sp.seconds = 10.0 + o["d"] * o["layers"] * o["seeds"] / 2000.0
        elif stage.kind == "evaluate":
            of = [plans[name] for name in stage.options["of"]]
            sp.runs = [f"test BLEU of each finished run of {', '.join(p.stage.name for p in of)} "
                       f"({counted(sum(len(p.runs) for p in of), 'run')})"]  # fmt: skip
            sp.work = [estimate.Work(1, w.tokens / max(1, w.updates) * 4, w.cost) for p in of for w in p.work]
        elif stage.kind == "finetune":
            _finetune_plan(sp, plans)
        sp.done = complete(out, sp)
    if scale == "paper":  # no probe: this CPU says nothing of a GPU
        pace = (f"GPU-hours on one {PAPER_GPU}, fp32, at an assumed {estimate.GPU_WPS:,.0f} target tokens/s for the "
                f"transformer base ({estimate.GPU_SOURCE}), scaled by each model's cost per token; not measured here. "
                f"Theory and gradients run on the CPU of the machine that runs prelnx")  # fmt: skip
        for sp in plans.values():
            if sp.stage.kind not in ("theory", "grads"):
                sp.gpu_hours = estimate.gpu_hours(sp.work)
        if any(sp.missing for sp in plans.values()):
            pace += (". Data not prepared here: an epoch of " + ", ".join(
                f"{name} assumed {pairs:,} pairs x ~{per} target tokens" for name, (pairs, per)
                in estimate.ASSUMED_EPOCH.items()) + " until it is")  # fmt: skip
    else:  # a plan its missing data refuses is estimated without the probe's seconds of training
        probe = estimate.probe(measured=not any(sp.missing for sp in plans.values()))
        pace = (f"{probe.describe()}; scaled by each model's cost per token, "
                f"{counted(min(jobs, usable_cores()), 'run')} at "
                f"a time, + {estimate.STARTUP_S:.0f} s start-up per run; validation and BLEU decoding come on top")
        for sp in plans.values():
            if sp.work:
                sp.seconds = estimate.cpu_seconds(sp.work, probe, jobs if sp.stage.kind in ("sweep", "configs") else 1)
    return Plan(scale, out, executor, jobs, seeds, list(plans.values()), pace)


def _cost(sp: StagePlan, scale: str) -> str:
    if sp.done:
        return "done"
    if sp.gpu_hours:
        return f"~{sp.gpu_hours:,.1f} GPU-h" + (" if run" if sp.not_run else "")
    if sp.not_run:
        return "not run"
    if scale == "paper":
        return "CPU" + (f" ~{duration(sp.seconds)}" if sp.seconds else ", not timed")
    return ("at least " if any(not w.sized for w in sp.work) else "") + f"~{duration(sp.seconds)}"


def plan_lines(p: Plan) -> list[str]:
    """What `prelnx reproduce --dry-run` prints, and the first screen of a real run."""
    seeds = f", seeds {','.join(map(str, p.seeds))} per arm" if p.seeds else ", each sweep's own seeds"
    lines = [f"prelnx reproduce --scale {p.scale} -> {p.out} ({p.executor}, {p.jobs} at a time{seeds})",
             f"estimate: {p.pace}", ""]  # fmt: skip
    cells = [(sp.stage.name, sp.stage.figure, _cost(sp, p.scale)) for sp in p.stages]
    name, figure, cost = (max((len(row[i]) for row in cells), default=0) for i in range(3))  # columns as wide as need
    for index, sp in enumerate(p.stages, 1):
        s = sp.stage
        after = f" (after {', '.join(s.after)})" if s.after else ""
        what = s.source or ", ".join(s.sources) or s.kind
        lines.append(f"{index:2d}. {s.name:<{name}} {s.figure:<{figure}} {_cost(sp, p.scale):>{cost}}   "
                     f"{s.kind}: {what}{after}")
        if s.set:
            lines.append(f"      set: {' '.join(s.set)}")
        if sp.spec is not None:
            most = "at most " if sp.spec.plan is not None and sp.spec.plan.sequential else ""
            lines.append(f"      {most}{counted(len(sp.runs), 'run')}: "
                         f"{', '.join(sp.runs[:6])}{', ...' if len(sp.runs) > 6 else ''}")
            lines += [f"      {line}" for line in _looks(sp.spec)]
            lines.append(f"      precision: {sp.precision or ', '.join(sorted({c.train.precision for c in sp.configs}))}")
        else:
            lines += [f"      {run}" for run in sp.runs]
        if sp.note:
            lines.append(f"      {sp.note}")
        if sp.not_run:
            lines.append(f"      not run: {sp.not_run}")
        lines += [f"      MISSING DATA: {problem}" for problem in sp.missing]
        if p.executor == "slurm" and sp.spec is not None and not sp.not_run and not sp.done:
            lines.append(f"      Slurm: would submit {counted(len(sp.runs), 'job')} (a submitit array, one run per job; "
                         f"resources from the spec's slurm: or prelnx sweep's defaults)")  # fmt: skip
    todo = [sp for sp in p.stages if not sp.done and not sp.not_run]
    if p.scale == "paper":
        lines += ["", f"total: ~{sum(sp.gpu_hours for sp in todo):,.1f} GPU-hours on {PAPER_GPU} (the stages not run "
                      f"excluded), and the CPU stages (theory, gradients)"]  # fmt: skip
    else:
        low = any(not w.sized for sp in todo for w in sp.work)  # a stage's data not here: an epoch read as one update
        lines += ["", f"total: {'at least ' * low}~{duration(sum(sp.seconds for sp in todo))} of training here"
                  + (" (the epochs of data not prepared here counted as one update each)" if low else "")]
    return lines  # missing data: reproduce's refusal, after these lines, names the stages


def check_argv(p: Plan) -> int:
    """Parse every planned training's fairseq-train argv with fairseq's own parser (the paper's GPU runs are never
    started here: this is what proves their commands). Returns how many were parsed; raises PlanError."""
    from prelnx.launch.inprocess import load_plugin
    from prelnx.plan.launch import plan_run

    load_plugin()
    from fairseq import options

    count = 0
    for sp in p.stages:
        for name, config in zip(sp.runs, sp.configs if sp.spec is not None else []):
            argv = plan_run(config, p.out / sp.stage.name / name).launch.argv
            try:
                options.parse_args_and_arch(options.get_training_parser(), argv)
            except SystemExit:
                raise PlanError(f"stage {sp.stage.name}, run {name}: fairseq refused its argv: {' '.join(argv)}") from None
            count += 1
    return count
