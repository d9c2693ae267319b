"""What CI and scripts/setup.sh install is pinned: every dependency of pyproject.toml at one exact version in
constraints.txt (torch apart: setup.sh's TORCH_VERSION, or a GPU user's own build), and sacremoses, whose
tokenization the tests compare byte for byte, pinned in pyproject itself."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version

from tests.conftest import REPO


def _name(requirement: str) -> str:
    return re.split(r"[ ;<>=!~\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _constraints() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text().splitlines()
    return {_name(line): line.split("==", 1)[1] for line in lines if line and not line.startswith("#")}


def test_every_dependency_is_pinned_in_the_constraints_that_ci_and_setup_install_with():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # less fairseq-fixed: the source build where ve-fairseq has no wheel
    wanted = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]
              if "platform_machine != 'x86_64'" not in r}
    pinned = _constraints()
    assert wanted - {"torch"} <= set(pinned), f"not in constraints.txt: {sorted(wanted - {'torch'} - set(pinned))}"
    assert "torch" not in pinned  # setup.sh installs torch itself (the CPU build, or the user's CUDA build kept)
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "-e '.[test]' -c constraints.txt" in setup and "bash scripts/setup.sh" in (REPO / ".ci" / "run").read_text()


def test_sacremoses_is_the_version_whose_output_the_tests_compare():
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [r for r in dependencies if _name(r) == "sacremoses"]
    assert pin == f"sacremoses=={_constraints()['sacremoses']}" == f"sacremoses=={version('sacremoses')}"
