"""Adding a layout to prelnx is one row of prelnx/layouts.py plus one plugin file: in a copy of the package with
just those two changes, a throw-away layout trains (a tiny real training), has its plot colour and is measured by
the gradient study, with no other file touched."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, TINY

pytestmark = pytest.mark.slow  # a tiny real training, a gradient study and a plot, in a copy of the package

ROW = '    Layout("halfres", "Half-residual", PLACEMENT, TRANSLATION_AND_LM, STATISTICAL, True, False, "black"),\n'
SCHEME = '''"""Half-residual: Post-LN whose residual branch is halved, x_{i+1} = LN(x_i + F_i(x_i) / 2) (a test's layout)."""

from .schemes import LayoutScheme, register


@register
class HalfResidual(LayoutScheme):
    name = "halfres"

    def residual(self, layer, index, x, residual):
        return residual + 0.5 * x
'''


def copy_with_a_new_layout(root: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("prelnx", "prelnx_fairseq_plugin"):
        shutil.copytree(REPO / package, root / package, ignore=ignore)
    table = root / "prelnx" / "layouts.py"
    text = table.read_text()
    end = text.index(")}  # fmt: skip\n", text.index("LAYOUTS: dict[str, Layout] = {"))
    table.write_text(text[:end] + ROW + text[end:])  # the one row
    (root / "prelnx_fairseq_plugin" / "models" / "halfres.py").write_text(SCHEME)  # the one plugin file
    return root


def test_one_row_and_one_scheme_file_make_a_layout_that_trains_is_plotted_and_measured(tmp_path):
    copy = copy_with_a_new_layout(tmp_path / "copy")
    work = tmp_path / "work"
    work.mkdir()
    data = {key: (dict(value) if isinstance(value, dict) else value) for key, value in TINY.items()}
    data["model"] = {**data["model"], "layout": "halfres"}
    data["train"] = {**data["train"], "max_epoch": 1}
    (work / "tiny.yaml").write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, *args], cwd=work, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done

    # Where prelnx and the plugin are imported from, found as `import` finds them (the plugin's import is torch's and
    # fairseq's: the training below pays it), and the new row's colour, in one process.
    where = run("-c", "import importlib.util, prelnx; from prelnx.plots.gradients import colour; print(colour('halfres')); "
                "print(prelnx.__file__, importlib.util.find_spec('prelnx_fairseq_plugin').origin)")  # fmt: skip
    colour, *files = where.stdout.split()
    assert len(files) == 2 and all(Path(p).is_relative_to(copy) for p in files)  # the copy runs, not the checkout
    assert colour == "black"

    run("-m", "prelnx.cli", "train", "-c", "tiny.yaml")
    run_dir = work / "runs" / "train" / "tiny"
    assert json.loads((run_dir / "status.json").read_text())["status"] == "finished"
    assert "--layout-scheme halfres" in (run_dir / "command.txt").read_text()

    run("-m", "prelnx.cli", "grads", "-c", "tiny.yaml", "--layouts", "post,halfres", "--depths", "2", "--seeds", "1",
        "--max-tokens", "256", "--jobs", "1", "--threads", "1", "-o", "grads")  # fmt: skip
    rows = list(csv.DictReader((work / "grads" / "grads.csv").open()))
    halved = [float(r["grad_norm"]) for r in rows if r["layout"] == "halfres"]
    post = [float(r["grad_norm"]) for r in rows if r["layout"] == "post"]
    assert len(halved) == len(post) > 0 and halved != post  # its own model, with the same init and batches
    assert (work / "grads" / "figure3.png").stat().st_size > 0
