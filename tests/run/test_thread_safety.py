"""A sweep runs its jobs in threads of one process: every lazily initialised piece of shared state must survive N
threads reaching its first use at once. Each check runs in a fresh process (the first use is the point), with the
threads released together by a barrier."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml

from tests.conftest import REPO, TINY

THREADS = 8


def _first_use_at_a_barrier(call: str, *, imports: str = "") -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import threading, traceback
        {imports}
        barrier = threading.Barrier({THREADS})
        errors = []
        def first_use():
            barrier.wait()
            try:
                {call}
            except BaseException as error:
                errors.append(traceback.format_exc())
        threads = [threading.Thread(target=first_use) for _ in range({THREADS})]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        if errors:
            print(errors[0]); raise SystemExit(1)
    """)
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("repetition", range(2))
def test_safe_loading_first_loaded_by_many_threads_at_once(repetition, tmp_path):
    """The race that once recorded a finished run as failed: sys.modules held a half-executed safe_loading."""
    checkpoint = tmp_path / "checkpoint.pt"
    result = _first_use_at_a_barrier(
        f"load_checkpoint(Path({str(checkpoint)!r}))",
        imports=(f"from pathlib import Path; import torch; torch.save({{'w': torch.ones(2)}}, {str(checkpoint)!r}); "
                 "from prelnx.records.checkpoints import load_checkpoint"),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tensorboard_logs_first_opened_by_many_threads_at_once(tmp_path):
    """Every run of a sweep opens its TensorBoard writer from its own thread: the first import of
    torch.utils.tensorboard, and the event file's name, happen in N threads at once."""
    result = _first_use_at_a_barrier(
        f"log = TensorBoardLog(Path({str(tmp_path)!r}) / threading.current_thread().name); "
        "log.row({'epoch': 1, 'valid_loss': 1.5}); log.close()",
        imports="from pathlib import Path; from prelnx.records.tensorboard import TensorBoardLog",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(list(tmp_path.glob("*/events.out.tfevents.*"))) == THREADS


def test_configs_first_loaded_by_many_threads_at_once():
    """The strict YAML reader, the schema and the shipped-config lookup, first used by N threads at once."""
    result = _first_use_at_a_barrier(
        "config, _ = load_config('demo/preln_nowarmup', ['train.threads=1']); assert config.train.threads == 1",
        imports="from prelnx.config.load import load_config",
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # dozens of figures drawn; tests/test_layers.py's pyplot guard is the quick check
def test_figures_drawn_by_many_threads_at_once_are_the_figures_drawn_alone(tmp_path):
    """plots/ draws with matplotlib's object API (pyplot keeps one registry of figures for the process): N threads
    plotting N copies of one sweep at once each write exactly the figure one thread writes alone."""
    from tests.report.runs import Sweep

    alone = Sweep(tmp_path / "alone")
    for layout, finals in (("post", [3.1, 3.4]), ("pre", [2.2, 2.6])):
        alone.seeds(layout, 0, finals)
    alone.save()
    for config in alone.folder.glob("*/config.yaml"):  # a whole config, as `prelnx train` writes it
        written = yaml.safe_load(config.read_text())
        whole = {key: dict(value) if isinstance(value, dict) else value for key, value in TINY.items()}
        for key in ("model", "optimizer", "schedule", "train"):
            whole[key].update(written[key])
        config.write_text(yaml.safe_dump(whole))
    for index in range(1, THREADS + 1):  # threads are named Thread-1 ... Thread-N
        shutil.copytree(alone.folder, tmp_path / f"copy{index}")
    result = _first_use_at_a_barrier(
        f"plot(Path({str(tmp_path)!r}) / f'copy{{threading.current_thread().name.split(\"-\")[1].split(\" \")[0]}}')",
        imports="from pathlib import Path; from prelnx.plots.curves import plot",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    from prelnx.plots.curves import plot

    expected = {path.name: path.read_bytes() for path in plot(alone.folder) if path.suffix == ".png"}
    assert set(expected) == {"loss.png", "bleu.png"}
    drawn = sorted(tmp_path.glob("copy*"))
    assert len(drawn) == THREADS
    for folder in drawn:
        assert {name: (folder / name).read_bytes() for name in expected} == expected, folder


def _grads_summary() -> dict:
    """A gradient study's summary as grads_summary.json holds it (two layouts, depths 2 and 4, made-up norms)."""
    per_layer = [{"layout": layout, "depth": 2, "weight": weight, "side": side, "layer": layer,
                  "mean": 1.0 + layer + (layout == "post"), "std": 0.1}
                 for layout in ("post", "pre") for weight in ("W1", "W2") for side in ("encoder", "decoder")
                 for layer in (1, 2)]  # fmt: skip
    last = {layout: {str(depth): {"mean": depth * (1.5 if layout == "post" else 0.5), "std": 0.2} for depth in (2, 4)}
            for layout in ("post", "pre")}  # fmt: skip
    return {"growth_depth": 2, "layouts": ["post", "pre"], "per_layer": per_layer, "last_layer_w2": last,
            "seeds": [1, 2], "settings": {"config": "made-up"}}  # fmt: skip


@pytest.mark.slow  # dozens of figures drawn; tests/test_layers.py's pyplot guard is the quick check
def test_gradient_figures_drawn_by_many_threads_at_once_are_the_figure_drawn_alone(tmp_path):
    """plots/gradients.py draws with the object API too: N threads drawing Figure 3 at once each write the bytes one
    thread writes alone, and pyplot is never imported (its figure registry is the shared state)."""
    (tmp_path / "summary.json").write_text(json.dumps(_grads_summary()))
    result = _first_use_at_a_barrier(
        f"plot_figure3(SUMMARY, Path({str(tmp_path)!r}) / f'{{threading.current_thread().name.split(\"-\")[1].split(\" \")[0]}}.png')",
        imports=(f"import json, sys; from pathlib import Path; from prelnx.plots.gradients import plot_figure3; "
                 f"SUMMARY = json.loads(Path({str(tmp_path)!r}, 'summary.json').read_text()); "
                 f"import atexit; atexit.register(lambda: print('pyplot' if 'matplotlib.pyplot' in sys.modules else ''))"),
    )  # fmt: skip
    assert result.returncode == 0 and "pyplot" not in result.stdout, result.stdout + result.stderr
    from prelnx.plots.gradients import plot_figure3

    expected = plot_figure3(_grads_summary(), tmp_path / "alone" / "figure3.png").read_bytes()
    drawn = sorted(tmp_path.glob("*.png"))
    assert len(drawn) == THREADS and all(path.read_bytes() == expected for path in drawn), drawn


@pytest.mark.slow
@pytest.mark.parametrize("repetition", range(2))
def test_four_identical_runs_on_four_jobs_all_finish(repetition, tiny_config_file, tmp_path):
    """Four runs of one shape on --jobs 4 end within moments of each other, each thread reaching the records'
    first uses (checkpoint loading, TensorBoard, the summary) at once; every repetition is a fresh `prelnx sweep`
    process (a first use happens once per process) and records four finished runs."""
    base = tiny_config_file(train={"max_epoch": 1})
    spec = tmp_path / "four.yaml"
    spec.write_text(yaml.safe_dump({"name": "four", "base": str(base), "grid": {"train.seed": [1, 2, 3, 4]}}))
    out = tmp_path / "four"
    result = subprocess.run([sys.executable, "-m", "prelnx.cli", "sweep", "--config", str(spec), "--out", str(out),
                             "--jobs", "4"], cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    statuses = {run.name: json.loads((run / "status.json").read_text()) for run in out.iterdir()
                if (run / "status.json").is_file()}  # fmt: skip
    assert len(statuses) == 4, result.stdout + result.stderr
    assert {name: status["status"] for name, status in statuses.items() if status["status"] != "finished"} == {}, (
        statuses, result.stdout[-3000:])
    assert result.returncode == 0, result.stdout + result.stderr
