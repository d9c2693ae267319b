"""Shared fixtures: a tiny real config on the synthetic task, and a private data cache."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from prelnx.machine import usable_cores

# Each pytest process's share of the cores for the torch work it does itself (the theory checks, models built in
# process): under pytest-xdist two workers with torch's default (every core) each would slow each other far more than
# 2x on 2 cores (OpenMP threads spin waiting for a core the other holds). Set before any test imports torch.
_SHARE = str(max(1, usable_cores() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
os.environ.setdefault("OMP_NUM_THREADS", _SHARE)
os.environ.setdefault("MKL_NUM_THREADS", os.environ["OMP_NUM_THREADS"])  # OMP_NUM_THREADS=1 alone means one thread

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# Small enough for a real fairseq training of two epochs in seconds on one CPU core.
TINY = {
    "name": "tiny",
    "data": {
        "dataset": "synthetic",
        "synthetic": {"vocab_size": 40, "min_words": 2, "max_words": 6, "train_pairs": 400, "valid_pairs": 40,
                      "test_pairs": 40, "seed": 3},
    },
    "model": {"layout": "post", "encoder_layers": 2, "decoder_layers": 2, "embed_dim": 32, "ffn_dim": 64,
              "attention_heads": 2},
    "optimizer": {"name": "adam", "lr": 0.003},
    "schedule": {"warmup_updates": 0, "decay": "constant"},
    "train": {"max_tokens": 512, "max_epoch": 2, "threads": 1, "log_interval": 2, "num_workers": 0},
    "eval": {"bleu": {"beam": 1}},
}


@pytest.fixture(autouse=True, scope="session")
def _private_data_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    import os

    os.environ["PRELNX_DATA_HOME"] = str(tmp_path_factory.mktemp("data-home"))


@pytest.fixture(autouse=True)
def _console_as_it_was():
    """A test that runs the CLI sets up the process's console (prelnx/console.py: a handler on the root logger, the
    levels of prelnx's and fairseq's loggers); the next test finds logging as it was before."""
    with console_as_it_was():
        yield


@contextlib.contextmanager
def console_as_it_was():
    import logging

    names = ("", "prelnx", "fairseq", "fairseq_cli")
    before = {name: (logging.getLogger(name).level, list(logging.getLogger(name).handlers)) for name in names}
    yield
    for name, (level, handlers) in before.items():
        logger = logging.getLogger(name)
        logger.setLevel(level)
        for handler in [h for h in logger.handlers if h not in handlers]:
            logger.removeHandler(handler)


@pytest.fixture
def tiny_config_file(tmp_path: Path):
    """Write the tiny config (with optional overrides of whole sections) and return its path."""

    def write(**sections: dict) -> Path:
        data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in TINY.items()}
        for key, value in sections.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    return write


@pytest.fixture(scope="session")
def finished_tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real training of the tiny config as it is (2 epochs, a checkpoint per epoch), trained once per session
    (per pytest-xdist worker) for the tests that need a finished run to read or to damage. Never write to it: take
    `tiny_run`, a copy of it in the test's own folder."""
    from prelnx.config.load import load_config
    from prelnx.launch.local import train

    folder = tmp_path_factory.mktemp("finished-tiny")
    (folder / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    config, _ = load_config(folder / "tiny.yaml")
    result = train(config, run_dir=folder / "run")
    assert result.status == "finished", (folder / "run" / "train.log").read_text()[-3000:]
    return folder / "run"


@pytest.fixture(scope="session")
def sequential_tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    """(spec, sweep dir, `prelnx sweep`'s result): tests/sweep/test_sequential_sweep.py's sweep, run once per session
    through the CLI; tests/report/test_real_sweep_dead_arm.py takes its Pre-LN and warmed Post-LN runs of seeds 1, 2
    (the same trainings) rather than training them again. Read it; never write to its run dirs."""
    from typer.testing import CliRunner

    from prelnx.cli import app

    folder = tmp_path_factory.mktemp("sequential")
    (folder / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    spec = folder / "sequential.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "sequential", "base": str(folder / "tiny.yaml"),
        # 100 updates, one context for every arm, validated at the end only (the claims read the final valid loss; no
        # validation and checkpoint per epoch: the same trajectory, the same final numbers, -0.45 CPU-s a training)
        "set": {"train.max_epoch": 20, "eval.bleu.enabled": False, "eval.every_updates": 100},
        "arms": {
            "pre_dead": {"model.layout": "pre", "optimizer.lr": 1.0},  # fails to train in every seed (nll 93-104 bits)
            "post_cold": {"optimizer.lr": 1.0e6},  # diverges
            "post_warm_big": {"optimizer.lr": 1.0e6, "schedule.warmup_updates": 10},  # the premise's arm: diverges
            # lr u/10,000 at update u: 1.33-1.36 bits below the 4.22-bit plateau at update 100 (trained: 1 bit below)
            "post_warm": {"optimizer.lr": 1.0, "schedule.warmup_updates": 10000}},
        "seeds": {"looks": [2, 3], "futility": 0},  # no futility stop: the open claim must reach the last look
    }, sort_keys=False))  # fmt: skip
    with console_as_it_was():
        done = CliRunner().invoke(app, ["sweep", "-c", str(spec), "--out", str(folder / "runs")])
    return spec, folder / "runs", done


