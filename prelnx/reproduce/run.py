"""Running a reproduction: each stage in order through the functions behind `prelnx theory`, `grads`, `sweep`,
`evaluate`, `finetune`; a complete stage is marked (stages/<stage>.json, which `prelnx status` reads) and skipped
next time; a stage whose `after` stages are not complete waits for the next attempt. A sweep stage writes its report
when done, the reproduction's report.md comes last (summary.py); a sweep's progress lines end with `Overall`'s text.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prelnx.atomic import write_text_atomic
from prelnx.console import results
from prelnx.eta import at_pace, duration
from prelnx.exits import Exit
from prelnx.machine import load_average, may_have_gpu
from prelnx.records.outcome import RunStatus
from prelnx.records.results import sweep_rows
from prelnx.reproduce.plan import Plan, StagePlan, complete, grad_study, marker, stage_spec
from prelnx.sweep.status import RunStanding, is_sweep_dir, sweep_states

log = logging.getLogger(__name__)


class Overall:
    """The reproduction's progress: stages done, and an ETA from the estimates, calibrated by the stages done."""

    def __init__(self, plan: Plan) -> None:
        todo = [sp for sp in plan.stages if not sp.done and not sp.not_run]
        self.estimated = {sp.stage.name: max(1.0, sp.seconds or sp.gpu_hours * 3600) for sp in todo}
        self.actual: dict[str, float] = {}  # stage -> its wall seconds, once done
        self.current, self.started = "", time.monotonic()  # the stage running, and since when

    def text(self) -> str:
        done = [n for n in self.actual if n in self.estimated]
        ratio = at_pace(sum(self.actual[n] for n in done), sum(self.estimated[n] for n in done), 1.0) or 1.0
        left = [n for n in self.estimated if n not in self.actual and n != self.current]
        seconds = sum(self.estimated[n] for n in left)
        if self.current and self.current not in self.actual:
            seconds += max(0.0, self.estimated[self.current] - (time.monotonic() - self.started) / ratio)
        return (f"reproduce: {len(self.actual)}/{len(self.estimated)} stages done"
                + (f", in {self.current}" if self.current else "") + f" | ETA {duration(seconds * ratio)}")  # fmt: skip


def _choose(sp: StagePlan, plan: Plan) -> str:
    """Make the stage's choice from its premise stages, once (choice.json keeps it for every later attempt). Returns
    why a stage whose rule may choose nothing (Stage.skip_unless_chosen) is not run: its rule chose nothing; else ""."""
    from prelnx.reproduce import choose

    folder = plan.out / sp.stage.name
    if sp.stage.choose and not (folder / choose.CHOICE_FILE).is_file():
        premises = [plan.out / name for name in sp.stage.after]
        if sp.stage.choose == "sgd_lr":
            choice = choose.sgd_lr(premises)
        else:
            by_name = {s.stage.name: s for s in plan.stages}
            choice = choose.bert_scale(premises, [by_name[name].spec.fixed for name in sp.stage.after],
                                       run_anyway=not sp.stage.skip_unless_chosen)
        choice.save(folder)
    return choose.unchosen(folder) if sp.stage.skip_unless_chosen else ""


def _sweep(sp: StagePlan, plan: Plan, overall: Overall | None = None) -> bool:
    from prelnx.report.report import report_after_sweep
    from prelnx.report.sequential import decide_look
    from prelnx.sweep.execute import run_sweep

    _choose(sp, plan)
    spec = stage_spec(sp.stage, plan.seeds, plan.out, plan.scale)
    folder = plan.out / sp.stage.name
    rows = run_sweep(spec, out=folder, jobs=plan.jobs, executor=plan.executor, slurm_options=plan.slurm,
                     progress_also=(lambda _: overall.text()) if overall else None,  # the sweep's lines end with it
                     decide=decide_look)  # a sequential seeds: plan's looks, decided as prelnx sweep decides them
    report_after_sweep(folder)
    return all(RunStatus(row["status"]).done for row in rows)


def _finished_runs(folder: Path) -> list[Path]:
    return [folder / row["run"] for row in sweep_rows(folder) if row["status"] == RunStatus.FINISHED]


