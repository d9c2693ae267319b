"""Training curves like the paper's Figures 2 and 4 (valid loss and BLEU per epoch) and Figure 5a (BERT's valid
loss per update: runs at the update grain, records/grain.py), and a best-BLEU heatmap, from run dirs only.

Runs that differ only in train.seed are one arm: its mean over seeds with a min-max band (with the 2-5 seeds a CPU
sweep affords, an sd is barely estimated; the band shows where every seed lay). A diverged seed is not averaged in:
it is drawn on its own, dashed, with an x where it stopped.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.config.schema import Config
from prelnx.exits import Refusal
from prelnx.layouts import display_name, is_file_spec
from prelnx.plots.diagnostics import Formats, new_figure, plot_diagnostics, save_figure
from prelnx.records.grain import Grain, of, of_run_dir
from prelnx.records.metrics import read_metrics
from prelnx.records.outcome import RunStatus
from prelnx.records.results import finite, is_finite, override_keys, read_index
from prelnx.records.status import recorded_status

SHORT_KEYS = {
    "model.norm": "norm",
    "model.qk_norm": "qk-norm",
    "schedule.warmup_updates": "warm-up",
    "optimizer.lr": "lr",
    "optimizer.name": "opt",
    "model.layout": "layout",
    "train.seed": "seed",
    "schedule.decay": "decay",
}


@dataclass
class RunCurves:
    label: str
    run_dir: Path
    overrides: dict[str, Any]
    rows: list[dict[str, Any]]
    status: RunStatus
    grain: Grain
    arm: str = ""  # the label without the seed: runs with the same arm are drawn as one mean with a band


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", (0, (5, 2)), (0, (1, 1)), (0, (5, 1, 1, 1)))


def _label(overrides: dict[str, Any], varying: list[str], fallback: str) -> str:
    parts = []
    for key in varying:
        if key in overrides:
            value = overrides[key]
            text = f"{value:g}" if isinstance(value, float) else str(value)
            text = display_name(text) if key == "model.layout" and is_file_spec(text) else text  # not its path
            parts.append(f"{SHORT_KEYS.get(key, key.rsplit('.', 1)[-1])}={text}")
    return ", ".join(parts) or fallback


def collect_runs(path: Path, configs: Mapping[str, Config] | None = None) -> list[RunCurves]:
    """A run dir -> that run; a sweep dir -> its runs (from sweep.json, else every subfolder with metrics). Each
    run's grain from `configs` (run name -> its config, as the report's arms read it), else from its config.yaml."""
    if (path / "metrics.jsonl").is_file() or (path / "status.json").is_file():
        return [RunCurves(path.name, path, {}, read_metrics(path), recorded_status(path), of_run_dir(path))]
    points = read_index(path)["runs"]
    if not points:
        points = [{"name": d.name, "overrides": {}} for d in sorted(path.iterdir()) if (d / "metrics.jsonl").is_file()]
    if not points:
        raise Refusal(f"{path}: neither a run dir (metrics.jsonl) nor a sweep dir (sweep.json or run subfolders)")
    varying = [k for k in override_keys(points) if len({repr(p["overrides"].get(k)) for p in points}) > 1]
    arm_keys = [k for k in varying if k != "train.seed"]
    runs = []
    for point in points:
        run_dir, config = path / point["name"], (configs or {}).get(point["name"])
        runs.append(RunCurves(_label(point["overrides"], varying, point["name"]), run_dir, point["overrides"],
                              read_metrics(run_dir), recorded_status(run_dir),
                              of(config) if config is not None else of_run_dir(run_dir),
                              _label(point["overrides"], arm_keys, "all runs")))  # fmt: skip
    return runs


def _points(run: RunCurves, key: str) -> list[tuple[int, float]]:
    """The run's (step, value) pairs where `key` has a finite value."""
    return [(run.grain.step(row), float(row[key])) for row in run.rows if is_finite(row.get(key))]


