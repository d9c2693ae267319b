"""Every mutant of scripts/mutants.py still applies: its text occurs exactly once in its file (a refactor that moves
the line must move the mutant, or the mutation test silently stops testing it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
mutants = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mutants  # its dataclasses look their module up while the file runs
_spec.loader.exec_module(mutants)


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_each_mutants_text_occurs_once_in_its_file(mutant):
    assert (ROOT / mutant.path).read_text().count(mutant.old) == 1, f"{mutant.name}: {mutant.old!r} in {mutant.path}"
