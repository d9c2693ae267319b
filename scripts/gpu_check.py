"""The GPU check (scripts/gpu_check.sh): what prelnx does on one GPU, in one command of at most ~8 minutes.

Checks, one line each, all in one JSON file (--out, default gpu_check.json):
- train/<post|pre>/<fp32|fp16|bf16>: `prelnx train` of the paper's IWSLT14 model (configs/iwslt14, d 512, FFN 1024,
  4 heads) on the synthetic task for --updates updates: status and fairseq's words/s;
- plain/pre/<precision>: the same run's command.txt as plain `fairseq-train`: words/s and the ratio prelnx / plain;
- sweep/2 runs sharing the GPU: `prelnx sweep --jobs 2` of two seeds: both finished, their summed words/s;
- torchrun/1 worker: the Pre-LN fp32 command under `torchrun --standalone --nproc-per-node 1`;
- evaluate/pre fp32: `prelnx evaluate` of the Pre-LN fp32 run on the GPU: BLEU.
Without a GPU, or with --dry-run, it checks its own plan instead and trains nothing: every check's config loads
and validates with its real settings (device cuda, its precision); its GPU fairseq-train arguments are accepted
by fairseq's own parser; and `prelnx train --dry-run` / `prelnx sweep --dry-run` plan each run end to end on this
machine (device cpu, fp32 standing in for the GPU's precisions). Exit 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYOUTS = {"post": "configs/iwslt14/postln_warmup.yaml", "pre": "configs/iwslt14/preln_nowarmup.yaml"}
PRECISIONS = ("fp32", "fp16", "bf16")
PRECISION_FLAG = {"fp32": None, "fp16": "--fp16", "bf16": "--bf16"}


@dataclass
class Result:
    name: str
    ok: bool
    detail: str
    numbers: dict = field(default_factory=dict)


def run_sets(updates: int) -> list[str]:
    """The paper's IWSLT14 model on the synthetic task, for a fixed number of updates, no BLEU during training."""
    return ["data.dataset=synthetic", "data.path=null", "eval.bleu.remove_bpe=null", f"train.max_update={updates}",
            "train.max_epoch=1000", "eval.bleu.enabled=false", "train.keep_last_epochs=1",
            "train.log_interval=50"]  # fmt: skip