def _curve_figure(runs: list[RunCurves], key: str, ylabel: str, title: str, out: Path, formats: Formats) -> list[Path]:
    if not any(is_finite(row.get(key)) for run in runs for row in run.rows):
        return []  # no run has a value: no empty figure
    from matplotlib import colormaps
    from matplotlib.ticker import MaxNLocator

    # wide enough for the legend beside the axes (~0.06 in a character, its seeds' note included), and ten hues
    # before any is repeated lighter (tab20's order paired each colour with its lighter shade: two arms, one hue)
    fig, ax = new_figure((max(9.5, 5.0 + 0.06 * max(len(run.label) + 35 for run in runs)), 4.8))
    ax.set_prop_cycle(color=colormaps["tab20"].colors[::2] + colormaps["tab20"].colors[1::2])
    by_update = [run.grain is Grain.UPDATE for run in runs]
    banded = _draw_bands(ax, runs, key)
    for index, run in enumerate(runs):
        if run.run_dir in banded:
            continue
        points = _points(run, key)
        label = run.label + ("" if run.status in (RunStatus.FINISHED, RunStatus.RUNNING) else f" ({run.status})")
        if not points:
            ax.plot([], [], label=label + " - no epochs")
            continue
        epochs, values = zip(*points)
        diverged = run.status == RunStatus.DIVERGED
        # curves that coincide (e.g. two constant lrs) stay visible: each run its own marker and dash pattern,
        # drawn thinner and with smaller markers the later it comes
        (line,) = ax.plot(epochs, values, marker=MARKERS[index % len(MARKERS)], markersize=max(2.5, 6 - index * 0.5),
                          linewidth=max(0.8, 2.2 - index * 0.2), alpha=0.9,
                          linestyle="--" if diverged else DASHES[index % len(DASHES)], label=label)  # fmt: skip
        if diverged:
            ax.plot(epochs[-1], values[-1], marker="x", markersize=10, color=line.get_color())
    if key == "valid_loss":
        _keep_in_scale(ax, runs, key)
    ax.set_xlabel("update" if all(by_update) else "epoch" if not any(by_update) else "epoch, or update (BERT)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7 if len(runs) > 6 else 8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # never over the data
    return save_figure(fig, out, _FILE_NAMES[key], formats)


OFF_SCALE = 2.0  # a loss above this many times the median of all drawn losses is off the scale (a diverged run)


def _keep_in_scale(ax: Any, runs: list[RunCurves], key: str) -> None:
    """A diverged run's last loss (e.g. 1.7e8 bits) would flatten every other curve: the axis stops at OFF_SCALE x
    the median loss, and each run that leaves it is marked at the top edge with its value."""
    values = [value for run in runs for _, value in _points(run, key)]
    cap = OFF_SCALE * statistics.median(values)
    if max(values) <= cap:
        return
    shown = [v for v in values if v <= cap]
    pad = 0.05 * ((max(shown) - min(shown)) or 1.0)
    top = max(shown) + 2 * pad  # room for the marks at the top edge
    ax.set_ylim(min(shown) - pad, top)
    for run in runs:
        step, value = next(((s, v) for s, v in _points(run, key) if v > cap), (None, None))
        if step is not None:
            ax.annotate(f"{run.label}: {value:.3g} (off scale)", (step, top), xytext=(0, -12),
                        textcoords="offset points", ha="center", fontsize=7, arrowprops={"arrowstyle": "->"})  # fmt: skip


def _draw_bands(ax: Any, runs: list[RunCurves], key: str) -> set[Path]:
    """Each arm with two or more seeds that did not diverge: their mean and min-max band. Returns the runs drawn."""
    arms: dict[str, list[RunCurves]] = {}
    for run in runs:
        if run.status != RunStatus.DIVERGED and run.arm:
            arms.setdefault(run.arm, []).append(run)
    drawn: set[Path] = set()
    for arm, members in arms.items():
        with_data = [r for r in members if _points(r, key)]
        if len(with_data) < 2:
            continue
        by_step: dict[int, list[float]] = {}
        for run in with_data:
            for step, value in _points(run, key):
                by_step.setdefault(step, []).append(value)
        steps = sorted(by_step)
        means = [statistics.fmean(by_step[s]) for s in steps]
        (line,) = ax.plot(steps, means, marker="o", markersize=3,
                          label=f"{arm} (mean of {len(with_data)} seeds, band min-max)")  # fmt: skip
        ax.fill_between(steps, [min(by_step[s]) for s in steps], [max(by_step[s]) for s in steps],
                        color=line.get_color(), alpha=0.2, linewidth=0)  # fmt: skip
        drawn.update(r.run_dir for r in with_data)
    return drawn


PANEL_KEYS = ("model.layout", "model.norm", "model.qk_norm", "optimizer.name")
_FILE_NAMES = {"valid_loss": "loss", "valid_bleu": "bleu", "lr": "lr"}


def _heatmap(runs: list[RunCurves], out: Path, formats: Formats) -> list[Path]:
    """Best valid BLEU over warm-up x lr (mean over seeds), one panel per combination of the other keys."""
    x_key, y_key = "schedule.warmup_updates", "optimizer.lr"
    if not all(x_key in r.overrides and y_key in r.overrides for r in runs):
        return []
    xs = sorted({r.overrides[x_key] for r in runs})
    ys = sorted({r.overrides[y_key] for r in runs})
    if len(xs) < 2 or len(ys) < 2:
        return []
    # One panel per layout/optimizer; seeds (and schedule details that go with the warm-up) are averaged.
    other_keys = [k for k in PANEL_KEYS if len({repr(r.overrides.get(k)) for r in runs}) > 1]
    groups: dict[tuple, list[RunCurves]] = {}
    for run in runs:
        groups.setdefault(tuple(repr(run.overrides.get(k)) for k in other_keys), []).append(run)

    import numpy as np

    if not any(is_finite(row.get("valid_bleu")) for run in runs for row in run.rows):
        return []  # every run failed before its first validation: an empty heatmap would only mislead
    fig, axes = new_figure((4.2 * len(groups) + 1, 3.8), 1, len(groups), squeeze=False)
    for ax, (_, members) in zip(axes[0], sorted(groups.items())):
        grid = np.full((len(ys), len(xs)), np.nan)
        for i, y in enumerate(ys):
            for j, x in enumerate(xs):
                cell = [r for r in members if r.overrides[x_key] == x and r.overrides[y_key] == y]
                bleus = [max(found) for r in cell if (found := finite(row.get("valid_bleu") for row in r.rows))]
                note = ""
                if bleus:
                    grid[i, j] = statistics.fmean(bleus)
                    note = f"{grid[i, j]:.1f}"
                if any(r.status == RunStatus.DIVERGED for r in cell):
                    note += "\ndiverged"
                ax.text(j, i, note, ha="center", va="center", color="white", fontsize=8)  # above the image (zorder)
        image = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
        ax.set_xlabel("warm-up updates")
        ax.set_ylabel("peak lr")
        example = members[0].overrides
        title = ", ".join(f"{SHORT_KEYS.get(k, k)}={example.get(k)}" for k in other_keys) or "all runs"
        ax.set_title(f"best valid BLEU ({title})", fontsize=9)
        fig.colorbar(image, ax=ax)
    return save_figure(fig, out, "heatmap", formats)


def plot(
    path: Path, out: Path | None = None, configs: Mapping[str, Config] | None = None, formats: Formats = ("png", "svg")
) -> list[Path]:
    """Write loss, bleu and lr (in `formats`; heatmap too for a warm-up x lr grid; diagnostics for runs with
    train.diagnostics: plots/diagnostics.py); returns the files. A figure no run has data for is not drawn.
    `configs`: the runs' configs already read (collect_runs)."""
    runs = collect_runs(path, configs)
    out = out or path
    out.mkdir(parents=True, exist_ok=True)
    name = read_index(path)["name"] or path.resolve().name
    files = _curve_figure(runs, "valid_loss", "validation loss (bits/token)", f"Validation loss - {name}", out, formats)
    files += _curve_figure(runs, "valid_bleu", "validation BLEU", f"Validation BLEU - {name}", out, formats)
    # The lr at the end of each epoch: runs that should differ in warm-up only must share this curve after it.
    at = "at each validation" if all(run.grain is Grain.UPDATE for run in runs) else "end of epoch"
    files += _curve_figure(runs, "lr", f"learning rate ({at})", f"Learning rate - {name}", out, formats)
    files += _heatmap(runs, out, formats)
    files += plot_diagnostics(runs, name, out, formats)
    return files