@pytest.fixture
def tiny_run(finished_tiny_run: Path, tiny_config_file, tmp_path: Path):
    """(config path, run dir): the tiny config in this test's folder and a copy of its finished 2-epoch run, ready to
    be read, resumed, damaged or extended as a run this test trained itself."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(finished_tiny_run, run_dir)
    return tiny_config_file(), run_dir


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n auto --dist loadgroup`), a module whose tests share a module-scoped fixture (one
    training, one data preparation, one theory run) goes to one worker, which builds that fixture once; every other
    test goes wherever a worker is free; the tests on the session's tiny training (`finished_tiny_run`, a session
    fixture: each worker that meets one trains it, 3.6 s) go to one worker too, and so do those on the sequential
    sweep (`sequential_tiny_sweep`). Tests with their own `xdist_group`
    (the Slurm cluster's) keep it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        shared = any(d.scope in ("module", "class") for defs in definitions.values() for d in defs)
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        elif session := sorted({"finished_tiny_run", "sequential_tiny_sweep"} & set(definitions)):
            item.add_marker(pytest.mark.xdist_group(session[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = _longest_first(items)


def _longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The order pytest-xdist hands the work out in (pytest_configure turns off its own, by a group's test count):
    the longest work first - the groups holding a training, then the other trainings, then the groups sharing a
    module-scoped set-up, then the rest - so that the suite ends on short tests that fill both workers, never on one
    long training with the other worker idle. Each group's tests keep their order (a stable sort); serial runs keep
    the files' order."""

    def group(item: pytest.Item) -> str | None:
        marker = item.get_closest_marker("xdist_group")
        return None if marker is None else (marker.args[0] if marker.args else marker.kwargs.get("name"))

    slow_groups = {group(item) for item in items if group(item) and item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        name = group(item)
        if name is not None:
            return 0 if name in slow_groups else 2
        return 1 if item.get_closest_marker("slow") else 3

    return sorted(items, key=rank)


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's loadgroup queues the work in the collected order (`_longest_first`), not its default of the
    groups with the most tests first (a group of many quick tests would start before a long training)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` every grouped test's id carries its group (pytest-xdist appends `@<group>`); where a
    pytest/xdist pairing drops it, the groups would silently run on several workers at once (two Slurm clusters):
    stop instead."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in session.items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist's --dist loadgroup did not group {lost[0]} (and {len(lost) - 1} more) "
                                f"with this pytest {pytest.__version__}; install the versions pyproject.toml pins "
                                f"(pip install -e '.[test]')")
