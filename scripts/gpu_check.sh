#!/usr/bin/env bash
# The GPU check: one command, at most ~8 minutes on one GPU; one line per check and a JSON file (--out).
#   scripts/gpu_check.sh [--dry-run] [--updates 300] [--out gpu_check.json]
# Without a GPU it says so, checks its own plan (as --dry-run) and exits 0 when the plan holds.
# What each check does: scripts/gpu_check.py. PYTHON picks the interpreter (default: python3).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's prelnx, whatever is installed
exec "${PYTHON:-python3}" "$ROOT/scripts/gpu_check.py" "$@"