def prelnx(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prelnx.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def with_sets(sets: list[str]) -> list[str]:
    return [item for value in sets for item in ("--set", value)]


def final_wps(log: str) -> float | None:
    from bench_runner import fairseq_records  # scripts/ is on the path when this script runs

    values = [record["train_wps"] for record in fairseq_records(log, "train") if "train_wps" in record]
    return float(values[-1]) if values else None


def command_line(command_file: str) -> str:
    """The plain command of a command.txt: its one line that is not a `#` comment (the batch's make-up is one)."""
    [line] = [line for line in command_file.splitlines() if line.strip() and not line.startswith("#")]
    return line


def plain(command: str, save_dir: Path, launcher: list[str] | None = None) -> tuple[int, str, float]:
    """command.txt's fairseq-train (or under `launcher`) with its checkpoints in save_dir: exit code, log, seconds."""
    env_part, _, fairseq_part = command_line(command).partition(" fairseq-train ")
    argv = shlex.split(fairseq_part)
    argv[argv.index("--save-dir") + 1] = str(save_dir)
    env = dict(os.environ, **dict(item.split("=", 1) for item in shlex.split(env_part)))
    program = [sys.executable, "-m", "torch.distributed.run", *launcher] if launcher else [sys.executable]
    started = time.monotonic()
    done = subprocess.run([*program, "-m", "fairseq_cli.train", *argv], env=env, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


class Printed(list):
    """The checks' results, each printed as it comes (a check that outlives its time limit leaves the earlier ones)."""

    def append(self, result: Result) -> None:
        print(f"{'ok  ' if result.ok else 'FAIL'} {result.name}: {result.detail}", flush=True)
        super().append(result)


def gpu_checks(updates: int, work: Path, quick: bool = False) -> list[Result]:
    """Every check; `quick`: Pre-LN's fp32 and bf16 trainings, plain fp32 and the evaluation only."""
    results, wps = Printed(), {}
    precisions = ("fp32", "bf16") if quick else PRECISIONS
    for layout, config in LAYOUTS.items():
        if quick and layout != "pre":
            continue
        for precision in precisions:
            run_dir = work / f"{layout}-{precision}"
            sets = run_sets(updates) + ["train.device=cuda", f"train.precision={precision}"]
            started = time.monotonic()
            done = prelnx("train", "--config", config, "--run-dir", str(run_dir), *with_sets(sets))
            seconds = time.monotonic() - started
            log = (run_dir / "train.log").read_text() if (run_dir / "train.log").exists() else ""
            wps[layout, precision] = final_wps(log)
            ok = done.returncode == 0 and wps[layout, precision] is not None
            detail = (f"{wps[layout, precision]:.0f} wps, {seconds:.0f} s" if ok
                      else f"exit {done.returncode}: {(done.stderr or log).strip()[-300:]}")  # fmt: skip
            results.append(Result(f"train/{layout}/{precision}", ok, detail,
                                  {"wps": wps[layout, precision], "seconds": round(seconds, 1)}))  # fmt: skip
    for precision in precisions[:1] if quick else PRECISIONS:
        run_dir = work / f"pre-{precision}"
        if not (run_dir / "command.txt").exists():
            results.append(Result(f"plain/pre/{precision}", False, "no command.txt (the prelnx run failed)"))
            continue
        code, log, seconds = plain((run_dir / "command.txt").read_text().strip(), work / f"plain-{precision}")
        plain_wps, ours = final_wps(log), wps["pre", precision]
        ok = code == 0 and plain_wps is not None and ours is not None
        ratio = ours / plain_wps if ok else None
        detail = f"plain {plain_wps:.0f} wps, prelnx/plain {ratio:.3f}" if ok else f"exit {code}: {log.strip()[-300:]}"
        results.append(Result(f"plain/pre/{precision}", ok, detail, {"wps": plain_wps, "ratio": ratio}))
    if not quick:
        results.append(sweep_check(updates, work))
        results.append(torchrun_check(work))
    results.append(evaluate_check(work))
    return results


def sweep_check(updates: int, work: Path) -> Result:
    started = time.monotonic()
    done = prelnx("sweep", "--config", LAYOUTS["pre"], "--grid", "train.seed=1,2", "--jobs", "2", "--out",
                  str(work / "sweep"), *with_sets(run_sets(updates) + ["train.device=cuda"]))  # fmt: skip
    seconds = time.monotonic() - started
    logs = sorted((work / "sweep").glob("*/train.log"))
    rates = [final_wps(path.read_text()) for path in logs]
    ok = done.returncode == 0 and len(rates) == 2 and None not in rates
    detail = (f"2 runs at once: {rates[0]:.0f} + {rates[1]:.0f} = {sum(rates):.0f} wps, {seconds:.0f} s" if ok
              else f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")  # fmt: skip
    return Result("sweep/2 runs sharing the GPU", ok, detail, {"wps": rates if ok else None,
                                                               "seconds": round(seconds, 1)})  # fmt: skip


def torchrun_check(work: Path) -> Result:
    command = work / "pre-fp32" / "command.txt"
    if not command.exists():
        return Result("torchrun/1 worker", False, "no command.txt (the Pre-LN fp32 run failed)")
    code, log, seconds = plain(command.read_text().strip(), work / "torchrun",
                               ["--standalone", "--nproc-per-node", "1", "--max-restarts", "0"])  # fmt: skip
    rate = final_wps(log)
    ok = code == 0 and rate is not None
    detail = f"{rate:.0f} wps, {seconds:.0f} s" if ok else f"exit {code}: {log.strip()[-300:]}"
    return Result("torchrun/1 worker", ok, detail, {"wps": rate})


def evaluate_check(work: Path) -> Result:
    run_dir = work / "pre-fp32"
    done = prelnx("evaluate", str(run_dir), "--split", "test", "--checkpoint", "last")
    scores = run_dir / "eval" / "test.json"
    ok = done.returncode == 0 and scores.exists()
    found = json.loads(scores.read_text()) if ok else {}
    detail = (f"{', '.join(f'{key} {value}' for key, value in found.items() if 'bleu' in key.lower())}" if ok
              else f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")  # fmt: skip
    return Result("evaluate/pre fp32", ok, detail or "evaluated", {})


def plan_checks(updates: int, work: Path) -> list[Result]:
    """Without a GPU: every check's config validates with its real settings, fairseq accepts its GPU arguments,
    and prelnx plans each run and the sweep on this machine (device cpu, fp32)."""
    from fairseq import options

    from prelnx.config.load import load_config
    from prelnx.plan.data import data_dir
    from prelnx.plan.launch import fairseq_argv

    sys.argv = [sys.argv[0]]  # fairseq's parser reads the user dir from here too
    results = []
    for layout, config_path in LAYOUTS.items():
        here = prelnx("train", "--config", config_path, "--dry-run", "--run-dir", str(work / layout),
                      *with_sets(run_sets(updates) + ["train.device=cpu", "train.precision=fp32"]))  # fmt: skip
        for precision in PRECISIONS:
            name = f"train/{layout}/{precision}"
            try:
                sets = run_sets(updates) + ["train.device=cuda", f"train.precision={precision}"]
                config, _ = load_config(REPO / config_path, sets)
                argv = fairseq_argv(config, data_dir(config), work / layout / "checkpoints", cuda=True)
                args = options.parse_args_and_arch(options.get_training_parser(), argv)
                flag = PRECISION_FLAG[precision]
                assert "--cpu" not in argv and (flag is None or flag in argv), f"precision flags: {argv}"
                assert args.encoder_embed_dim == 512 and args.encoder_ffn_embed_dim == 1024, "not the IWSLT14 model"
                assert args.encoder_normalize_before == (layout == "pre"), "wrong layout"
            except (Exception, SystemExit) as error:  # noqa: BLE001 (every failure is this check's result)
                results.append(Result(name, False, f"plan refused: {error}"))
                continue
            ok = here.returncode == 0 and "fairseq-train" in here.stdout
            detail = (f"planned (fairseq accepts the GPU arguments{', ' + flag if flag else ''}; prelnx train "
                      f"--dry-run here: exit 0)" if ok else
                      f"prelnx train --dry-run: exit {here.returncode}: {here.stderr.strip()[-300:]}")  # fmt: skip
            results.append(Result(name, ok, detail))
    for precision in PRECISIONS:
        results.append(Result(f"plain/pre/{precision}", True, "planned: the train check's command.txt, plain"))
    sweep = prelnx("sweep", "--config", LAYOUTS["pre"], "--grid", "train.seed=1,2", "--out", str(work / "sweep"),
                   "--dry-run", *with_sets(run_sets(updates) + ["train.device=cpu"]))  # fmt: skip
    detail = f"prelnx sweep --dry-run: exit {sweep.returncode} {sweep.stderr.strip()[-300:]}".strip()
    results.append(Result("sweep/2 runs sharing the GPU", sweep.returncode == 0, detail))
    launcher = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--help"], capture_output=True, text=True)
    results.append(Result("torchrun/1 worker", launcher.returncode == 0,
                          f"torchrun --help: exit {launcher.returncode}"))  # fmt: skip
    evaluate = prelnx("evaluate", "--help")
    results.append(Result("evaluate/pre fp32", evaluate.returncode == 0,
                          f"prelnx evaluate --help: exit {evaluate.returncode}"))  # fmt: skip
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="check the plan only; train nothing")
    parser.add_argument("--updates", type=int, default=300, help="updates per training run")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--quick", action="store_true",
                        help="Pre-LN fp32 and bf16, plain fp32 and evaluate only (a short device lease)")
    args = parser.parse_args()
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    dry_run = args.dry_run or gpu is None
    print(f"GPU: {gpu}" if gpu else "no GPU visible to torch: checking the plan only (--dry-run), training nothing",
          flush=True)  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpu_check.") as folder:
        if dry_run:
            results = plan_checks(args.updates, Path(folder))
            for result in results:
                print(f"{'ok  ' if result.ok else 'FAIL'} {result.name}: {result.detail}")
        else:
            results = gpu_checks(args.updates, Path(folder), args.quick)
    report = {"gpu": gpu, "dry_run": dry_run, "updates": args.updates, "seconds": round(time.monotonic() - started, 1),
              "torch": torch.__version__, "checks": [vars(result) for result in results]}  # fmt: skip
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{sum(r.ok for r in results)}/{len(results)} checks passed in {report['seconds']:.0f} s; wrote {args.out}")
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
