"""The paper's mean-field checks: hidden-state norms inside its bounds, LayerNorm's Jacobian ~ sqrt(d) / ||x||.

Measured at d 512, 12 layers, seeds 1-10 (seeded, so these numbers do not change between runs):
- Post-LN ||x^(post,5)||^2 / d, mean over seeds per layer: 1.447-1.539 (std over seeds 0.03-0.12); paper: 3/2.
- Pre-LN ||x_l||^2 / d: 1.63 at layer 1 (bounds [1.5, 2.5]) to 14.07 at layer 12 (bounds [7, 19]).
- ||J_LN(x)||_2 / (sqrt(d) / ||x||): 0.9999-1.0106 over every seed and scale.
The thresholds below leave several standard errors of room and fail on the mistakes that matter (measuring
x^(post,5) after its LayerNorm gives 1.0; a Pre-LN trunk without its residual stays near 1).
"""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from prelnx.analysis.theory import TheorySettings, hidden_state_norms, layernorm_jacobian_norms, run_theory
from prelnx.commands.errors import handled
from prelnx.commands.theory import theory_command

runner = CliRunner()


@pytest.fixture(scope="module")
def summary() -> dict:
    return run_theory(TheorySettings(d=512, layers=12, seeds=tuple(range(1, 11))), echo=lambda line: None)


@pytest.mark.slow  # the paper-size theory run: d 512, 12 layers, 10 seeds
def test_post_ln_hidden_norm_is_three_halves_at_every_layer(summary):
    for row in summary["hidden"]:
        assert abs(row["post_mean"] - 1.5) < 0.15, row
    assert abs(summary["post_mean_over_layers"] - 1.5) < 0.05  # measured 1.498
    assert summary["post_all_near_3_2"]


@pytest.mark.slow  # the paper-size theory run: d 512, 12 layers, 10 seeds
def test_pre_ln_hidden_norm_grows_inside_the_papers_bounds(summary):
    means = [row["pre_mean"] for row in summary["hidden"]]
    for layer, mean in enumerate(means, start=1):
        assert 1 + layer / 2 <= mean <= 1 + 3 * layer / 2, (layer, mean)
    assert all(later > earlier + 0.4 for earlier, later in zip(means, means[1:]))  # linear growth (about +1.1 per layer)
    assert summary["pre_all_inside_bounds"]


@pytest.mark.slow  # the paper-size theory run: d 512, 12 layers, 10 seeds
def test_layernorm_jacobian_follows_sqrt_d_over_the_input_norm(summary):
    assert 0.99 < summary["jacobian_ratio_min"] and summary["jacobian_ratio_max"] < 1.03
    rows = layernorm_jacobian_norms(256, (1.0, 2.0, 4.0, 8.0), seed=0)
    for small, large in zip(rows, rows[1:]):  # doubling the input halves the Jacobian
        assert large["jacobian_norm"] == pytest.approx(small["jacobian_norm"] / 2, rel=0.01)


def test_post_and_pre_share_the_draws_of_a_seed():
    first, again = hidden_state_norms(64, 3, seed=5), hidden_state_norms(64, 3, seed=5)
    assert first == again and first != hidden_state_norms(64, 3, seed=6)


def test_command_writes_tables_and_plots(tmp_path):
    app = typer.Typer(add_completion=False)
    app.command("theory")(handled(theory_command))  # with the one error handler, as prelnx/cli.py registers it

    @app.callback()
    def _group() -> None:
        """The command under test."""

    result = runner.invoke(app, ["theory", "--hidden-size", "128", "--layers", "4", "--seeds", "3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Pre-LN" in result.output and "sqrt(d)/||x||" in result.output
    for name in ("theory_hidden.csv", "theory_layernorm.csv", "theory_summary.json", "theory_hidden.png", "theory_layernorm.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert len((tmp_path / "theory_hidden.csv").read_text().splitlines()) == 1 + 3 * 4
    assert json.loads((tmp_path / "theory_summary.json").read_text())["d"] == 128

    bad = runner.invoke(app, ["theory", "--hidden-size", "1", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "error: " in bad.output and "Traceback" not in bad.output
    bad = runner.invoke(app, ["theory", "--scales", "1,x"])
    assert bad.exit_code == 2 and "--scales" in bad.output
