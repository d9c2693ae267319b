"""fp32 vs bf16 (the plugin's CPU autocast) words/s: the demo's model and the paper's IWSLT14 dimensions.

Alternates fp32 and bf16 (fp32 bf16 fp32 bf16 ...) of the same config for the same number of updates, each the plain
`fairseq-train` command prelnx plans (what command.txt runs, threads from OMP_NUM_THREADS, default 2), and prints
fairseq's own words/s (target tokens/s of the run's final `train` record), the per-pair ratios bf16/fp32 and their
median, with the load average (`uptime`) before and after. The plain command is not refused on a CPU without native
bf16 (prelnx train is): there it measures emulated bf16, and the script says so.
With --pinned it also trains the pinned-loss test's config (tests/run/test_pinned_loss.py) in both precisions and
prints the valid losses beside the pinned ones.

    OMP_NUM_THREADS=2 python scripts/bench_precision.py [--updates 20] [--repeats 2] [--dims demo,iwslt14] [--pinned]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prelnx.config.load import load_config
from prelnx.machine import cpu_bf16_flags
from prelnx.launch.prepare import ensure_data
from prelnx import child_report
from prelnx.plan.launch import fairseq_argv, fairseq_program

DEMO = Path("configs/demo/preln_nowarmup.yaml")
DIMS = {  # the demo's model (d 128, FFN 512), and the paper's IWSLT14 transformer (d 512, FFN 1024, 4 heads)
    "demo": [],
    "iwslt14": ["model.embed_dim=512", "model.ffn_dim=1024", "model.attention_heads=4"],
}


def plain_run(config_path: Path, overrides: list[str], precision: str, save_dir: Path) -> list[tuple[str, dict]]:
    """The plain fairseq-train command of the config in `precision`, on CPU, through prelnx's child entry (fairseq's
    program, reporting its records as events); its records (tag, values)."""
    config, _ = load_config(config_path, [*overrides, f"train.precision={precision}", "train.device=cpu"])
    argv = fairseq_argv(config, ensure_data(config), save_dir, cuda=False)
    threads = os.environ.get("OMP_NUM_THREADS", "2")
    env = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    done = subprocess.run([sys.executable, *fairseq_program("fairseq_cli.train"), *argv], env=env, capture_output=True,
                          text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{precision}: fairseq-train failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    events = map(child_report.parse, done.stdout.splitlines())
    return [(event.tag, event.stats) for event in events if isinstance(event, child_report.Stats)]


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def speed(dims: str, updates: int, repeats: int, work: Path) -> None:
    overrides = DIMS[dims] + [f"train.max_update={updates}", "train.max_epoch=100", "eval.bleu.enabled=false",
                              "train.keep_last_epochs=0", "train.log_interval=5"]  # fmt: skip
    wps: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for repeat in range(repeats):
        for precision in ("fp32", "bf16"):
            started = time.monotonic()
            records = plain_run(DEMO, overrides, precision, work / f"{dims}-{precision}-{repeat}")
            wps[precision].append(float([r for kind, r in records if kind == "train"][-1]["train_wps"]))
            print(f"  {dims} {precision}: {wps[precision][-1]:.0f} wps ({time.monotonic() - started:.0f} s wall with "
                  f"start-up and validation; {load()})", flush=True)  # fmt: skip
        print(f"{dims} pair {repeat + 1}: fp32 {wps['fp32'][-1]:.0f} wps | bf16 {wps['bf16'][-1]:.0f} wps | "
              f"ratio {wps['bf16'][-1] / wps['fp32'][-1]:.2f}", flush=True)  # fmt: skip
    ratios = [b / f for f, b in zip(wps["fp32"], wps["bf16"])]
    print(f"{dims}: median fp32 {statistics.median(wps['fp32']):.0f} wps, bf16 {statistics.median(wps['bf16']):.0f} "
          f"wps; bf16/fp32 median of pairs {statistics.median(ratios):.2f}", flush=True)  # fmt: skip


def matmul() -> None:
    """One (2048 x 512) @ (512 x 512) matmul in fp32 and bf16, alternated: what the CPU itself does with bf16."""
    import torch

    times: dict[torch.dtype, list[float]] = {torch.float32: [], torch.bfloat16: []}
    a, w = torch.randn(2048, 512), torch.randn(512, 512)
    for _ in range(3):
        for dtype in times:
            x, y = a.to(dtype), w.to(dtype)
            started = time.perf_counter()
            x @ y
            times[dtype].append(time.perf_counter() - started)
    fp32, bf16 = (statistics.median(times[dtype]) * 1000 for dtype in times)
    print(f"matmul 2048x512x512: fp32 {fp32:.1f} ms, bf16 {bf16:.1f} ms (bf16/fp32 time x{bf16 / fp32:.1f})",
          flush=True)  # fmt: skip


def pinned(work: Path) -> None:
    """The pinned-loss test's training (tiny config, one epoch, no dropout, one thread) in fp32 and bf16."""
    import yaml

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import TINY
    from tests.run.test_pinned_loss import PINNED_VALID_LOSS

    for layout, value in PINNED_VALID_LOSS.items():
        model = {**TINY["model"], "layout": layout, "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}
        data = {**TINY, "model": model, "train": {**TINY["train"], "max_epoch": 1, "seed": 1}}
        path = work / f"pinned-{layout}.yaml"
        path.write_text(yaml.safe_dump(data))
        losses = {}
        for precision in ("fp32", "bf16"):
            os.environ["OMP_NUM_THREADS"] = "1"
            records = plain_run(path, [], precision, work / f"pinned-{layout}-{precision}")
            losses[precision] = [r for kind, r in records if kind == "valid"][0]["valid_loss"]
        print(f"pinned {layout}: pinned {value} | fp32 {losses['fp32']} | bf16 {losses['bf16']} "
              f"(bf16 - fp32 {losses['bf16'] - losses['fp32']:+.3f})", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dims", default="demo,iwslt14", help=f"comma-separated, of {', '.join(DIMS)}")
    parser.add_argument("--pinned", action="store_true", help="also the pinned-loss test's config, both precisions")
    args = parser.parse_args()
    flags = cpu_bf16_flags()
    native = "native bf16: " + ", ".join(flags) if flags else "NO native bf16 (emulated: expect bf16 slower)"
    print(f"{os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '2')}, {native}")
    print(f"load before: {load()}", flush=True)
    matmul()
    work = Path(tempfile.mkdtemp(prefix="bench_precision."))
    if args.pinned:  # first: tiny, so its losses come even when the speed runs are cut short
        pinned(work)
    for dims in args.dims.split(","):
        speed(dims, args.updates, args.repeats, work)
    print(f"load after: {load()}")
    subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
