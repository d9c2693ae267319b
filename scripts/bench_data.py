"""Throughput of `prelnx data prepare`'s parallel steps on Multi30k train (29,000 pairs, both sides).

    python scripts/bench_data.py [--source ../shared/data/multi30k] [--workers N] [--bpe-merges 10000]

Prints sentences per second for Moses preprocessing (lowercase, punctuation normalization, tokenization:
Multi30k's recipe) and for BPE application, with 1 worker and with N (default: the core count), on a warm pool;
the pool's start-up (processes, imports, building the tokenizer / BPE model in each) is reported apart. The BPE
code is learned once beforehand (single process, subword-nmt), its time reported separately. Run it on an idle
machine: other load on the cores shows up as a missing speed-up.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from prelnx.data import multi30k
from prelnx.data.bpe import learn_joint_bpe
from prelnx.data.locations import DATASETS
from prelnx.data.sources import locate
from prelnx.data.textio import read_lines, write_lines
from prelnx.data.workers import CHUNK_LINES, BpeStep, MosesSteps, Step, Workers

DEFAULT_SOURCE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "multi30k"


def _timed(workers: int, jobs: list[tuple[Step, list[str]]]) -> tuple[float, float, list[list[str]]]:
    """Seconds to start a pool of `workers` and build each step in every worker (warm-up), seconds for all
    jobs on the warm pool, and the outputs."""
    start = time.perf_counter()
    with Workers(workers) as pool:
        for step, lines in jobs:  # enough chunks that every worker builds the step
            list(pool.map(step, lines[: 4 * workers * CHUNK_LINES], desc="warm-up"))
        warm = time.perf_counter()
        outputs = [list(pool.map(step, lines, desc=f"{workers} worker(s)")) for step, lines in jobs]
    return warm - start, time.perf_counter() - warm, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default=str(DEFAULT_SOURCE), help="Multi30k folder or archive (raw task 1 files)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--bpe-merges", type=int, default=DATASETS["multi30k"].bpe_merges)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        files = locate(
            args.source,
            [f"train.{lang}" for lang in multi30k.LANGUAGES],
            downloads=[],
            work=Path(tmp),
            hint=multi30k.HINT,
            what="Multi30k task 1 raw files",
        ).paths
        raw = {lang: list(read_lines(files[f"train.{lang}"])) for lang in multi30k.LANGUAGES}
        sentences = sum(len(lines) for lines in raw.values())
        moses_jobs = [
            (MosesSteps(lang, lowercase_first=True, normalize_punctuation=True), raw[lang])
            for lang in multi30k.LANGUAGES
        ]

        print(f"Multi30k train: {sentences:,} sentences (de + en); {os.cpu_count()} cores")
        results = {}
        for workers in sorted({1, args.workers}):
            *results[("moses", workers)], tokenized = _timed(workers, moses_jobs)
        texts = [Path(tmp) / f"tok.{lang}" for lang in multi30k.LANGUAGES]
        for path, lines in zip(texts, tokenized):
            write_lines(path, lines)
        start = time.perf_counter()
        learn_joint_bpe(texts, Path(tmp) / "code", merges=args.bpe_merges)
        learn_seconds = time.perf_counter() - start
        bpe_jobs = [(BpeStep(str(Path(tmp) / "code")), lines) for lines in tokenized]
        for workers in sorted({1, args.workers}):
            *results[("bpe", workers)], _ = _timed(workers, bpe_jobs)

    print(f"\n{'step':<42} {'workers':>7} {'start-up s':>10} {'seconds':>8} {'sentences/s':>12}")
    names = {"moses": "lowercase + normalize + tokenize (Moses)", "bpe": f"apply BPE ({args.bpe_merges:,} merges)"}
    for (step, workers), (startup, seconds) in results.items():
        print(f"{names[step]:<42} {workers:>7} {startup:>10.1f} {seconds:>8.1f} {sentences / seconds:>12,.0f}")
    print(f"{'learn BPE (subword-nmt, one process)':<42} {1:>7} {'':>10} {learn_seconds:>8.1f}")


if __name__ == "__main__":
    main()
