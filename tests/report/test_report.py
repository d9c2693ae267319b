"""`prelnx report` end to end on hand-made run dirs: every claim printed with its numbers and one of five verdicts,
the arms' mean ± sd table, and curves drawn as the mean over seeds with a band."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from prelnx.config.strict_yaml import read_yaml  # noqa: E402
from prelnx.plots.curves import _draw_bands, collect_runs, plot  # noqa: E402
from prelnx.records import run_config  # noqa: E402
from prelnx.report.report import write_report  # noqa: E402
from prelnx.report.stats import Verdict  # noqa: E402
from tests.helpers import logged
from tests.report.runs import Sweep, write_dictionary  # noqa: E402

VERDICTS = "|".join(re.escape(v.value) for v in Verdict)


def study(tmp_path) -> Sweep:
    """A CPU-study-like sweep: Post-LN Adam over warm-up x lr, SGD, Pre-LN Adam and RAdam; 1-3 seeds per arm."""
    sweep = Sweep(tmp_path / "cpu_study", tmp_path / "data")
    write_dictionary(tmp_path / "data")
    sweep.seeds("post", 0, [8.45, 8.50, 8.40], lr=1e-3)
    sweep.run("post", 0, [9.0, 8.9], lr=1e-3, seed=4, status="diverged")
    sweep.seeds("post", 120, [6.80, 6.70, 6.90, 6.75], lr=1e-3)  # 4/4 failures vs 0/4: Fisher p = 0.014
    sweep.seeds("post", 0, [7.10, 7.00, 7.05], lr=5e-4)  # no worse without warm-up, even at Holm's level (2 lrs)
    sweep.seeds("post", 120, [7.00, 7.05, 6.95], lr=5e-4)
    sweep.seeds("post", 30, [7.50], lr=1e-3)
    sweep.seeds("post", 30, [7.00], lr=5e-4)
    sweep.seeds("post", 0, [8.30, 8.25], optimizer="sgd", lr=0.1)
    sweep.seeds("post", 120, [8.35, 8.32], optimizer="sgd", lr=0.1)
    sweep.seeds("pre", 0, [6.10, 6.05, 6.15], lr=1e-3)
    sweep.seeds("pre", 0, [6.25, 6.20, 6.30], optimizer="radam", lr=1e-3)
    return sweep


def test_every_claim_is_printed_with_means_interval_premise_and_verdict(tmp_path, monkeypatch):
    sweep_dir = study(tmp_path).save()
    read = []  # the config.yaml files parsed
    monkeypatch.setattr(
        run_config, "read_yaml", lambda path, *args, **kw: read.append(path) or read_yaml(path, *args, **kw)
    )
    with logged() as printed:
        report = write_report(sweep_dir, tmp_path / "out" / "report.md", say_claims=True).read_text()
    text = "\n".join(printed)
    assert sorted(read) == sorted(sweep_dir.glob("*/config.yaml"))  # each once: the curves' grain is the arms' config
    # the sweep named by its name and its folder relative to the report, never by a path of this machine
    assert f"Sweep {sweep_dir.name} (folder `../{sweep_dir.relative_to(tmp_path)}`, relative to this report)" in report
    assert str(tmp_path) not in report
    assert text.count("  verdict: ") == 6 and len(re.findall(rf"  verdict: ({VERDICTS})", text)) == 6
    assert "at update 30: " in text and "seeds) − " in text and "[95 % CI" in text and "premise: " in text
    verdicts = dict(re.findall(r"^(.+?) \(Section.*?\n(?:  (?!verdict).*\n)*  verdict: (.+)$", text, re.M))
    assert verdicts["Post-LN trained with Adam without warm-up ends far worse than with warm-up."] == "does not hold"
    assert verdicts["Post-LN trained with SGD also needs warm-up."].startswith("not testable at this scale")
    assert verdicts["With a short warm-up, the larger peak learning rate is much worse."] == "inconclusive (1 seed)"
    assert verdicts["Pre-LN without warm-up reaches the quality of Post-LN with warm-up."] == "holds"
    assert "lr 0.001: final valid loss (bits)" in text and "failures 4/4 vs 0/4" in text
    # the results: per arm its seeds by outcome and the trained seeds' mean ± sd, then the per-seed rows
    assert "| Post-LN adam lr 0.001, no warm-up | 4 | 3 failed to train, 1 diverged (update 20) | - |" in report
    assert "| Post-LN adam lr 0.001, 120 warm-up | 4 | 4 trained | 6.79 ± 0.09 |" in report
    assert report.index("| arm | seeds | outcome per seed |") < report.index("Per seed:") < report.index("| run |")
    assert "(mean of 3 seeds, band min-max)" not in report  # labels live in the figures, not the markdown
    assert (tmp_path / "out" / "report_figures" / "loss.png").is_file()


def test_curves_draw_the_mean_of_the_seeds_with_a_min_max_band(tmp_path):
    sweep = Sweep(tmp_path / "s")
    sweep.seeds("pre", 0, [6.0, 6.4, 6.2])
    sweep.run("post", 0, [9.0, 8.8], seed=1)
    sweep.run("post", 0, [9.0], seed=2, status="diverged")
    runs = collect_runs(sweep.save())
    fig, ax = plt.subplots()
    banded = _draw_bands(ax, runs, "valid_loss")
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1 and len(banded) == 3  # Post-LN has one seed that did not diverge: no band
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert min(ys) == 6.0 and max(ys) == 9.0  # the band spans the seeds' min and max over the steps
    (line,) = ax.get_lines()
    assert line.get_ydata()[-1] == 6.2 and "mean of 3 seeds, band min-max" in line.get_label()
    plt.close(fig)
    assert {p.name for p in plot(sweep.folder, tmp_path / "plots")} >= {"loss.png", "loss.svg"}


def test_coinciding_curves_stay_visible_and_the_legend_is_off_the_data(tmp_path, monkeypatch):
    """Two runs with the same values (e.g. two constant lrs): each its own marker and dash pattern; the legend sits
    beside the axes, not over the curves."""
    from matplotlib.figure import Figure  # curves draw with the object API: the figure is caught where it is saved

    from prelnx.plots import curves

    sweep = Sweep(tmp_path / "s")
    sweep.run("post", 0, [5.0, 4.0, 3.0])
    sweep.run("pre", 0, [5.0, 4.0, 3.0])
    runs = collect_runs(sweep.save())
    kept = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, *args, **kwargs: kept.setdefault("fig", fig))
    curves._curve_figure(runs, "valid_loss", "valid loss", "t", tmp_path, ("png",))
    ax = kept["fig"].axes[0]
    first, second = ax.get_lines()[:2]
    assert list(first.get_ydata()) == list(second.get_ydata())  # they coincide...
    assert (first.get_marker(), first.get_linestyle()) != (second.get_marker(), second.get_linestyle())  # ...but show
    assert "layout=" in first.get_label() and "seed" not in first.get_label()  # labelled by the keys that vary
    kept["fig"].canvas.draw()
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= axes.x1  # beside the axes


def test_six_arms_of_a_users_layout_have_six_hues_its_name_and_room_beside_the_legend(tmp_path, monkeypatch):
    """The gated_preln study's figure (6 arms x 2 seeds): tab20's pairs gave Post-LN and Pre-LN without warm-up one
    blue, the user's layout was labelled by its path, and the long legend squeezed the axes to ~0.5 inch."""
    import shutil

    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from prelnx.plots import curves
    from tests.conftest import REPO

    shutil.copy(REPO / "examples" / "gated_preln.py", tmp_path / "gated_preln.py")
    sweep = Sweep(tmp_path / "s")
    extra = {0: {"schedule.decay": "constant"}, 200: {"schedule.decay": "inverse_sqrt", "schedule.warmup_init_lr": 1e-7,
                                                      "schedule.decay_start_update": 200}}  # fmt: skip
    for layout in ("post", "pre", f"{tmp_path / 'gated_preln.py'}:GatedPreLN"):
        for warmup in (0, 200):
            sweep.seeds(layout, warmup, [4.0, 4.2], extra=extra[warmup])
    kept = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, *args, **kwargs: kept.setdefault("fig", fig))
    curves._curve_figure(collect_runs(sweep.save()), "valid_loss", "valid loss", "t", tmp_path, ("png",))
    ax = kept["fig"].axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith("layout=")]
    assert len(lines) == 6 and len({to_hex(line.get_color()) for line in lines}) == 6
    assert {to_hex(line.get_color()) for line in lines} <= {to_hex(c) for c in matplotlib.colormaps["tab10"].colors}
    assert sum("layout=Gated Pre-LN, " in line.get_label() for line in lines) == 2
    assert not any(str(tmp_path) in line.get_label() for line in lines)
    kept["fig"].canvas.draw()
    assert ax.get_window_extent().width / kept["fig"].dpi > 4  # inches of axes beside the legend


