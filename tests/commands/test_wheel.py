"""prelnx outside its checkout: the wheel built from this tree, installed into a fresh venv (no editable install, no
checkout on its path; torch, fairseq and the other dependencies come from this venv's site-packages through a .pth
line, so nothing is downloaded), used from an empty folder: the user story's configs by name."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import sigint_as_in_a_terminal

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh venv holding only the wheel of the tracked files as they are now."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # the files git does not ignore: no stale build/ of the checkout, nothing of its .venv
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")  # fmt: skip
    for name in filter(None, (f.decode() for f in files)):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((REPO / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(root / "dist"), str(source)], check=True, capture_output=True, timeout=300)  # fmt: skip
    (wheel,) = (root / "dist").glob("prelnx-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "--no-index", "-q", str(wheel)], check=True, capture_output=True, timeout=300)  # fmt: skip
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    Path(site, "dependencies_of_the_test_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def _run(bin_dir: Path, folder: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bin_dir / "prelnx"), *argv], cwd=folder, capture_output=True, text=True, timeout=300,
                          env=env)  # fmt: skip


def test_the_installed_prelnx_is_the_wheels_and_lists_its_configs(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import prelnx, prelnx.config.shipped as s; "
                            "print(prelnx.__file__); print(s.shipped_root())"], cwd=tmp_path, capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    assert all(str(installed.parent) in line for line in where), where  # the package and its configs: the venv's
    listed = _run(installed, tmp_path, "configs", "list")
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:2] == ["iwslt_preln", "translation"] for line in listed.stdout.splitlines())
    assert any(line.split()[:1] == ["demo/preln_nowarmup"] for line in listed.stdout.splitlines())
    assert not list(tmp_path.iterdir())


def test_the_user_storys_dry_run_from_an_empty_folder(installed, tmp_path):
    done = _run(installed, tmp_path, "train", "--config", "iwslt_preln.yaml", "--dry-run")
    assert "layout: pre" in done.stdout and "fairseq-train data-bin/iwslt14.tokenized.de-en" in done.stdout, done.stderr
    assert f"--user-dir {installed.parent}" in done.stdout  # the installed plugin
    # no IWSLT14 here: the dry run says what the real run would, with the command that prepares it
    assert done.returncode == 2 and "prelnx data prepare iwslt14" in done.stderr, done.stderr
    assert not list(tmp_path.iterdir())


def test_the_demo_sweep_trains_its_first_updates_from_an_empty_folder(installed, tmp_path):
    """The shipped demo sweep by name, 2 updates per run; stopped once its first run has finished."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    sweep = subprocess.Popen([str(installed / "prelnx"), "sweep", "--config", "sweeps/demo", "--jobs", "1",
                              "--set", "train.max_update=2", "--set", "train.threads=1", "--out", "demo"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True, preexec_fn=sigint_as_in_a_terminal)  # fmt: skip
    lines: list[str] = []
    deadline = time.monotonic() + 300
    try:
        for line in sweep.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if " finished || sweep: 1/3 runs done" in line or time.monotonic() > deadline:
                break
    finally:
        os.killpg(sweep.pid, signal.SIGINT)
        sweep.wait(timeout=120)
    assert any("sweep: 1/3 runs done" in line for line in lines), "".join(lines[-30:])
    assert any("epoch 1 done | updates 2" in line for line in lines), "".join(lines[-30:])
    status = _run(installed, tmp_path, "status", "demo")
    # the rest stopped by the interrupt - or finished before it arrived (2 updates each: a loaded machine reads the
    # sweep's lines late); either way status counts what the run dirs hold and exits by it
    totals = re.search(r"run\(s\): .*?(\d+) finished", status.stdout)
    finished = int(totals.group(1)) if totals else 0
    # the one exit table (prelnx/exits.py): 0 all finished, 130 some interrupted or never started
    assert finished >= 1 and status.returncode == (0 if finished == 3 else 130), status.stdout + status.stderr
