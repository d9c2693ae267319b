#!/usr/bin/env bash
# Create .venv with the CPU build of torch and prelnx (editable), unless it is already there.
# GPU users: install the torch build for your CUDA into the venv first; this script keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  # Pin the CPU wheel first: a bare torch requirement would pull a multi-GB CUDA build.
  .venv/bin/python -m pip install --quiet torch==2.13.0
fi
.venv/bin/python -m pip install --quiet -e '.[test]'