def test_a_diverged_runs_huge_loss_does_not_flatten_the_other_curves(tmp_path, monkeypatch):
    from matplotlib.figure import Figure  # curves draw with the object API: the figure is caught where it is saved

    from prelnx.plots import curves

    sweep = Sweep(tmp_path / "s")
    sweep.run("post", 120, [9.3, 9.6, 8.3, 8.1], optimizer="sgd", lr=0.3)
    sweep.run("post", 120, [9.0, 1.7e8], optimizer="sgd", lr=1.0, status="diverged")  # fairseq's last loss
    kept = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, *args, **kwargs: kept.setdefault("fig", fig))
    curves._curve_figure(collect_runs(sweep.save()), "valid_loss", "valid loss", "t", tmp_path, ("png",))
    ax = kept["fig"].axes[0]
    assert 7.5 < ax.get_ylim()[0] < 8.1 and 9.6 < ax.get_ylim()[1] < 11  # the trained runs' range, not 0 to 1.7e8
    (note,) = [t for t in ax.texts if "off scale" in t.get_text()]
    assert "1.7e+08" in note.get_text() and "lr=1" in note.get_text()


def test_a_folder_that_is_no_sweep_is_one_error_line_and_exit_2(tmp_path):
    """ReportError is a Refusal: the one handler renders it as one `error:` line, exit 2, no traceback."""
    from typer.testing import CliRunner

    from prelnx.cli import app

    result = CliRunner().invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "not a sweep dir (no sweep.json)" in result.output and "Traceback" not in result.output
    assert "this is a bug" not in result.output


def test_a_grads_folder_without_a_study_is_refused_by_the_dry_run_and_before_anything_is_written(tmp_path):
    """`--dry-run` makes the real run's checks: a --grads folder with no grads_summary.json is exit 2 in both, and
    the real run writes no figure first."""
    from typer.testing import CliRunner

    from prelnx.cli import app

    sweep = Sweep(tmp_path / "s")
    sweep.run("post", 0, [9.0, 8.9], lr=1e-3)
    sweep_dir, empty = sweep.save(), tmp_path / "not_grads"
    empty.mkdir()
    for extra in (["--dry-run"], []):
        argv = ["report", str(sweep_dir), "--grads", str(empty), "--out", str(tmp_path / "r"), *extra]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2 and "no grads_summary.json" in result.output, result.output
    assert not (tmp_path / "r").exists()