def _evaluate(sp: StagePlan, plan: Plan) -> bool:
    """`prelnx evaluate` of every finished run not evaluated yet, --jobs at a time (each its own fairseq process)."""
    from concurrent.futures import ThreadPoolExecutor

    from prelnx.evaluate.evaluate import evaluate
    from prelnx.report.report import report_after_sweep

    def one(run_dir: Path) -> bool:
        try:
            result = evaluate(run_dir, split="test")
        except Exception as error:  # noqa: BLE001 - one run that cannot be decoded must not stop the others
            log.warning(f"{run_dir}: not evaluated ({type(error).__name__}: {error})")
            return False
        log.info(f"{run_dir.name}: test BLEU {result['bleu_tokenized']:.2f} (tokenized), {result['sacrebleu']:.2f} (SacreBLEU)")
        return True

    ok = True
    for name in sp.stage.options["of"]:
        todo = [run for run in _finished_runs(plan.out / name) if not (run / "eval" / "test.json").is_file()]
        with ThreadPoolExecutor(max_workers=max(1, plan.jobs)) as pool:
            ok = all(list(pool.map(one, todo))) and ok
        report_after_sweep(plan.out / name)  # its summary and report now show test BLEU
    return ok


def _finetune(sp: StagePlan, plan: Plan) -> bool:
    from prelnx.config.load import load_config
    from prelnx.finetune.plan import plan as plan_finetunings
    from prelnx.finetune.plan import default_folder, run_all
    from prelnx.report.report import report_after_sweep

    base, _ = load_config(sp.stage.source, list(sp.stage.set))
    seeds = list(range(1, int(sp.stage.options["seeds"]) + 1))
    pretrained = plan.out / sp.stage.options["pretrained"]
    codes = []
    for run_dir in _finished_runs(pretrained):
        folder = default_folder(base, run_dir)
        runs = plan_finetunings(base, run_dir, list(sp.stage.options["checkpoint"]), seeds, folder)
        codes.append(run_all(runs, folder))
    report_after_sweep(pretrained)  # its report now has the fine-tuning section
    return bool(codes) and not any(codes)


def _grads(sp: StagePlan, plan: Plan) -> bool:
    from prelnx.analysis.grads.run import run_study

    run_study(grad_study(sp.stage)[1], plan.out / sp.stage.name)
    return True


def _theory(sp: StagePlan, plan: Plan) -> bool:
    from prelnx.analysis.theory import TheorySettings, run_theory
    from prelnx.report.theory_claims import judge

    o = sp.stage.options
    run_theory(TheorySettings(d=o["d"], layers=o["layers"], seeds=tuple(range(1, o["seeds"] + 1))),
               plan.out / sp.stage.name, judge=judge)  # Lemma 1's verdicts, as `prelnx theory` writes them
    return True


RUNNERS: dict[str, Callable[[StagePlan, Plan], bool]] = {
    "theory": _theory, "grads": _grads, "sweep": _sweep, "configs": _sweep, "evaluate": _evaluate,
    "finetune": _finetune,
}  # fmt: skip


def run_stages(plan: Plan) -> dict[str, str]:
    """Every stage not yet complete, in order; returns stage -> complete | incomplete | waiting | not run | skipped."""
    overall = Overall(plan)
    outcome: dict[str, str] = {}
    for index, sp in enumerate(plan.stages, 1):
        name, head = sp.stage.name, f"== stage {index}/{len(plan.stages)} {sp.stage.name}"
        waiting = [after for after in sp.stage.after if outcome.get(after) != "complete"]
        skipped = [after for after in sp.stage.after if outcome.get(after) == "not run"]
        if sp.done or complete(plan.out, sp):
            outcome[name], why = "complete", "complete in an earlier attempt, skipped"
        elif sp.not_run:
            outcome[name], why = "not run", f"not run ({sp.not_run})"
        elif skipped:
            outcome[name], why = "not run", f"not run (stage {', '.join(skipped)} is not run)"
        elif waiting:
            outcome[name], why = "waiting", f"waits for {', '.join(waiting)} (run again once complete)"
        elif sp.stage.skip_unless_chosen and (reason := _choose(sp, plan)):
            outcome[name], why = "not run", f"not run ({reason})"
        if name in outcome:
            log.info(f"{head}: {why}")
            continue
        overall.current, overall.started = name, time.monotonic()
        started = time.time()
        log.info(f"{head} ({sp.stage.figure}) || {overall.text()}")
        runner = RUNNERS[sp.stage.kind]
        finished = _sweep(sp, plan, overall) if runner is _sweep else runner(sp, plan)
        seconds = overall.actual[name] = time.monotonic() - overall.started
        outcome[name] = "complete" if finished else "incomplete"
        if finished:
            record: dict[str, Any] = {"stage": name, "kind": sp.stage.kind, "figure": sp.stage.figure,
                                      "seconds": round(seconds, 1), "estimated_seconds": round(sp.seconds, 1),
                                      "started": started, "runs": len(sp.runs) if sp.spec else None,
                                      "run_names": sp.runs if sp.spec else None}  # fmt: skip
            write_text_atomic(marker(plan.out, name), json.dumps(record, indent=2) + "\n")
        log.info(f"== stage {name}: {outcome[name]} in {duration(seconds)} || {overall.text()}")
    return outcome


