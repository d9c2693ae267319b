"""Where the fairseq plugin (`prelnx_fairseq_plugin`, fairseq's --user-dir) is, found without importing it (that
would import fairseq, 4 s): the planner needs its folder, the records its `safe_loading.py`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.find_spec("prelnx_fairseq_plugin")
if _SPEC is None or not _SPEC.submodule_search_locations:
    raise ImportError("prelnx_fairseq_plugin is not installed; reinstall prelnx (pip install -e .)")
PLUGIN_DIR = Path(next(iter(_SPEC.submodule_search_locations))).resolve()
