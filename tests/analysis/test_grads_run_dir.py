"""`prelnx grads --run-dir RUN_DIR` without --checkpoint: the run's best checkpoint is measured too (docs/gradients.md:
`--checkpoint` defaults to `best` with `--run-dir`), and a run dir without one is refused before anything runs.

Dry runs over run dirs written here (a weights-only checkpoint file is all the dry run reads): no training."""

from __future__ import annotations

from pathlib import Path

import torch
from typer.testing import CliRunner

from prelnx.cli import build_app

runner = CliRunner()


def run_dir_holding(folder: Path, *names: str) -> Path:
    """A run dir whose checkpoints/ holds `names`, each a checkpoint the dry run's check loads."""
    (folder / "checkpoints").mkdir(parents=True)
    for name in names:
        torch.save({"model": {"weight": torch.zeros(1)}}, folder / "checkpoints" / name)
    return folder


def dry_grads(config: Path, out: Path, *arguments: str):
    return runner.invoke(build_app("grads"), ["grads", "--config", str(config), "--out", str(out), "--depths", "2",
                                              "--seeds", "1", "--dry-run", *arguments])  # fmt: skip


def test_a_run_dir_alone_measures_its_best_checkpoint(tiny_config_file, tmp_path):
    run = run_dir_holding(tmp_path / "run", "checkpoint_last.pt", "checkpoint_best.pt", "checkpoint2.pt")
    result = dry_grads(tiny_config_file(), tmp_path / "out", "--run-dir", str(run))
    assert result.exit_code == 0, result.output
    assert f", and {run / 'checkpoints' / 'checkpoint_best.pt'} -> {tmp_path / 'out'}" in result.output, result.output
    alone = dry_grads(tiny_config_file(), tmp_path / "out")  # no run dir: no trained model
    assert alone.exit_code == 0 and ", and " not in alone.output, alone.output


def test_a_run_dir_without_a_best_checkpoint_is_refused_in_one_line(tiny_config_file, tmp_path):
    run = run_dir_holding(tmp_path / "run", "checkpoint_last.pt")
    result = dry_grads(tiny_config_file(), tmp_path / "out", "--run-dir", str(run))
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (f"error: --checkpoint best: {run / 'checkpoints'} has no checkpoint_best.pt "
                                     f"(it holds checkpoint_last.pt)")  # fmt: skip
    assert not (tmp_path / "out").exists()