def reproduce(scale: str, out: Path | None = None, *, executor: str = "local", jobs: int = 2,
              seeds: tuple[int, ...] | None = None, slurm: dict[str, Any] | None = None,
              dry_run: bool = False) -> int:
    """`prelnx reproduce`: the plan first (every stage, its runs, its estimate), then the stages, then report.md.
    Returns the exit code: FINISHED every stage complete (or a dry run), FAILED a stage incomplete or waiting.
    Raises PlanError (exit 2) when the scale cannot run here; `executor` is one of launch.Executor (--executor's
    choices)."""
    from prelnx.reproduce.plan import PlanError, check_argv, plan, plan_lines
    from prelnx.reproduce.summary import write_summary

    out = out or Path("runs") / f"reproduce-{scale}"
    the_plan = plan(scale, out, executor=executor, jobs=jobs, seeds=seeds)
    the_plan.slurm = dict(slurm or {})
    lines = plan_lines(the_plan)
    for line in lines:
        results.info(line)
    if the_plan.missing_stages:  # the whole plan is printed first; then one line, exit 2, nothing created
        raise PlanError(f"--scale {scale} cannot run here; nothing was created: the data of stage(s) "
                        f"{', '.join(the_plan.missing_stages)} is missing (MISSING DATA in the plan above: what "
                        "prepares it)")
    if scale == "paper":
        log.info(f"fairseq parsed the argv of all {check_argv(the_plan)} planned trainings")
        if not dry_run and executor == "local" and not may_have_gpu():
            raise PlanError("--scale paper trains on GPUs and this machine has none: plan it with --dry-run, or "
                            "submit it with --executor slurm")  # fmt: skip
    if dry_run:
        return Exit.FINISHED
    write_text_atomic(out / "plan.txt", "\n".join(lines) + f"\n\nload average at the start: {load_average()}\n")
    outcome = run_stages(the_plan)
    report = write_summary(out, scale)
    log.info(f"report: {report}")
    left = {name: state for name, state in outcome.items() if state != "complete"}
    if left:
        log.info("not complete: " + ", ".join(f"{name} ({state})" for name, state in left.items()))
    return Exit.FAILED if any(state in ("incomplete", "waiting") for state in left.values()) else Exit.FINISHED


def is_reproduction(path: Path) -> bool:
    """A `prelnx reproduce` folder: its stage markers, or the plan it writes before its first stage."""
    return (path / "stages").is_dir() or (path / "plan.txt").is_file()


def _begun(path: Path) -> list[tuple[str, bool]]:
    """(stage folder, complete) for every stage that has begun (its folder exists), in name order."""
    return [(folder.name, marker(path, folder.name).is_file()) for folder in sorted(path.iterdir())
            if folder.is_dir() and folder.name != "stages" and not folder.name.startswith(".")]  # fmt: skip


def reproduction_states(path: Path) -> list[RunStanding]:
    """The runs of every sweep stage, each named `<stage>/<run>`."""
    return [state for name, _ in _begun(path) if is_sweep_dir(path / name)
            for state in sweep_states(path / name, prefix=f"{name}/")]  # fmt: skip


def stage_lines(path: Path) -> list[str]:
    begun = _begun(path)
    done = [name for name, finished in begun if finished]
    left = [name for name, finished in begun if not finished]
    return [f"stages: {len(done)} complete" + (f" ({', '.join(done)})" if done else "")
            + (f"; begun, not complete: {', '.join(left)}" if left else "")]  # fmt: skip
